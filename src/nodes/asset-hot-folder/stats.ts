/**
 * Live counters and recent failures of each running asset-hot-folder node, for the editor's DAM
 * sidebar (src/plugin/dam-sidebar.ts reads them and publishes changes). Nothing secret is kept:
 * error texts are an AssetApiError's message, which never holds a cookie.
 */
import type { HotFolderCounts } from './watcher';

/** Failed files kept per node for the sidebar (the failed folder has them all). */
const MAX_FAILED_SHOWN = 20;

export interface HotFolderView {
  nodeId: string;
  folder: string;
  counts: HotFolderCounts;
  paused: boolean;
  /** Why the folder cannot be watched, when it cannot. */
  folderError?: string;
  /** Why the folder is held (an outage, watcher.ts), short; absent when it is not. */
  serverUnavailable?: string;
  /** The most recent failures, newest first. */
  failedFiles: Array<{ file: string; movedTo: string; kind: string; message: string; at: string }>;
}

type Listener = (view: HotFolderView) => void;
const entries = new Map<string, HotFolderView>();
const listeners = new Set<Listener>();

function notify(view: HotFolderView): void {
  if (entries.get(view.nodeId) !== view) return;
  for (const listener of listeners) {
    try { listener(view); } catch { /* a listener's failure must not reach the node */ }
  }
}

export const hotFolderStats = {
  /** A node starts: a fresh entry. */
  open(nodeId: string, folder: string): HotFolderView {
    const view: HotFolderView = { nodeId, folder, counts: { waiting: 0, uploading: 0, done: 0, failed: 0, stuck: 0 }, paused: false, failedFiles: [] };
    entries.set(nodeId, view);
    notify(view);
    return view;
  },
  update(view: HotFolderView, change: Partial<Pick<HotFolderView, 'counts' | 'paused' | 'folderError' | 'serverUnavailable'>>): void {
    Object.assign(view, change);
    if ('folderError' in change && change.folderError === undefined) delete view.folderError;
    if ('serverUnavailable' in change && change.serverUnavailable === undefined) delete view.serverUnavailable;
    notify(view);
  },
  failed(view: HotFolderView, file: HotFolderView['failedFiles'][number]): void {
    view.failedFiles.unshift(file);
    view.failedFiles.length = Math.min(view.failedFiles.length, MAX_FAILED_SHOWN);
    notify(view);
  },
  close(view: HotFolderView): void {
    if (entries.get(view.nodeId) === view) entries.delete(view.nodeId);
  },
  get(nodeId: string): HotFolderView | undefined {
    return entries.get(nodeId);
  },
  onChange(listener: Listener): () => void {
    listeners.add(listener);
    return () => { listeners.delete(listener); };
  }
};
