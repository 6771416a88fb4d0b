/**
 * Client-side validation of what the client sends (spec 2.1, 4.1 to 4.4, 8).
 *
 * Written from the spec, independently of the emulator's checks (DESIGN.md: the
 * two ends never share validation logic). Every failure is an `invalid-input`
 * AssetApiError naming the field and the rule, thrown before anything is sent.
 * Values that may carry secrets (callback URL, header, queryParam) are never
 * echoed in a message.
 */
import type { SubscriptionFields } from './types';
import { invalidInput, type AssetOperation } from './errors';
import { SUBSCRIPTION_ID_RULE, isIntegerText, isSubscriptionId, isToken, readFlag } from './values';

export { SUBSCRIPTION_ID_RULE };

/** Callback methods the client accepts (spec 4.1 rule 3), sent upper-case. */
export const CALLBACK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Subscription fields in the order they are sent. */
export const SUBSCRIPTION_FIELD_NAMES = [
  'callback', 'method', 'successCode', 'retryCount', 'requestType', 'logicalOperand',
  'header', 'queryParam', 'watchPath', 'watchMetadata'
] as const;

const REPEATED_FIELDS = new Set(['header', 'queryParam', 'watchPath', 'watchMetadata']);

/** C0 controls and DEL: never allowed in a form value that ends up in a URL or header. */
const CONTROL = /[\x00-\x1f\x7f]/;
/** Same, but a tab is fine inside a header value. */
const CONTROL_BUT_TAB = /[\x00-\x08\x0a-\x1f\x7f]/;
const WATCH_PATH = /^(?:[*+-] )?\/[^\x00-\x1f\x7f]*$/;

/** Short, printable rendering of a rejected value for messages (only for non-secret fields). */
function show(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  const shown = JSON.stringify(text.length > 60 ? text.slice(0, 60) + '…' : text);
  return shown;
}

/** Upper case of ASCII letters only: "post" is POST, but "poſt" (long s, which toUpperCase makes S) stays unknown. */
function asciiUpper(text: string): string {
  return text.replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}

/** True for undefined, null and '' (an optional field left empty, as editors do). */
function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/**
 * Checks a subscription id (spec 2.1 and 8: 8 to 40 characters of a-z, A-Z, 0-9, hyphen).
 * @returns the id unchanged.
 * @throws AssetApiError kind `invalid-input`, field `id`.
 */
export function validateSubscriptionId(id: unknown, operation?: AssetOperation): string {
  if (typeof id !== 'string') throw invalidInput('id', `${SUBSCRIPTION_ID_RULE} (got ${id === undefined ? 'nothing' : typeof id})`, operation);
  if (!isSubscriptionId(id)) {
    throw invalidInput('id', `${SUBSCRIPTION_ID_RULE} (got ${show(id)}, ${id.length} characters)`, operation);
  }
  return id;
}

/**
 * Reads an integer given as a number or a string of digits.
 * @returns the integer as a decimal string (exact, even beyond 2^53), or throws.
 */
export function integerField(
  field: string, value: unknown, min: number, max: number | undefined, operation?: AssetOperation
): string {
  const range = max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw invalidInput(field, `must be ${range} (got ${show(value)})`, operation);
    text = String(value);
  } else if (typeof value === 'bigint') {
    text = value.toString();
  } else if (isIntegerText(value)) {
    text = value.trim();
  } else {
    throw invalidInput(field, `must be ${range} (got ${typeof value === 'string' ? show(value) : typeof value})`, operation);
  }
  text = text.replace(/^(-?)0+(?=\d)/, '$1');
  // Compare as BigInt so that 64-bit values (rrn) keep their precision.
  const big = BigInt(text);
  if (big < BigInt(min) || (max !== undefined && big > BigInt(max))) {
    throw invalidInput(field, `must be ${range} (got ${show(text)})`, operation);
  }
  return text === '-0' ? '0' : text;
}

/** Reads a boolean given as a boolean or the strings "true"/"false". */
export function booleanField(field: string, value: unknown, operation?: AssetOperation): 'true' | 'false' {
  const flag = readFlag(value);
  if (flag !== undefined) return flag ? 'true' : 'false';
  throw invalidInput(field, `must be true or false (got ${show(value)})`, operation);
}

/** A non-empty single-line string. */
export function textField(field: string, value: unknown, operation?: AssetOperation, secret = false): string {
  if (typeof value !== 'string') throw invalidInput(field, `must be a string (got ${typeof value})`, operation);
  if (value.trim() === '') throw invalidInput(field, 'must not be empty', operation);
  if (CONTROL.test(value)) {
    throw invalidInput(field, `must not contain control characters such as CR or LF${secret ? '' : ` (got ${show(value)})`}`, operation);
  }
  return value;
}

/**
 * A path on this machine: what a file system allows (a newline in a name too: Linux allows every
 * byte but / and NUL), so not checked as text sent on the wire; the name sent for it is cleaned
 * apart (sanitizeFilename).
 */
