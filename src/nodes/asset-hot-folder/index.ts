/**
 * asset-hot-folder: watches a folder and uploads each file once it is untouched; moves it to the
 * done folder after the server's success, to the failed folder (with `<name>.error.json`) after a
 * final failure. The rules are in watcher.ts; the upload fields are asset-upload's
 * (shared/upload-fields.ts). Input: `pause`, `resume`, `rescan` in msg.payload.
 */
import { once } from 'events';
import * as path from 'path';
import { AssetApiError, invalidInput } from '../../api/errors';
import type { AssetClient, UploadOutcome } from '../../api/client';
import { clientFor } from '../asset-server';
import { endWithError, errorStatusText, localText, resolvePath, STATUS_INTERVAL_MS } from '../shared';
import { cutText } from '../shared/texts';
import { describeFlowNode, enabledFlowNodes } from '../shared/flows';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage, type NodeSend, type NodeDone } from '../shared/node-red';
import { noteOutcome } from '../shared/server-answers';
import { uploadFieldReader } from '../shared/upload-fields';
import { hotFolderSettings, type AssetHotFolderConfig } from './settings';
import { hotFolderStats } from './stats';
import { errorRecord, HotFolder, type FailedFile, type FileJob, type HotFolderCounts, type IngestedFile } from './watcher';

const COMMANDS = ['pause', 'resume', 'rescan'] as const;

const TEXT = {
  counts: '__waiting__ waiting, __uploading__ uploading, __done__ done, __failed__ failed',
  paused: 'paused: __waiting__ waiting, __done__ done, __failed__ failed',
  unavailable: 'server unavailable: __waiting__ waiting, __uploading__ uploading, __done__ done, __failed__ failed',
  stuck: ', __stuck__ not moved',
  folderError: 'folder: __reason__',
  noSession: 'no session cookie yet (none in the asset-server, no automatic login): uploads wait until a flow sets one with an asset-session node',
  sharedFolder: 'folder __folder__ is also watched by __other__: each file would be uploaded by both, and one of them finds it gone when it moves it',
  noDestinationPath: 'Subfolders are kept only below a Destination path; with a Folder fuid alone, files from subfolders go into that folder',
  empty: '__file__ is empty: it waits until it has content (empty files are never uploaded)',
  changed: '__file__ changed after it was found untouched (while queued or during its upload): it will be uploaded once untouched again',
  retry: '__file__: __reason__; retry __retry__/__retries__, uploads held, next try in __seconds__ s',
  unavailableLog: 'server unavailable (__reason__): uploads are held, one file at a time is tried again (waits of 5 s doubling up to 5 minutes) until the server answers; files wait in the folder',
  availableLog: 'server available again'
};

/** Another enabled asset-hot-folder of the flows on the same folder (resolved as this one's). */
function folderWatchedBy(RED: NodeAPI, self: string, folder: string): string | undefined {
  const other = enabledFlowNodes(RED).find((n) => n.id !== self && n.type === 'asset-hot-folder' && typeof n.folder === 'string' &&
    n.folder.trim() !== '' && path.resolve(resolvePath(RED, n.folder.trim())) === folder);
  return other && describeFlowNode(other);
}

