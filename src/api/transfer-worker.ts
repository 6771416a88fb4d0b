/**
 * The worker thread of {@link TransferThread}: runs upload / downloadToFile of an AssetClient
 * built from the caller's options (with the cookie of the caller's session) and reports progress,
 * the result or the error (its JSON form: kind, message, details; never the cookie).
 */
import { parentPort } from 'worker_threads';
import { AssetClient, type AssetClientOptions } from './client';
import { AssetApiError } from './errors';
import type { TransferProgress } from './transfer';
import type { ThreadJob, ThreadMessage } from './transfer-thread';

/** Clients by options (the cookie included): a renewed session gets a client of its own. */
const clients = new Map<string, AssetClient>();
const MAX_CLIENTS = 4;
const controllers = new Map<number, AbortController>();

function clientFor(options: Record<string, unknown>): AssetClient {
  const key = JSON.stringify(options);
  let client = clients.get(key);
  if (!client) {
    client = new AssetClient({ ...options, transferThread: 'main' } as unknown as AssetClientOptions);
    clients.set(key, client);
    if (clients.size > MAX_CLIENTS) {
      const [oldest, old] = clients.entries().next().value as [string, AssetClient];
      clients.delete(oldest);
      old.close();
    }
  }
  return client;
}

const port = parentPort;
if (port) {
  const post = (m: ThreadMessage): void => port.postMessage(m);
  port.on('message', (m: { id: number; abort?: boolean; job?: ThreadJob }) => {
    if (m.abort) { controllers.get(m.id)?.abort(); return; }
    if (!m.job) return;
    const { id, job } = m;
    const controller = new AbortController();
    controllers.set(id, controller);
    const opts = { ...job.opts, signal: controller.signal, onProgress: (progress: TransferProgress) => post({ id, progress }) };
    const client = clientFor(job.client);
    const call = job.method === 'upload'
      ? client.upload(opts as unknown as Parameters<AssetClient['upload']>[0])
      : client.downloadToFile(opts as unknown as Parameters<AssetClient['downloadToFile']>[0], (temporary) => post({ id, temporary }));
    call.then(
      (result) => post({ id, result }),
      (err: unknown) => post({
        id,
        error: err instanceof AssetApiError ? err.toJSON() : { kind: 'network', message: `${job.method}: ${err instanceof Error ? err.message : String(err)}` }
      })
    ).finally(() => controllers.delete(id));
  });
}
