/**
 * What an {@link AssetClient} is built from: its options, their defaults, and the rules of the
 * base URL and whole-number options. client.ts re-exports all of it.
 */
import type { Agent as HttpAgent } from 'http';
import type { Agent as HttpsAgent } from 'https';
import type { CallOptions } from './calls';
import { invalidInput } from './errors';
import type { ProxyEnvOptions, ProxySetting } from './proxy';
import type { LoginOptions } from './session';
import type { SharedSessionOption } from './shared-session';
import type { ExportType } from './types';

/** Options of an {@link AssetClient}. */
export interface AssetClientOptions {
  /**
   * Server base URL, e.g. `http://127.0.0.1:8873`; may carry a path prefix; trailing slash optional.
   * A base URL ending in the API's context path `/review` is used as is: the calls go to
   * `<base>/api/...`, never `/review/review/...`.
   */
  baseUrl: string;
  /**
   * Session cookie: `Name=value` (sent as is), or a bare value sent as `JSESSIONID=value`.
   * A leading `Cookie:` (pasted from a browser's request headers) is dropped.
   * Empty: no Cookie header is sent (the server then answers 401, an `auth` error).
   */
  cookie: string;
  /**
   * Inactivity timeout in ms (0 = none). Default 30000. A call fails with kind `timeout`
   * when nothing is sent or received for this long; a transfer that keeps moving never
   * times out. For uploads with `wait`, waitInMinutes is added once the file is sent.
   */
  timeout?: number;
  /** Extra CA certificate(s), PEM, trusted on top of Node's built-in CAs. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Client certificate and key (PEM), for servers that ask for one. */
  cert?: string | Buffer;
  key?: string | Buffer;
  passphrase?: string;
  /** Reject servers whose certificate does not verify. Default true. */
  rejectUnauthorized?: boolean;
  /** Optional agent, e.g. a keep-alive agent. When given, the TLS options above and maxSockets are not used. */
  agent?: HttpAgent | HttpsAgent;
  /** Most sockets open to the server at once (per protocol); more calls wait for a free one. Default 32. */
  maxSockets?: number;
  /**
   * Automatic login (README "Sessions"): on a 401 the client logs in once for all waiting
   * requests, then repeats each request once. Without it a 401 is an `auth` error.
   */
  login?: LoginOptions;
  /**
   * With automatic login: the session shared with other copies through a store (one login at a
   * time across copies, the others use its cookie; shared-session.ts). Without it nothing is shared.
   */
  sharedSession?: SharedSessionOption;
  /**
   * Largest file {@link AssetClient.downloadToBuffer} takes into memory, in bytes (default
   * 100 MB = 10^8). Checked against Content-Length before the body is read, and while reading.
   * Big assets go to a file (downloadToFile) or a stream, which have no limit.
   */
  maxBufferBytes?: number;
  /** Largest JSON answer (subscribe, upload, export) read, in bytes. Default 8 MiB. */
  maxAnswerBytes?: number;
  /**
   * Where downloadToFile and uploads from a path of 4 MiB or more move their bytes: `main` (the
   * caller's thread, default) or `worker` (one worker thread per client, started at the first such
   * call). A worker keeps a process with a large heap, such as Node-RED, from paying for the
   * garbage collection of the transfer's buffers (docs/performance.md). Progress, abort, timeouts,
   * errors and automatic login behave the same. Not used with `agent`.
   */
  transferThread?: 'main' | 'worker';
  /**
   * HTTP proxy, decided per URL (the automatic login's too): `env` (default) reads `http_proxy`,
   * `https_proxy` and `no_proxy` (either case) as Node-RED's http request node does, when the client
   * is made; `none` goes direct; or `{ url, username, password, noProxy }` (a core `http proxy`
   * config node). HTTPS goes through a CONNECT tunnel. Not used with `agent`. A 407 is an error of
   * kind `proxy`.
   */
  proxy?: ProxySetting;
  /** For `proxy: 'env'`: Node-RED's `proxyOptions` setting (favourUpperCase, lowerCaseOnly, excludeNpm). */
  proxyOptions?: ProxyEnvOptions;
}

/** Options of {@link AssetClient.exportMetadata} (spec 4.4). */
export interface ExportOptions extends CallOptions {
  /** Asset id. */
  fuid: number | string;
  /** Default -1 (latest). */
  rrn?: number | string;
  /** Export type, e.g. `json` or `xml`. Sent only when given (the server's default applies otherwise). */
  type?: ExportType;
}

/** Result of a metadata export. */
export interface ExportOutcome {
  /** Parsed JSON when the server sent JSON (64-bit integers kept as strings), else the text. */
  data: unknown;
  /** Content-Type of the answer. */
  contentType?: string;
}

/** Default timeout (ms) of a client. */
export const DEFAULT_TIMEOUT_MS = 30000;
/** Default of {@link AssetClientOptions.maxBufferBytes}: 100 MB. */
export const DEFAULT_MAX_BUFFER_BYTES = 100 * 1000 * 1000;
/** Default of {@link AssetClientOptions.maxAnswerBytes}: 8 MiB, far above any JSON answer of the API. */
export const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;
/**
 * Sockets per agent when the caller sets none: as many as one node's highest "Parallel requests",
 * so that a node never waits for a socket (a call waiting for one counts towards its timeout).
 */
export const DEFAULT_MAX_SOCKETS = 32;

/**
 * The base URL rule (one place: the node and the editor's copy in resources/dam-editor.js are
 * checked against it by test/house/rules.test.js): an absolute http(s) URL with a host, no
 * query or fragment, no user:password@; a trailing /review (the API's context path) and slashes are dropped.
 * `field` names the setting in the error (the asset-server's public URL keeps the same rule).
 */
export function parseBaseUrl(value: unknown, field = 'baseUrl'): { base: string; origin: string } {
  const rule = 'must be an absolute http:// or https:// URL such as http://127.0.0.1:8873';
  if (typeof value !== 'string' || value.trim() === '') throw invalidInput(field, rule);
  // The URL parser would send a space as %20 in every path: a typo, not a folder name.
  if (/\s/.test(value.trim())) throw invalidInput(field, 'must not contain spaces (a space in a folder name is written %20)');
  const port = /^[a-z]+:\/\/[^/?#]*:(\d+)(?:[/?#]|$)/i.exec(value.trim());
  if (port && (Number(port[1]) < 1 || Number(port[1]) > 65535)) throw invalidInput(field, `port must be from 1 to 65535, got ${port[1]}`);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw invalidInput(field, rule);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') throw invalidInput(field, rule);
  // Also a bare ? or # (the URL parser drops an empty query or fragment, the text still has it).
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(value)) throw invalidInput(field, 'must not have a query (?) or fragment (#)');
  // A password there would be stored and shown in plain text (flows.json, GET /flows, the sidebar).
  if (url.username !== '' || url.password !== '') {
    throw invalidInput(field, 'must not hold a user name or password (user:password@): a base URL is stored and shown in plain text; ' +
      'use the Cookie or Automatic login, whose password is kept as a credential');
  }
  // The API paths start with the context path /review: a base URL pasted with it is used as is.
  const base = value.trim().replace(/\/+$/, '').replace(/\/review$/, '');
  return { base, origin: url.origin };
}

/** Positive integer option, or `fallback` when not given. */
export function integerOption(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw invalidInput(field, 'must be a whole number >= 1');
  return value;
}
