/**
 * DAM calls answered by a server in this Node-RED: each DAM node's success, and a failure that is
 * the server's own answer (retry.ts isServerAnswer). asset-event-in's hold (server-hold.ts) ends
 * on an acknowledgement only when one came since the last failure that said the server is away:
 * an entry the flow acknowledges without asking the server (a delete routed straight to
 * acknowledge) proves nothing.
 */
import { AssetApiError } from '../../api/errors';
import { isServerAnswer } from './retry';

let answers = 0;

/** A DAM call ended: without `err` it succeeded. */
export function noteOutcome(err?: unknown): void {
  if (err === undefined || (err instanceof AssetApiError && isServerAnswer(err))) answers++;
}

export function serverAnswersSoFar(): number {
  return answers;
}