export function localPathField(field: string, value: unknown, operation?: AssetOperation): string {
  if (typeof value !== 'string') throw invalidInput(field, `must be a string (got ${typeof value})`, operation);
  if (value.trim() === '') throw invalidInput(field, 'must not be empty', operation);
  if (value.includes('\0')) throw invalidInput(field, 'must not contain a NUL character (no file system allows one)', operation);
  return value;
}

function listOf(field: string, value: unknown, operation?: AssetOperation): string[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, index) => {
    if (typeof item !== 'string') {
      throw invalidInput(field, `value ${index + 1} must be a string (got ${item === null ? 'null' : typeof item})`, operation);
    }
    if (item === '') throw invalidInput(field, `value ${index + 1} must not be empty`, operation);
    return item;
  });
}

function checkCallback(value: unknown, operation?: AssetOperation): string {
  if (isAbsent(value)) throw invalidInput('callback', 'is required: the http(s) URL the server calls on a change', operation);
  const text = textField('callback', value, operation, true);
  // The URL parser is lenient ("http:x", "http:/x", "http:///x" and backslashes all parse) and the
  // text is sent as typed: require "http(s)://", a host right after it, and no backslash.
  if (!/^https?:\/\/[^/?#]/i.test(text) || text.includes('\\')) {
    throw invalidInput('callback', 'must be an absolute http:// or https:// URL', operation);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidInput('callback', 'must be an absolute http:// or https:// URL', operation);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || /\s/.test(text)) {
    throw invalidInput('callback', 'must be an absolute http:// or https:// URL', operation);
  }
  return text;
}

function checkHeader(value: string, index: number, operation?: AssetOperation): string {
  const colon = value.indexOf(':');
  const name = colon > 0 ? value.slice(0, colon).trim() : '';
  if (!isToken(name)) {
    throw invalidInput('header', `value ${index + 1} must be "Name: value" with a valid header name (letters, digits and !#$%&'*+.^_\`|~-)`, operation);
  }
  if (CONTROL_BUT_TAB.test(value)) {
    throw invalidInput('header', `value ${index + 1} (${name}) must not contain CR, LF or other control characters`, operation);
  }
  return value;
}

function checkQueryParam(value: string, index: number, operation?: AssetOperation): string {
  if (CONTROL.test(value)) throw invalidInput('queryParam', `value ${index + 1} must not contain CR, LF or other control characters`, operation);
  const equals = value.indexOf('=');
  const name = equals < 0 ? value : value.slice(0, equals);
  if (name.trim() === '') throw invalidInput('queryParam', `value ${index + 1} must be "name=value" or "name" with a non-empty name`, operation);
  return value;
}

function checkWatchPath(value: string, operation?: AssetOperation): string {
  if (!WATCH_PATH.test(value)) {
    throw invalidInput('watchPath',
      `each value must be "* /dir", "+ /dir", "- /dir" (prefix, one space, absolute path) or an absolute path "/dir/file" (got ${show(value)})`,
      operation);
  }
  return value;
}

function checkWatchMetadata(value: string, operation?: AssetOperation): string {
  const rule = 'each value must be Key=Value, Key==Value, Key=*, Key==* or *==*';
  if (CONTROL.test(value)) throw invalidInput('watchMetadata', `${rule}, without control characters (got ${show(value)})`, operation);
  if (value === '*==*') return value;
  const equals = value.indexOf('=');
  if (equals <= 0) throw invalidInput('watchMetadata', `${rule}; the key is missing (got ${show(value)})`, operation);
  const key = value.slice(0, equals);
  let expected = value.slice(equals + 1);
  if (expected.startsWith('=')) expected = expected.slice(1);
  if (key.trim() === '') throw invalidInput('watchMetadata', `${rule}; the key is missing (got ${show(value)})`, operation);
  if (key === '*') throw invalidInput('watchMetadata', `${rule}; a * key is only allowed as *==* (got ${show(value)})`, operation);
  if (expected === '' || expected.startsWith('=')) {
    throw invalidInput('watchMetadata', `${rule}; the value after = or == is missing (got ${show(value)})`, operation);
  }
  return value;
}

/**
 * Checks the fields of a subscription registration (spec 2.1, 4.1) and returns them
 * as form fields in send order: repeated fields once per value, in the given order;
 * method and logicalOperand upper-cased; absent optional fields left out.
 * @throws AssetApiError kind `invalid-input` naming the field and the rule.
 */
export function validateSubscriptionFields(fields: SubscriptionFields, operation?: AssetOperation): Array<[string, string]> {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    throw invalidInput('fields', 'must be an object with at least a callback', operation);
  }
  const known = new Set<string>(SUBSCRIPTION_FIELD_NAMES);
  for (const name of Object.keys(fields)) {
    if (!known.has(name)) {
      throw invalidInput(name, `is not a subscription field; allowed: ${SUBSCRIPTION_FIELD_NAMES.join(', ')}`, operation);
    }
  }
  const input = fields as unknown as Record<string, unknown>;
  const form: Array<[string, string]> = [['callback', checkCallback(input.callback, operation)]];

  if (!isAbsent(input.method)) {
    const method = asciiUpper(textField('method', input.method, operation).trim());
    if (!(CALLBACK_METHODS as readonly string[]).includes(method)) {
      throw invalidInput('method', `must be one of ${CALLBACK_METHODS.join(', ')} (got ${show(input.method)})`, operation);
    }
    form.push(['method', method]);
  }
  if (!isAbsent(input.successCode)) form.push(['successCode', integerField('successCode', input.successCode, 100, 599, operation)]);
  if (!isAbsent(input.retryCount)) form.push(['retryCount', integerField('retryCount', input.retryCount, 0, undefined, operation)]);
  if (!isAbsent(input.requestType)) form.push(['requestType', textField('requestType', input.requestType, operation).trim()]);
  if (!isAbsent(input.logicalOperand)) {
    const operand = asciiUpper(textField('logicalOperand', input.logicalOperand, operation).trim());
    if (operand !== 'AND' && operand !== 'OR') {
      throw invalidInput('logicalOperand', `must be AND or OR (got ${show(input.logicalOperand)})`, operation);
    }
    form.push(['logicalOperand', operand]);
  }
  for (const name of REPEATED_FIELDS) {
    const value = input[name];
    if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    listOf(name, value, operation).forEach((item, index) => {
      switch (name) {
        case 'header': form.push([name, checkHeader(item, index, operation)]); break;
        case 'queryParam': form.push([name, checkQueryParam(item, index, operation)]); break;
        case 'watchPath': form.push([name, checkWatchPath(item, operation)]); break;
        default: form.push([name, checkWatchMetadata(item, operation)]);
      }
    });
  }
  return form;
}

