/**
 * {@link handleInputAndClose}: wires a node's input and close: run the work, then `send` + `done()`,
 * or red status + `done(err)` so Catch nodes receive the original msg.
 */
import { AssetApiError } from '../../api/errors';
import type { Node, NodeAPI, NodeMessage, NodeSend, NodeDone } from './node-red';
import { RequestTracker, inFlightLimit, type ActiveRequest } from './request-tracker';

// ---------------------------------------------------------------- the input handler


/** True for an error of kind `aborted` (a request stopped by its AbortSignal). */
function isAbort(err: unknown): boolean {
  return err instanceof AssetApiError && err.kind === 'aborted';
}

/**
 * The body of an input handler: receives the msg and the tracked request, does the
 * work, sets output properties on the msg, and returns the green status text (or
 * nothing to clear the status). Throw to fail.
 */
export type InputWork = (msg: NodeMessage, request: ActiveRequest) => Promise<string | undefined>;

/** Options of {@link handleInputAndClose}. */
export interface InputOptions {
  /** The editor's "Parallel requests" (`config.maxInFlight`); see {@link inFlightLimit}. */
  maxInFlight?: unknown;
  /** Runs after the requests are settled on close (e.g. to release resources). */
  onClose?: () => void;
}

/**
 * Registers `node.on('input')` and `node.on('close')` around `work`:
 * - at most `maxInFlight` messages are worked on at once, the others wait in arrival order;
 * - success: `msg.assetError` of an earlier failure removed, `send(msg)` then `done()`;
 * - failure: red status, `msg.assetError` = the error's plain fields (kind, status,
 *   operation, field, serverMessage, code: Catch nodes only copy message and code into
 *   msg.error), then `done(err)` so Catch nodes receive the msg;
 * - close: every queued message ends in `done(err)` (kind `aborted`: it was never sent and
 *   the flow may want it again); the running ones are aborted, and those that end with that
 *   abort (kind `aborted`) end in `done()` without an error (a redeploy is not a failure of the
 *   message; one warning counts them), any other failure still in `done(err)`; close callback
 *   within 4 s.
 */
export function handleInputAndClose(RED: NodeAPI, node: Node, work: InputWork, options: InputOptions = {}): RequestTracker {
  const tracker = new RequestTracker(RED, node, inFlightLimit(RED, node, options.maxInFlight));

  function fail(msg: NodeMessage, done: NodeDone, err: unknown): void {
    if (err instanceof AssetApiError) msg.assetError = err.toJSON();
    done(err instanceof Error ? err : new Error(String(err)));
  }

  node.on('input', (msg: NodeMessage, send: NodeSend, done: NodeDone) => {
    tracker.submit({
      drop: (err) => fail(msg, done, err),
      start: (request) => {
        let task: Promise<string | undefined>;
        try { task = work(msg, request); } catch (err) { task = Promise.reject(err); }
        task.then(text => {
          tracker.end(request, { ok: true, text });
          delete msg.assetError;
          send(msg);
          done();
        }).catch((err: unknown) => {
          const closing = tracker.closing;
          tracker.end(request, { ok: false, error: err });
          // An abort by the close is the redeploy's doing, not the message's fault (close() has
          // warned once). Any other failure, even one that settles during the close (an error
          // answer already being read, a login that failed), is the message's and reaches done(err).
          if (closing && isAbort(err)) { done(); return; }
          fail(msg, done, err);
        });
      }
    });
  });
  node.on('close', (_removed: boolean, closeDone: () => void) => {
    tracker.close().then(() => {
      try { options.onClose?.(); } finally { closeDone(); }
    }, () => closeDone());
  });
  return tracker;
}
