/**
 * Why an automatic login failed (session.ts turns it into a LoginError for the caller).
 */
import { AssetApiError } from './errors';

/**
 * Why a login failed: the step, and what happened in our own words, free of secrets;
 * `credentialsRefused` when the server refused the user name or password; `said`: the login
 * server's own message (redacted), kept apart so that a caller can leave it out.
 */
export class LoginFailure {
  constructor(readonly step: string, readonly reason: string, readonly credentialsRefused = false, readonly said?: string,
    readonly preLoginSessionLost = false) {}
}

/**
 * Why a login step's request got no answer: one of our own settings errors (a proxy URL that is
 * not valid: invalid input, as it is, not a login failure with its backoff), the login's deadline,
 * or a host that was not reached.
 */
export function requestFailure(step: string, where: string, err: unknown, timedOutMs: number | undefined): AssetApiError | LoginFailure {
  const own = err instanceof AssetApiError ? err : (err as { cause?: unknown } | null)?.cause;
  if (own instanceof AssetApiError) return own;
  if (timedOutMs !== undefined) return new LoginFailure(step, `${where} did not answer completely within ${timedOutMs} ms (timed out)`);
  const code = (err as { code?: unknown } | null)?.code;
  return new LoginFailure(step, `${where} could not be reached${typeof code === 'string' ? ` (${code})` : ''}`);
}
