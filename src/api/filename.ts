/**
 * File name of a download, from the Content-Disposition header (RFC 6266 / RFC 8187),
 * made safe to use as a local file name.
 */
import * as path from 'path';
import { invalidInput, type AssetOperation } from './errors';
import { TOKEN_CHAR } from './values';

const PARAM = new RegExp(`;\\s*(${TOKEN_CHAR}+)\\s*=\\s*("(?:[^"\\\\]|\\\\.)*"|[^;]*)`, 'g');

function unquote(value: string): string {
  const trimmed = value.trim();
  if (trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"')) {
    return trimmed.slice(1, -1).replace(/\\(.)/g, '$1');
  }
  return trimmed;
}

/** Decodes an RFC 8187 ext-value such as `UTF-8''na%C3%AFve.txt`; undefined if malformed. */
function decodeExtValue(value: string): string | undefined {
  const match = /^([A-Za-z0-9!#$%&+^_`{}~-]+)'[^']*'(.*)$/.exec(unquote(value));
  if (!match) return undefined;
  const charset = match[1].toLowerCase();
  const encoded = match[2];
  try {
    if (charset === 'utf-8') return decodeURIComponent(encoded);
    if (charset === 'iso-8859-1' || charset === 'latin1') {
      return encoded.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** The usual limit of one file name (ext4, XFS, Btrfs: 255 bytes). */
export const NAME_MAX_BYTES = 255;

/** `text` without its last characters (whole ones) until it is at most `bytes` bytes of UTF-8. */
function cutToBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= bytes) return text;
  let used = 0;
  let end = 0;
  for (const char of text) { // whole code points: a pair of surrogates stays whole
    used += Buffer.byteLength(char, 'utf8');
    if (used > bytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * `name` with `suffix` before its extension (`report (2).pdf`), the part before the extension
 * shortened so that the result and `reserve` more bytes (a name made from it, such as
 * `<name>.error.json`) fit in NAME_MAX_BYTES: a copy of a long name must still be a valid name.
 */
export function fittedName(name: string, suffix = '', reserve = 0): string {
  let ext = path.extname(name);
  if (ext === name || Buffer.byteLength(ext, 'utf8') > 32) ext = ''; // `.bashrc`, or a dot far from the end: no extension
  const stem = ext ? name.slice(0, -ext.length) : name;
  const room = NAME_MAX_BYTES - reserve - Buffer.byteLength(suffix + ext, 'utf8');
  return cutToBytes(stem, Math.max(1, room)) + suffix + ext;
}

/** Linux's limit of a whole path (PATH_MAX, with its terminating zero). */
const PATH_MAX_BYTES = 4095;

/**
 * A path Linux refuses for its length (a name over NAME_MAX_BYTES, or the whole over
 * PATH_MAX_BYTES): invalid-input naming `path`, with only the start of the long part.
 */
export function checkPathLength(file: string, operation: AssetOperation): void {
  if (process.platform !== 'linux') return; // Windows and macOS count names in UTF-16 units, and their paths differ: left to them
  const start = (text: string) => JSON.stringify(Array.from(text).slice(0, 40).join('') + '…');
  const long = file.split(/[\\/]/).find((part) => Buffer.byteLength(part, 'utf8') > NAME_MAX_BYTES);
  if (long !== undefined) {
    throw invalidInput('path', `a name in the path is longer than ${NAME_MAX_BYTES} bytes, the file system's limit: ${start(long)}`, operation);
  }
  if (Buffer.byteLength(file, 'utf8') > PATH_MAX_BYTES) {
    throw invalidInput('path', `longer than ${PATH_MAX_BYTES} bytes, the file system's limit: ${start(file)}`, operation);
  }
}

/**
 * Makes a server-given name safe as a local file name: base name only (no `/` or `\`),
 * no `..`, no control or bidirectional-override characters, no leading dots, no characters Windows refuses,
 * at most 255 bytes. Returns undefined when nothing usable remains.
 */
export function sanitizeFilename(name: string): string | undefined {
  // C0 and C1 controls, and the bidirectional marks, embeddings, overrides and isolates (a name
  // shown as "invoice_fdp.exe" may be "invoice_\u202Eexe.pdf"): never part of a name.
  let safe = name.replace(/[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '');
  safe = safe.split(/[\\/]/).pop() ?? '';
  safe = safe.replace(/\.{2,}/g, '.').replace(/[<>:"|?*]/g, '_');
  safe = safe.replace(/^[\s.]+/, '').replace(/[\s.]+$/, '');
  safe = fittedName(safe); // its extension kept
  return safe === '' ? undefined : safe;
}

/** The sanitized file name of a Content-Disposition header; `filename*` wins over `filename`. */
export function filenameFromContentDisposition(header: string | undefined): string | undefined {
  if (!header) return undefined;
  let plain: string | undefined;
  let extended: string | undefined;
  // A leading ';' lets a header without a disposition type parse too.
  for (const match of (';' + header).matchAll(PARAM)) {
    const key = match[1].toLowerCase();
    if (key === 'filename*') extended = decodeExtValue(match[2]) ?? extended;
    else if (key === 'filename') plain = unquote(match[2]);
  }
  const chosen = extended ?? plain;
  return chosen === undefined ? undefined : sanitizeFilename(chosen);
}
