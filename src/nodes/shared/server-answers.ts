/**
 * DAM calls answered by a server, per asset-server configuration node: each DAM node's success,
 * and a failure that is the server's own answer (retry.ts isServerAnswer). asset-event-in's hold
 * (server-hold.ts) ends on an acknowledgement only when the server of the DAM node that failed
 * answered one since: an entry the flow acknowledges without asking it (a delete routed straight
 * to acknowledge), or calls to another server, prove nothing.
 */
import { AssetApiError } from '../../api/errors';
import { isServerAnswer } from './retry';

/** Answers per asset-server node id, and of all together. */
const answers = new Map<string, number>();
const ANY = '';
/** The asset-server of each running DAM node that counts its calls, by node id. */
const serverOfNode = new Map<string, { serverId: string }>();

/** `nodeId`'s calls go to `serverId`; the function returned forgets it (on close; not a later instance's). */
export function callsOf(nodeId: string, serverId: string): () => void {
  const entry = { serverId };
  serverOfNode.set(nodeId, entry);
  return () => { if (serverOfNode.get(nodeId) === entry) serverOfNode.delete(nodeId); };
}

/** The asset-server a running DAM node calls, if it counts its calls. */
export function serverOf(nodeId: unknown): string | undefined {
  return typeof nodeId === 'string' ? serverOfNode.get(nodeId)?.serverId : undefined;
}

/** Some running DAM node calls `serverId`. */
export function isCalled(serverId: string): boolean {
  for (const entry of serverOfNode.values()) if (entry.serverId === serverId) return true;
  return false;
}

/** A call to `serverId` ended: without `err` it succeeded. */
export function noteOutcome(serverId: string | undefined, err?: unknown): void {
  if (!serverId || !(err === undefined || (err instanceof AssetApiError && isServerAnswer(err)))) return;
  answers.set(serverId, (answers.get(serverId) ?? 0) + 1);
  answers.set(ANY, (answers.get(ANY) ?? 0) + 1);
}

/** Answers of `serverId` so far; undefined: of any server (the failed node's is not known). */
export function serverAnswersSoFar(serverId: string | undefined): number {
  return answers.get(serverId ?? ANY) ?? 0;
}