export default function register(RED: NodeAPI): void {
  function AssetHotFolderNode(this: Node, config: AssetHotFolderConfig) {
    createNode(RED, this, config);
    const node = this;
    const text = (key: keyof typeof TEXT, params: Record<string, unknown> = {}) =>
      localText(RED, `asset-hot-folder.status.${key}`, TEXT[key], params);

    let settings;
    try {
      settings = hotFolderSettings(config, (p) => resolvePath(RED, p));
      // No usable asset-server: every file dropped in would fail for good.
      clientFor(RED, config.server, true);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      node.error(message);
      node.status({ fill: 'red', shape: 'ring', text: cutText(message, 40) });
      node.on('input', (msg: NodeMessage, _send: NodeSend, done: NodeDone) => endWithError(msg, done, new AssetApiError('invalid-input', message)));
      return;
    }
    const { folder, keepSubfolders } = settings;
    const sharing = folderWatchedBy(RED, node.id, folder);
    if (sharing) node.warn(text('sharedFolder', { folder, other: sharing }));
    const readFields = uploadFieldReader(RED, node, config);
    const view = hotFolderStats.open(node.id, folder);

    let warnedFlatten = false;
    let warnedNoSession = false;
    /**
     * The server's client once it has a session: with no cookie configured (a flow sets it with
     * asset-session), an upload waits for it rather than failing the file for good.
     */
    async function clientWithSession(signal: AbortSignal): Promise<AssetClient> {
      const client = clientFor(RED, config.server, true);
      if (client.hasSession) return client;
      if (!warnedNoSession) { warnedNoSession = true; node.warn(text('noSession')); }
      await once(client, 'cookie-set', { signal }).catch(() => { throw new AssetApiError('aborted', 'upload: aborted', { operation: 'upload' }); });
      return client;
    }
    /** One file's upload: asset-upload's fields (evaluated against a msg describing the file), the file streamed from disk. */
    async function uploadFile(file: FileJob, signal: AbortSignal): Promise<UploadOutcome> {
      const fieldMsg: NodeMessage = { filename: file.path, relativePath: file.relativePath, topic: file.relativePath };
      const options = await readFields(fieldMsg, { path: file.path });
      const subfolder = path.posix.dirname(file.relativePath);
      if (keepSubfolders && subfolder !== '.') {
        if (options.destination !== undefined) options.destination = `${options.destination.replace(/\/+$/, '')}/${subfolder}`;
        else if (!warnedFlatten) { warnedFlatten = true; node.warn(text('noDestinationPath')); }
      }
      options.signal = signal;
      // No per-call retry here: the watcher holds the folder on such failures (shared/outage.ts) and frees the slot meanwhile.
      return (await clientWithSession(signal)).upload(options).then((outcome) => { noteOutcome(config.server); return outcome; }, (err: unknown) => { noteOutcome(config.server, err); throw err; });
    }

    const hot = new HotFolder<UploadOutcome>({ ...settings, upload: uploadFile });

    // ---- status: counts, at most every 250 ms, the last state always shown
    let statusTimer: NodeJS.Timeout | undefined;
    let lastStatus = 0;
    let closed = false;
    function showStatus(): void {
      if (statusTimer || closed) return;
      const wait = lastStatus + STATUS_INTERVAL_MS - Date.now();
      statusTimer = setTimeout(() => {
        statusTimer = undefined;
        lastStatus = Date.now();
        const counts: HotFolderCounts = hot.counts();
        const stuck = counts.stuck > 0 ? text('stuck', { stuck: counts.stuck }) : ''; // shown only when there are some
        if (hot.error !== undefined) {
          const reason = hot.error.startsWith(folder) ? hot.error.slice(folder.length).trim() : hot.error;
          node.status({ fill: 'red', shape: 'ring', text: text('folderError', { reason }) });
        } else if (hot.isPaused) {
          node.status({ fill: 'yellow', shape: 'ring', text: text('paused', { ...counts }) + stuck });
        } else if (hot.unavailable) {
          node.status({ fill: 'yellow', shape: 'ring', text: text('unavailable', { ...counts }) + stuck });
        } else {
          const fill = counts.failed > 0 || counts.stuck > 0 ? 'yellow' : counts.uploading > 0 ? 'blue' : 'green';
          node.status({ fill, shape: 'dot', text: text('counts', { ...counts }) + stuck });
        }
        hotFolderStats.update(view, {
          counts, paused: hot.isPaused, folderError: hot.error, serverUnavailable: hot.unavailable ? errorStatusText(RED, hot.unavailable) : undefined
        });
      }, Math.max(0, wait));
    }

    hot.on('counts', showStatus);
    hot.on('folder-error', (message: string) => { node.error(message); showStatus(); });
    hot.on('folder-ok', () => { node.log(`${folder}: watched`); showStatus(); });
    hot.on('warning', (message: string) => node.warn(message));
    hot.on('empty', (file: string) => node.warn(text('empty', { file })));
    hot.on('changed', (file: string) => node.log(text('changed', { file })));
    hot.on('retry', (r: { relativePath: string; retry: number; retries: number; delayMs: number; error: AssetApiError }) => {
      node.log(text('retry', { file: r.relativePath, reason: errorStatusText(RED, r.error), retry: r.retry, retries: r.retries, seconds: Math.ceil(r.delayMs / 1000) }));
    });
    hot.on('unavailable', (error: AssetApiError) => node.warn(text('unavailableLog', { reason: errorStatusText(RED, error) })));
    hot.on('available', () => node.log(text('availableLog')));
    hot.on('ingested', (e: IngestedFile<UploadOutcome>) => {
      const msg: NodeMessage = {
        topic: e.relativePath,
        payload: e.result.result,
        fuids: e.result.fuids,
        fuid: e.result.fuids[0],
        rrn: e.result.rrn,
        filename: e.movedTo ?? path.join(folder, ...e.relativePath.split('/')),
        relativePath: e.relativePath,
        size: e.size,
        durationMs: e.durationMs,
        attempts: e.attempts
      };
      if (e.result.jobId !== undefined) msg.jobId = e.result.jobId;
      node.send([msg, null]);
    });
    hot.on('failed', (e: FailedFile) => {
      const record = errorRecord(e.error, e.relativePath, e.attempts);
      node.send([null, {
        topic: e.relativePath, payload: record, assetError: e.error.toJSON(), filename: e.movedTo, errorFile: e.errorFile,
        relativePath: e.relativePath, attempts: e.attempts
      }]);
      hotFolderStats.failed(view, { file: e.relativePath, movedTo: e.movedTo, kind: e.error.kind, message: e.error.message, at: String(record.time) });
    });

    node.on('input', (msg: NodeMessage, _send: NodeSend, done: NodeDone) => {
      const command = typeof msg.payload === 'string' ? msg.payload.trim().toLowerCase() : undefined;
      if (command === 'pause') hot.pause();
      else if (command === 'resume') hot.resume();
      else if (command === 'rescan') void hot.rescan();
      else {
        endWithError(msg, done, invalidInput('msg.payload', `must be one of ${COMMANDS.join(', ')} (the hot folder's commands)`));
        return;
      }
      showStatus();
      done();
    });

    node.on('close', (_removed: boolean, closeDone: () => void) => {
      closed = true;
      if (statusTimer) clearTimeout(statusTimer);
      hotFolderStats.close(view);
      hot.close().then(() => { node.status({}); closeDone(); }, () => closeDone());
    });

    hot.start();
    showStatus();
  }

  registerType(RED, 'asset-hot-folder', AssetHotFolderNode);
}
