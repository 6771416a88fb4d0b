/**
 * How the web API writes values, each rule once: subscription ids, RFC 9110 tokens
 * (header and cookie names), integers written as text, JSON objects and true/false flags.
 * Used by the client's checks (validate.ts), the answer and callback readers and the nodes.
 */

/**
 * A subscription id (spec 2.1 and 8). The editor keeps a browser copy in
 * resources/dam-editor.js; test/api/editor-rules.test.js fails when the two differ.
 */
export const SUBSCRIPTION_ID = /^[A-Za-z0-9-]{8,40}$/;
/** Rule text of a subscription id, for messages. */
export const SUBSCRIPTION_ID_RULE = 'must be 8 to 40 characters of a-z, A-Z, 0-9 and hyphen';
/** One character of an RFC 9110 token: header names, cookie names, parameter names. */
export const TOKEN_CHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
/** A whole RFC 9110 token, such as an HTTP header name (browser copy: DamEditor.HEADER_NAME). */
const TOKEN = new RegExp(`^${TOKEN_CHAR}+$`);
/** An integer written out: optional minus and digits, spaces around allowed. */
const INTEGER_TEXT = /^\s*-?\d+\s*$/;

/** True for a subscription id (spec 2.1 and 8: 8 to 40 characters of a-z, A-Z, 0-9, hyphen). */
export function isSubscriptionId(value: unknown): boolean {
  return typeof value === 'string' && SUBSCRIPTION_ID.test(value);
}

/** True for an RFC 9110 token, such as an HTTP header or cookie name. */
export function isToken(value: string): boolean {
  return TOKEN.test(value);
}

/** True for an integer written as text: optional minus and digits, spaces around allowed. */
export function isIntegerText(value: unknown): value is string {
  return typeof value === 'string' && INTEGER_TEXT.test(value);
}

/**
 * An integer text as a number when it is a safe integer, else as its trimmed text, so a
 * 64-bit rrn is never rounded (public-facts.md: never do arithmetic on rrn).
 */
export function exactInteger(text: string): number | string {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return Number.isSafeInteger(n) ? n : trimmed;
}

/** A JSON object: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A flag such as `success`, sent as a boolean or as "true"/"false" (any case, spaces around);
 * undefined when absent or anything else.
 */
export function readFlag(value: unknown): boolean | undefined {
  if (value === true || value === false) return value;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'true') return true;
    if (text === 'false') return false;
  }
  return undefined;
}
