/**
 * {@link handleInputAndClose}: wires a node's input and close: run the work, then `send` + `done()`,
 * or red status + `done(err)` so Catch nodes receive the original msg.
 */
import { AssetApiError } from '../../api/errors';
import type { Node, NodeAPI, NodeMessage, NodeSend, NodeDone } from './node-red';
import { RequestTracker, inFlightLimit, type ActiveRequest } from './request-tracker';
import { labelled } from './fields';
import { statusText } from './texts';
import { callsOf, noteOutcome } from './server-answers';

// ---------------------------------------------------------------- the input handler


/** True for an error of kind `aborted` (a request stopped by its AbortSignal). */
function isAbort(err: unknown): boolean {
  return err instanceof AssetApiError && err.kind === 'aborted';
}

/**
 * Ends a msg with a failure: `msg.assetError` = the error's plain fields (for a DAM error), then
 * `done` with the message as a string, as core nodes report errors: the debug sidebar shows an
 * Error object cut at about 80 characters (the advice at the end of ours would be lost) and
 * prefixed with its class name. Node-RED hands whatever done() gets to node.error(err, msg),
 * which takes a string; its typings only name Error.
 */
export function endWithError(msg: NodeMessage, done: NodeDone, err: unknown): void {
  if (err instanceof AssetApiError) msg.assetError = err.toJSON();
  (done as (err?: Error | string) => void)(err instanceof Error ? err.message : String(err));
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
  /** The asset-server node the work calls: its answers are counted (server-answers.ts). */
  server?: string;
  /**
   * Names a message in the warnings and errors about work lost on close (`msg.filename "/in/a.txt"`,
   * `msg.fuid 1042`; see {@link nameOf}); undefined falls back to its `_msgid`.
   */
  describe?: (msg: NodeMessage) => string | undefined;
  /** Editor labels of the client's options this node fills (`{ path: 'File' }`): errors name them so ({@link labelled}). */
  labels?: Record<string, string>;
}

/**
 * Registers `node.on('input')` and `node.on('close')` around `work`:
 * - at most `maxInFlight` messages are worked on at once, the others wait in arrival order;
 * - success: `msg.assetError` of an earlier failure removed, `send(msg)` then `done()`; it and a
 *   failure that is the server's own answer are counted (server-answers.ts);
 * - failure: red status, `msg.assetError` = the error's plain fields (kind, status,
 *   operation, field, serverMessage, code: Catch nodes only copy message and code into
 *   msg.error), then `done(err)` so Catch nodes receive the msg;
 * - close: every queued message ends in `done(err)` (kind `aborted`: it was never sent and
 *   the flow may want it again); the running ones are aborted and end in `done(err)` too (kind
 *   `aborted`; any other failure with its own error). One warning per kind names the messages
 *   (`options.describe`), so the loss shows in the debug sidebar even where no Catch node can
 *   take it: Node-RED delivers done(err) during a close only to Catch nodes that still run (see
 *   docs/architecture.md, "Work lost on close"). Close callback within 4 s.
 */
export function handleInputAndClose(RED: NodeAPI, node: Node, work: InputWork, options: InputOptions = {}): RequestTracker {
  const tracker = new RequestTracker(RED, node, inFlightLimit(RED, node, options.maxInFlight));
  /** Messages taken in and not finished, queued or running: named in the close's warnings. */
  const running = new Set<NodeMessage>();
  const queued = new Set<NodeMessage>();
  const named = (msg: NodeMessage) => options.describe?.(msg) ?? `msg._msgid ${String(msg._msgid)}`;
  /** The error of a message the close took away, naming it. */
  const lostError = (msg: NodeMessage, err: AssetApiError) => new AssetApiError('aborted', `${named(msg)}: ${err.message}`, { code: err.code });

  node.on('input', (msg: NodeMessage, send: NodeSend, done: NodeDone) => {
    queued.add(msg);
    tracker.submit({
      drop: (err) => { queued.delete(msg); endWithError(msg, done, lostError(msg, err)); },
      start: (request) => {
        queued.delete(msg);
        running.add(msg);
        let task: Promise<string | undefined>;
        try { task = work(msg, request); } catch (err) { task = Promise.reject(err); }
        task.then(text => {
          running.delete(msg);
          tracker.end(request, { ok: true, text });
          noteOutcome(options.server);
          delete msg.assetError;
          send(msg);
          done();
        }).catch((err: unknown) => {
          labelled(err, options.labels); // before the status shows it
          running.delete(msg);
          const closing = tracker.closing;
          tracker.end(request, { ok: false, error: err });
          noteOutcome(options.server, err);
          // An abort by the close: done(err) naming the message, so that a Catch node that still
          // runs can send it again (close() has warned, naming it). Any other failure, even one
          // that settles during the close, is the message's own error.
          if (closing && isAbort(err)) {
            endWithError(msg, done, lostError(msg, new AssetApiError('aborted', statusText(RED, 'abortedError'))));
            return;
          }
          endWithError(msg, done, err);
        });
      }
    });
  });
  const forgetServer = options.server ? callsOf(node.id, options.server) : undefined;
  node.on('close', (_removed: boolean, closeDone: () => void) => {
    forgetServer?.();
    tracker.close(undefined, { running: [...running].map(named), queued: [...queued].map(named) }).then(() => {
      try { options.onClose?.(); } finally { closeDone(); }
    }, () => closeDone());
  });
  return tracker;
}
