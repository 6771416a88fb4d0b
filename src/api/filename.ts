/**
 * File name of a download, from the Content-Disposition header (RFC 6266 / RFC 8187),
 * made safe to use as a local file name.
 */
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
  while (Buffer.byteLength(safe, 'utf8') > 255) safe = Array.from(safe).slice(0, -1).join('');
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
