/**
 * What each asset-event-in node registered on a server, remembered across redeploys and
 * restarts, so that a node that stops owning a subscription (its id changed, "manage"
 * unchecked, the node removed, also while Node-RED was stopped) deletes the one it made.
 *
 * Kept in `dam-assets-subscriptions.json` in Node-RED's user directory (settings.userDir),
 * written whole (temporary file, then rename) on each change: node id -> { server config
 * node id, base URL, subscription id }, and the subscriptions whose deletion failed, tried
 * again on each start. It holds no secret. Without a userDir (an embedding that sets none,
 * the test helper) it is kept in memory only: it covers redeploys, not a restart, and there is
 * no sweep at start (memory that outlived a stop there would delete other runs' subscriptions).
 */
import * as fs from 'fs';
import * as path from 'path';
import type { AssetClient } from '../../api/client';
import { AssetApiError } from '../../api/errors';
import { noCookieError, type AssetServerConfigNode } from '../asset-server';
import type { NodeAPI } from '../shared/node-red';

export const REGISTRY_FILE = 'dam-assets-subscriptions.json';

/** One subscription a node registered. */
export interface RegisteredSubscription {
  /** Id of the asset-server config node whose client registered it. */
  server: string;
  /** That config node's base URL at the time (a changed URL is another server). */
  baseUrl: string;
  /** The subscription id on the server. */
  id: string;
}

interface RegistryData {
  nodes: Record<string, RegisteredSubscription>;
  /** Deletions that failed (server down): tried again on the next start. */
  orphans: RegisteredSubscription[];
}

export function sameSubscription(a: RegisteredSubscription, b: RegisteredSubscription): boolean {
  return a.server === b.server && a.baseUrl === b.baseUrl && a.id === b.id;
}

export class SubscriptionRegistry {
  private data: RegistryData;

  constructor(private readonly file: string | undefined, private readonly warn: (message: string) => void) {
    this.data = this.read();
  }

  /** True when kept in a file, so that it outlives a restart. */
  get persistent(): boolean {
    return this.file !== undefined;
  }

  /** What `nodeId` registered last, if anything. */
  get(nodeId: string): RegisteredSubscription | undefined {
    return this.data.nodes[nodeId];
  }

  /** Records what `nodeId` registers now (before asking the server, so a crash in between forgets nothing). */
  set(nodeId: string, subscription: RegisteredSubscription): void {
    const known = this.data.nodes[nodeId];
    if (known && sameSubscription(known, subscription)) return;
    this.data.nodes[nodeId] = { ...subscription };
    this.write();
  }

  /** `nodeId` owns nothing any more. */
  forget(nodeId: string): void {
    if (!(nodeId in this.data.nodes)) return;
    delete this.data.nodes[nodeId];
    this.write();
  }

  /** Node ids with a recorded subscription. */
  nodeIds(): string[] {
    return Object.keys(this.data.nodes);
  }

  addOrphan(subscription: RegisteredSubscription): void {
    if (this.data.orphans.some((o) => sameSubscription(o, subscription))) return;
    this.data.orphans.push({ ...subscription });
    this.write();
  }

  removeOrphan(subscription: RegisteredSubscription): void {
    const left = this.data.orphans.filter((o) => !sameSubscription(o, subscription));
    if (left.length === this.data.orphans.length) return;
    this.data.orphans = left;
    this.write();
  }

  orphans(): RegisteredSubscription[] {
    return this.data.orphans.map((o) => ({ ...o }));
  }

  private read(): RegistryData {
    const empty: RegistryData = { nodes: {}, orphans: [] };
    if (!this.file) return empty;
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.warn(`cannot read ${this.file}: ${(err as Error).message}`);
      return empty;
    }
    try {
      const parsed = JSON.parse(text) as Partial<RegistryData>;
      const valid = (s: unknown): s is RegisteredSubscription => !!s && typeof s === 'object'
        && typeof (s as RegisteredSubscription).server === 'string' && typeof (s as RegisteredSubscription).baseUrl === 'string'
        && typeof (s as RegisteredSubscription).id === 'string';
      const nodes: Record<string, RegisteredSubscription> = {};
      for (const [nodeId, s] of Object.entries(parsed.nodes ?? {})) if (valid(s)) nodes[nodeId] = s;
      return { nodes, orphans: Array.isArray(parsed.orphans) ? parsed.orphans.filter(valid) : [] };
    } catch (err) {
      this.warn(`${this.file} is not valid JSON (${(err as Error).message}); starting with an empty list`);
      return empty;
    }
  }

  private write(): void {
    if (!this.file) return;
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(temporary, JSON.stringify(this.data, null, 2) + '\n');
      fs.renameSync(temporary, this.file);
    } catch (err) {
      this.warn(`cannot write ${this.file}: ${(err as Error).message}`);
    }
  }
}

const registries = new Map<string, SubscriptionRegistry>();

/** The registry of this Node-RED (one per user directory). */
export function registryFor(RED: NodeAPI): SubscriptionRegistry {
  const userDir = typeof RED.settings.userDir === 'string' && RED.settings.userDir !== '' ? RED.settings.userDir : undefined;
  const file = userDir === undefined ? undefined : path.join(userDir, REGISTRY_FILE);
  const key = file ?? '';
  let registry = registries.get(key);
  if (!registry) {
    registry = new SubscriptionRegistry(file, (message) => RED.log.warn(`asset-event-in: ${message}`));
    registries.set(key, registry);
  }
  return registry;
}

/** Deleting must finish inside Node-RED's 15 s close timeout. */
const DELETE_TIMEOUT_MS = 5000;

/**
 * Deletes subscription `id` with `client`, bounded in time. Resolves undefined when it is gone
 * (also when the server no longer knew it), else the error (the server could not be reached).
 */
export async function deleteWith(client: AssetClient, id: string): Promise<Error | undefined> {
  if (!client.hasSession) return noCookieError(); // none configured and none set yet: nothing sent, kept for later
  const deadline = Date.now() + DELETE_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      await withTimeout(client.deleteSubscription(id, { timeout: Math.max(1, deadline - Date.now()) }), deadline - Date.now() + 500);
      return undefined;
    } catch (err) {
      const kind = err instanceof AssetApiError ? err.kind : undefined;
      if (kind === 'rejected') return undefined; // no such subscription: nothing left to delete
      // A full deploy also restarts the asset-server node, whose close ends the client's
      // keep-alive sockets: a delete is idempotent, so try again on a new socket.
      if (kind === 'network' && attempt < 3 && Date.now() + 100 < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      return err instanceof Error ? err : new Error(String(err));
    }
  }
}

/**
 * Deletes a recorded subscription with the client of its config node: undefined when deleted,
 * 'no-server' when that config node is gone or now points elsewhere (nobody can delete it from
 * here), else the error.
 */
export async function deleteRecorded(RED: NodeAPI, subscription: RegisteredSubscription): Promise<Error | 'no-server' | undefined> {
  const server = RED.nodes.getNode(subscription.server) as AssetServerConfigNode | null;
  if (!server || typeof server.getClient !== 'function' || server.baseUrl !== subscription.baseUrl) return 'no-server';
  let client: AssetClient;
  try { client = server.getClient(true); } catch { return 'no-server'; }
  return deleteWith(client, subscription.id);
}

/** Rejects after `ms` if `promise` has not settled (the timer never outlives the call). */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(ms / 1000)} s`)), ms);
    })]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
