/**
 * Charset of a form or multipart request body, decoded the way a servlet container does it.
 *
 * The real server is a Java servlet application: a container reads a body whose Content-Type
 * names no charset as ISO-8859-1 (Servlet spec; Tomcat's default), so `Überweisungen` sent as
 * UTF-8 without `charset=UTF-8` arrives as `Ãberweisungen`. The emulator does the same by default,
 * so a client that forgets the charset fails here too; `formCharset: 'utf-8'` (CLI
 * `--form-charset utf-8`) reads such bodies as UTF-8 instead, for clients that cannot declare it.
 * The query string is always UTF-8 (Tomcat's URIEncoding default).
 */

/** Charset of a body that declares none. */
export type FormCharset = 'iso-8859-1' | 'utf-8';

export const FORM_CHARSETS: readonly FormCharset[] = ['iso-8859-1', 'utf-8'];
export const DEFAULT_FORM_CHARSET: FormCharset = 'iso-8859-1';

const ENCODINGS: Record<string, BufferEncoding> = {
  'utf-8': 'utf8', utf8: 'utf8',
  'iso-8859-1': 'latin1', 'iso8859-1': 'latin1', 'iso_8859-1': 'latin1', latin1: 'latin1', 'us-ascii': 'latin1', ascii: 'latin1'
};

/**
 * The Node encoding for a body with this Content-Type: its declared charset, else `fallback`.
 * Undefined for a declared charset the emulator does not know.
 */
export function bodyEncoding(contentType: string | undefined, fallback: FormCharset): BufferEncoding | undefined {
  const match = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(contentType ?? '');
  const name = match ? match[2].toLowerCase() : fallback;
  return Object.prototype.hasOwnProperty.call(ENCODINGS, name) ? ENCODINGS[name] : undefined;
}

/** The charset named in a Content-Type, for messages. */
export function declaredCharset(contentType: string | undefined): string | undefined {
  return /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(contentType ?? '')?.[2];
}

/**
 * Pairs of an `application/x-www-form-urlencoded` body, in order. `+` is a space and `%XX` a
 * byte; the bytes of each name and value are then decoded with `encoding` (as a container does).
 */
export function parseUrlEncodedBody(body: Buffer, encoding: BufferEncoding): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  let start = 0;
  while (start <= body.length) {
    let end = body.indexOf(0x26 /* & */, start);
    if (end < 0) end = body.length;
    const piece = body.subarray(start, end);
    if (piece.length > 0) {
      const equals = piece.indexOf(0x3d /* = */);
      const name = equals < 0 ? piece : piece.subarray(0, equals);
      const value = equals < 0 ? Buffer.alloc(0) : piece.subarray(equals + 1);
      pairs.push([unescapeBytes(name).toString(encoding), unescapeBytes(value).toString(encoding)]);
    }
    start = end + 1;
  }
  return pairs;
}

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
  return -1;
}

/** `+` to space and `%XX` to its byte; a `%` without two hex digits stays as it is. */
function unescapeBytes(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === 0x2b) { out[n++] = 0x20; continue; }
    if (byte === 0x25 && i + 2 < bytes.length) {
      const high = hexValue(bytes[i + 1]);
      const low = hexValue(bytes[i + 2]);
      if (high >= 0 && low >= 0) { out[n++] = high * 16 + low; i += 2; continue; }
    }
    out[n++] = byte;
  }
  return out.subarray(0, n);
}
