/**
 * The Cookie header the client sends, from what a user pastes (public-facts.md: the session
 * cookie, usually JSESSIONID).
 */
import { invalidInput } from './errors';
import { TOKEN_CHAR } from './values';

/** `Name=value` with a token for a name and something after the `=`. */
const COOKIE_NAME_VALUE = new RegExp(`^${TOKEN_CHAR}+=(?!=*$)`);

/**
 * `Name=value` is sent as is; a bare value becomes `JSESSIONID=value`. A leading `Cookie:`
 * (pasted from a browser's request headers) is dropped; empty gives no header.
 * @throws AssetApiError `invalid-input` for a non-string or a value with control characters.
 */
export function cookieHeaderOf(cookie: unknown): string | undefined {
  if (cookie === undefined || cookie === null) return undefined;
  if (typeof cookie !== 'string') throw invalidInput('cookie', 'must be a string: Name=value or a bare session id');
  const text = cookie.trim().replace(/^cookie\s*:\s*/i, '');
  if (text === '') return undefined;
  if (!/^[\x20-\x7e]+$/.test(text)) throw invalidInput('cookie', 'must be printable ASCII, without CR, LF or other control characters');
  return COOKIE_NAME_VALUE.test(text) ? text : `JSESSIONID=${text}`;
}
