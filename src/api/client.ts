/**
 * CONTRACT STUB — the signatures below are fixed; the bodies are filled in by the
 * API-client work (issue 3). Nodes (src/nodes) are written against these signatures.
 */
import type { Agent as HttpAgent } from 'http';
import type { Agent as HttpsAgent } from 'https';
import type { Readable } from 'stream';
import type {
  SubscriptionFields, SubscriptionResult, SubscriptionDetails, UploadResult, ExportType
} from './types';

/** Options of an {@link AssetClient}. */
export interface AssetClientOptions {
  /** Server base URL, e.g. `http://127.0.0.1:8873`; may carry a path prefix; trailing slash optional. */
  baseUrl: string;
  /** Session cookie: `Name=value`, or a bare value sent as `JSESSIONID=value`. */
  cookie: string;
  /** Request timeout in ms (0 = none). Default 30000. For uploads with wait, waitInMinutes is added. */
  timeout?: number;
  /** Extra CA certificate(s), PEM. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Client certificate and key (PEM), for servers that ask for one. */
  cert?: string | Buffer;
  key?: string | Buffer;
  passphrase?: string;
  /** Reject servers whose certificate does not verify. Default true. */
  rejectUnauthorized?: boolean;
  /** Optional agent, e.g. a keep-alive agent. */
  agent?: HttpAgent | HttpsAgent;
}

/** Progress of a transfer. `total` is undefined when the length is not known. */
export interface TransferProgress {
  bytes: number;
  total?: number;
}

/** Options common to every call. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call (ms). */
  timeout?: number;
}

export interface UploadOptions extends CallOptions {
  /** The file: a path on disk, a Readable stream, or a Buffer. */
  file: { path: string } | { stream: Readable; length?: number } | { buffer: Buffer };
  /** Name of the stored file; default the file's base name (required for stream/buffer without name: `upload.bin`). */
  name?: string;
  /** Destination folder path on the server. destination or destinationFuid is required. */
  destination?: string;
  destinationFuid?: number;
  collectionId?: number;
  wait?: boolean;
  waitInMinutes?: number;
  expandZip?: boolean;
  /** MIME type sent for the file part; default from the name, else application/octet-stream. */
  contentType?: string;
  onProgress?: (p: TransferProgress) => void;
}

/** Upload result plus the fields read tolerantly from it. */
export interface UploadOutcome {
  /** The server's JSON body as received (spec 2.4). */
  result: UploadResult;
  fuids: number[];
  /** Revision, kept as a string when it exceeds 2^53. */
  rrn?: number | string;
  /** Ingest job id when wait is false, read from `jobId`, `jobid`, `job_id`, `job.id` or `data.jobId`. */
  jobId?: string;
}

export interface DownloadOptions extends CallOptions {
  fuid: number | string;
  /** Default -1 (latest). */
  rrn?: number | string;
  collectionId?: number | string;
  onProgress?: (p: TransferProgress) => void;
}

export interface DownloadInfo {
  /** File name from Content-Disposition, sanitized (no separators, no `..`); undefined if none. */
  filename?: string;
  contentType?: string;
  /** Content-Length when sent. */
  length?: number;
  /** Response headers (lower-case names). */
  headers: Record<string, string>;
}

export interface ExportOptions extends CallOptions {
  fuid: number | string;
  /** Default -1 (latest). */
  rrn?: number | string;
  /** Export type, e.g. `json` or `xml`. Default `json`. */
  type?: ExportType;
}

export interface ExportOutcome {
  /** Parsed JSON when the server sent JSON, else the text. */
  data: unknown;
  contentType?: string;
}

/** Typed client of the asset server's web API. No Node-RED dependency. */
export class AssetClient {
  constructor(_options: AssetClientOptions) { throw new Error('not implemented'); }

  /** POST subscribe/:id. Validates id and fields first; throws AssetApiError kind `invalid-input`. */
  registerSubscription(_id: string, _fields: SubscriptionFields, _opts?: CallOptions): Promise<SubscriptionResult> { throw new Error('not implemented'); }
  /** GET subscribe/:id. */
  getSubscription(_id: string, _opts?: CallOptions): Promise<SubscriptionDetails> { throw new Error('not implemented'); }
  /** DELETE subscribe/:id. */
  deleteSubscription(_id: string, _opts?: CallOptions): Promise<SubscriptionResult> { throw new Error('not implemented'); }

  /** Streaming multipart upload (4.2). */
  upload(_opts: UploadOptions): Promise<UploadOutcome> { throw new Error('not implemented'); }

  /** Download into memory. */
  downloadToBuffer(_opts: DownloadOptions): Promise<DownloadInfo & { data: Buffer }> { throw new Error('not implemented'); }
  /** Download as a stream; the caller must consume or destroy it. Errors before the body are thrown. */
  downloadToStream(_opts: DownloadOptions): Promise<DownloadInfo & { stream: Readable }> { throw new Error('not implemented'); }
  /** Download to a file, atomically (temporary name in the same folder, renamed when complete). Creates folders. */
  downloadToFile(_opts: DownloadOptions & { path: string }): Promise<DownloadInfo & { path: string; bytes: number }> { throw new Error('not implemented'); }

  /** Metadata export (4.4). */
  exportMetadata(_opts: ExportOptions): Promise<ExportOutcome> { throw new Error('not implemented'); }

  /** Destroys the client's own agent (not one passed in). */
  close(): void { throw new Error('not implemented'); }
}
