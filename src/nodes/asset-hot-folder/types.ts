/**
 * What a hot folder is given and what it reports (watcher.ts), and the plain record of a failure
 * written to `<name>.error.json`.
 */
import { AssetApiError } from '../../api/errors';

export interface HotFolderOptions<R> {
  /** Absolute path of the watched folder. */
  folder: string;
  /** Also watch subfolders. */
  recursive: boolean;
  /**
   * Make the watched folder (and the folders above it) when it is missing at start (tried at each
   * scan until made once; a folder removed later is missing, as without it).
   */
  createFolder?: boolean;
  /** No file-system events: only the periodic rescan (network shares). */
  polling: boolean;
  /** Full rescan interval (ms). */
  rescanMs: number;
  /** How long size and mtime must stay the same before a file is taken (ms). */
  untouchedMs: number;
  include: string[];
  exclude: string[];
  /** Uploads at once. */
  maxParallel: number;
  /** Where ingested files go (absolute); null: deleted (the user chose so explicitly). */
  doneFolder: string | null;
  /** Where failed files go (absolute), with `<name>.error.json`. */
  failedFolder: string;
  /** Failures of a file that count (those that start an outage, a probe's 504) before it fails: watcher.ts. */
  retries: number;
  /** First wait before a probe (ms); tests make it short. Default 5 s. */
  retryBaseMs?: number;
  /** Sends one file; rejects with an AssetApiError on failure. */
  upload: (file: FileJob, signal: AbortSignal) => Promise<R>;
}

/** One file handed to `upload`. */
export interface FileJob {
  /** Absolute path. */
  path: string;
  /** Path below the watched folder, `/`-separated. */
  relativePath: string;
  size: number;
  /** 1 for the first try. */
  attempt: number;
}

export interface IngestedFile<R> {
  relativePath: string;
  /** Where the file is now; undefined when it was deleted. */
  movedTo?: string;
  size: number;
  durationMs: number;
  attempts: number;
  result: R;
}

export interface FailedFile {
  relativePath: string;
  movedTo: string;
  errorFile: string;
  error: AssetApiError;
  attempts: number;
}

export interface HotFolderCounts {
  waiting: number;
  uploading: number;
  done: number;
  failed: number;
  /** Files that could not be moved to done or failed: left in place until they change. */
  stuck: number;
}

/** Plain fields of an error for `<name>.error.json` and messages: never a cookie (AssetApiError has none). */
export function errorRecord(error: AssetApiError, relativePath: string, attempts: number): Record<string, unknown> {
  return {
    file: relativePath, kind: error.kind, message: error.message, serverMessage: error.serverMessage,
    status: error.status, code: error.code, field: error.field, operation: error.operation,
    // The whole file had gone out: the server may have it; moved back, it may arrive twice.
    ...(error.bodySent ? { bodySent: true } : {}),
    time: new Date().toISOString(), attempts
  };
}

export function asAssetError(err: unknown): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const e = err as NodeJS.ErrnoException | undefined;
  return new AssetApiError('invalid-input', `file: ${e?.message ?? String(err)}`, {
    field: 'file', operation: 'upload', ...(typeof e?.code === 'string' ? { code: e.code } : {})
  });
}