/** Upload fields (spec 4.2) other than the file, checked and in send order. */
export interface UploadFieldInput {
  name?: unknown;
  destination?: unknown;
  destinationFuid?: unknown;
  collectionId?: unknown;
  wait?: unknown;
  waitInMinutes?: unknown;
  expandZip?: unknown;
}

/**
 * Checks the upload fields of spec 4.2 and returns them as form fields in send order.
 * destination or destinationFuid is required; name must be a plain file name.
 */
export function validateUploadFields(input: UploadFieldInput, operation: AssetOperation = 'upload'): Array<[string, string]> {
  const form: Array<[string, string]> = [];
  if (!isAbsent(input.name)) {
    const name = textField('name', input.name, operation);
    if (/[\\/]/.test(name) || name === '.' || name === '..') {
      throw invalidInput('name', `must be a file name without / or \\ (got ${show(name)})`, operation);
    }
    form.push(['name', name]);
  }
  if (isAbsent(input.destination) && isAbsent(input.destinationFuid)) {
    throw invalidInput('destination', 'destination (a folder path) or destinationFuid (a folder asset id) is required', operation);
  }
  if (!isAbsent(input.destination)) form.push(['destination', textField('destination', input.destination, operation)]);
  // 0 is the spec's default of destinationFuid: sent as given, the server decides what it means.
  if (!isAbsent(input.destinationFuid)) form.push(['destinationFuid', integerField('destinationFuid', input.destinationFuid, 0, undefined, operation)]);
  if (!isAbsent(input.collectionId)) form.push(['collectionId', integerField('collectionId', input.collectionId, 0, undefined, operation)]);
  if (!isAbsent(input.wait)) form.push(['wait', booleanField('wait', input.wait, operation)]);
  if (!isAbsent(input.waitInMinutes)) {
    const minutes = typeof input.waitInMinutes === 'string' ? Number(input.waitInMinutes.trim()) : input.waitInMinutes;
    // The spec's type is number: fractions of a minute are allowed.
    if (typeof minutes !== 'number' || !Number.isFinite(minutes) || minutes < 0) {
      throw invalidInput('waitInMinutes', `must be a number of minutes, 0 or more (got ${show(input.waitInMinutes)})`, operation);
    }
    form.push(['waitInMinutes', String(minutes)]);
  }
  if (!isAbsent(input.expandZip)) form.push(['expandZip', booleanField('expandZip', input.expandZip, operation)]);
  return form;
}

/** Asset id (fuid): a non-negative integer, as a string. */
export function validateFuid(value: unknown, operation?: AssetOperation): string {
  if (isAbsent(value)) throw invalidInput('fuid', 'is required: the asset id (an integer)', operation);
  return integerField('fuid', value, 0, undefined, operation);
}

/** Revision (rrn): an integer >= -1 (-1 = latest), kept as a string so 64-bit values stay exact. Default -1. */
export function validateRrn(value: unknown, operation?: AssetOperation): string {
  if (isAbsent(value)) return '-1';
  return integerField('rrn', value, -1, undefined, operation);
}
