/** What went wrong, so that a flow can branch on it (msg.error.kind in a Catch node). */
export type AssetErrorKind =
  | 'auth'          // HTTP 401: cookie missing, wrong or expired
  | 'permission'    // success:false saying permission is denied
  | 'rejected'      // any other success:false answer
  | 'http'          // another unexpected HTTP status
  | 'network'       // connection refused, reset, DNS, TLS
  | 'timeout'       // no answer within the timeout
  | 'invalid-input' // refused before anything was sent
  | 'too-large'     // a file or answer larger than the limit set for it (read no further)
  | 'proxy'         // the HTTP proxy refused its credentials (HTTP 407)
  | 'aborted';      // the caller aborted (e.g. node closed)

/** Operation names, as used in error messages. */
export type AssetOperation =
  | 'registerSubscription' | 'getSubscription' | 'deleteSubscription'
  | 'upload' | 'download' | 'exportMetadata' | 'login';

/**
 * The one error type of the client. Holds no request config, headers or cookie:
 * only the fields below, so it is safe to log, put on a msg or serialise.
 */
export class AssetApiError extends Error {
  /** What went wrong; see {@link AssetErrorKind}. */
  readonly kind: AssetErrorKind;
  /** The client call that failed. */
  readonly operation?: AssetOperation;
  /** HTTP status when a response was received. */
  readonly status?: number;
  /** The server's own message (`error`, `errorInfo` or `errorCode`). */
  readonly serverMessage?: string;
  /** For invalid-input: the field that broke a rule. */
  readonly field?: string;
  /** Low-level code such as ECONNREFUSED, when there is one. */
  readonly code?: string;
  /** A busy answer's Retry-After, in ms, when the server sent one. */
  readonly retryAfterMs?: number;
  /** An upload that failed after its whole file had gone out: the server may have it all the same. */
  readonly bodySent?: boolean;
  /** A download that broke off after the server's answer had begun (status and headers came): the server was there. */
  readonly answerBegun?: boolean;

  constructor(kind: AssetErrorKind, message: string, details: {
    operation?: AssetOperation; status?: number; serverMessage?: string; field?: string; code?: string; retryAfterMs?: number; bodySent?: boolean; answerBegun?: boolean;
  } = {}) {
    super(message);
    this.name = 'AssetApiError';
    this.kind = kind;
    if (details.operation !== undefined) this.operation = details.operation;
    if (details.status !== undefined) this.status = details.status;
    if (details.serverMessage !== undefined) this.serverMessage = details.serverMessage;
    if (details.field !== undefined) this.field = details.field;
    if (details.code !== undefined) this.code = details.code;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.bodySent !== undefined) this.bodySent = details.bodySent;
    if (details.answerBegun !== undefined) this.answerBegun = details.answerBegun;
  }

  /** Plain object for msg.error and JSON. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name, message: this.message, kind: this.kind, operation: this.operation,
      status: this.status, serverMessage: this.serverMessage, field: this.field, code: this.code,
      retryAfterMs: this.retryAfterMs, bodySent: this.bodySent, answerBegun: this.answerBegun
    };
  }
}

/** Shorthand for a validation failure naming the field and the rule. */
export function invalidInput(field: string, rule: string, operation?: AssetOperation): AssetApiError {
  return new AssetApiError('invalid-input', `${field}: ${rule}`, { field, operation });
}

/**
 * `text` with every occurrence of each secret replaced by ***, so that no secret reaches a message:
 * the secret as is, and as a server may echo it: URL-encoded (either hex case), form-encoded
 * (`+` for a space) and base64 (standard or URL-safe, alone or inside a longer base64 text such
 * as a Basic `user:password`).
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  const forms: string[] = [];
  for (const secret of secrets) if (secret) forms.push(...encodedForms(secret));
  forms.sort((a, b) => b.length - a.length); // a longer form first, so that no part of it is left
  let clean = text;
  for (const form of forms) clean = clean.split(form).join('***');
  return clean;
}

/** Shortest encoded piece worth redacting: shorter ones would mask ordinary words. */
const MIN_FORM = 4;
const formCache = new Map<string, string[]>();

/** The secret and its encoded forms (see {@link redactSecrets}); cached for the last few hundred secrets. */
function encodedForms(secret: string): string[] {
  const cached = formCache.get(secret);
  if (cached) return cached;
  const forms = new Set<string>([secret]);
  const url = encodeURIComponent(secret);
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  for (const encoded of [url, form, url.replace(/%20/g, '+')]) {
    forms.add(encoded);
    forms.add(encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()));
  }
  const bytes = Buffer.from(secret, 'utf8');
  forms.add(bytes.toString('base64'));
  forms.add(bytes.toString('base64url'));
  // Inside a longer base64 text the secret starts at any of three byte offsets: the characters
  // made of the secret's bits alone are the same whatever comes before or after.
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
    if (core.length >= MIN_FORM) {
      forms.add(core);
      forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  const list = [...forms].filter((f) => f.length >= Math.min(MIN_FORM, secret.length));
  if (formCache.size >= 256) formCache.delete(formCache.keys().next().value as string);
  formCache.set(secret, list);
  return list;
}
