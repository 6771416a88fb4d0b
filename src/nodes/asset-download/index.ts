/**
 * asset-download: downloads an asset revision (spec 4.3) into msg.payload as a
 * Buffer, or streams it to a file written atomically. In file mode it writes only where the
 * node's File field points.
 */
import { invalidInput } from '../../api/errors';
import { DEFAULT_MAX_BUFFER_BYTES, type DownloadInfo, type DownloadOptions } from '../../api/client';
import type { IfExists } from '../../api/file-placement';
import { clientFor } from '../asset-server';
import { asIntegerId, asString, fieldError, formatBytes, handleInputAndClose, nameOf, isBlank, isBlankSetting, localText, required, resolveField, resolvePath, type FieldSource } from '../shared';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';
import { nodeRetry, withRetries } from '../shared/retry';

export type DownloadOutput = 'buffer' | 'file';

/** Editor properties. TypedInput fields come as value + `<name>Type`. */
export interface AssetDownloadConfig {
  id: string;
  name?: string;
  server?: string;
  fuid?: string; fuidType?: string;
  rrn?: string; rrnType?: string;
  collectionId?: string; collectionIdType?: string;
  output?: DownloadOutput;
  filename?: string; filenameType?: string;
  maxInFlight?: string | number;
  /** Tries after a transient failure (shared/retry.ts); missing in flows saved before: 0. */
  retries?: string | number;
  /** Buffer mode: largest file taken into memory, in MB (10^6 bytes). Default 100. */
  maxSizeMB?: string | number;
  /** File mode into a folder: replace, keep-both (default, also for flows saved before the setting) or fail. */
  ifExists?: string;
}

/** The Buffer mode limit in bytes; blank is the client's default (100 MB). */
function maxBufferBytes(value: unknown): number {
  if (isBlankSetting(value)) return DEFAULT_MAX_BUFFER_BYTES;
  const mb = Number(value);
  if (!Number.isFinite(mb) || mb <= 0) throw invalidInput('maxSizeMB', 'must be a number of MB above 0 (Max size, Buffer mode)');
  return Math.floor(mb * 1e6);
}

const NO_FILE = 'is blank: in file mode set File in this node to the path to write (or point it at msg.filename, flow, global or env); a blank File does not read msg.filename';
const EMPTY_FILE = 'gives no path: in file mode it names the file to write';

/** Sets the properties every download output carries. */
function setResponseProperties(msg: NodeMessage, info: DownloadInfo): void {
  msg.contentType = info.contentType;
  msg.headers = info.headers;
  // The server's own file name (Content-Disposition), sanitized by the client.
  msg.assetFilename = info.filename;
}

/** Editor labels of the request fields (catalogue `asset-download.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = { fuid: 'Asset fuid', rrn: 'Revision', collectionId: 'Collection', filename: 'File' };
/** The catalogue key of a field whose msg property has another name. */
const LABEL_KEYS: Record<string, string> = {};

export default function register(RED: NodeAPI): void {
  function AssetDownloadNode(this: Node, config: AssetDownloadConfig) {
    createNode(RED, this, config);
    const node = this;
    // Errors name a field by its editor label (English when the catalogue is not loaded).
    const field = (msg: NodeMessage, source: FieldSource) => resolveField(RED, node, msg,
      { ...source, label: localText(RED, `asset-download.label.${LABEL_KEYS[source.field] ?? source.field}`, FIELD_LABELS[source.field] ?? source.field) });
    const output: DownloadOutput = config.output === 'file' ? 'file' : 'buffer';

    handleInputAndClose(RED, node, async (msg, request) => {
      const withRetry = <T>(work: () => Promise<T>) => withRetries(work, nodeRetry(RED, node, config.retries, request.signal));
      const fuidField = await field(msg, { field: 'fuid', blankReads: 'fuid', value: config.fuid, type: config.fuidType });
      const options: DownloadOptions = {
        fuid: required(fuidField, asIntegerId(fuidField)),
        signal: request.signal,
        onProgress: request.progress
      };
      const rrn = asIntegerId(await field(msg, { field: 'rrn', blankReads: 'rrn', value: config.rrn, type: config.rrnType || 'num' }));
      if (rrn !== undefined) options.rrn = rrn;
      const collectionId = asIntegerId(await field(msg, { field: 'collectionId', blankReads: 'collectionId', value: config.collectionId, type: config.collectionIdType || 'num' }));
      if (collectionId !== undefined) options.collectionId = collectionId;

      if (output === 'buffer') {
        const client = clientFor(RED, config.server);
        const maxBytes = maxBufferBytes(config.maxSizeMB);
        const result = await withRetry(() => client.downloadToBuffer({ ...options, maxBytes }));
        msg.payload = result.data;
        setResponseProperties(msg, result);
        return RED._('asset-download.status.received', { size: formatBytes(result.data.length) });
      }

      // Only where this node's File points: a blank File never reads msg.filename, which after
      // an upload is the uploaded file's own path.
      const filenameField = await field(msg, { field: 'filename', value: config.filename, type: config.filenameType });
      const filename = asString(filenameField);
      if (filename === undefined) {
        throw isBlank({ field: 'filename', value: config.filename, type: config.filenameType })
          ? fieldError(filenameField, localText(RED, 'asset-download.errors.noFile', NO_FILE))
          : fieldError(filenameField, localText(RED, 'asset-download.errors.emptyFile', EMPTY_FILE));
      }
      const client = clientFor(RED, config.server);
      const target = resolvePath(RED, filename);
      // The editor's choice only (never a msg property); checked by the client, naming ifExists.
      const ifExists = (config.ifExists || undefined) as IfExists | undefined;
      const result = await withRetry(() => client.downloadToFile({ ...options, path: target, ifExists }));
      msg.filename = result.path;
      msg.payload = result.path;
      setResponseProperties(msg, result);
      return RED._('asset-download.status.saved', { size: formatBytes(result.bytes) });
    }, { maxInFlight: config.maxInFlight, server: config.server, describe: (msg) => nameOf('fuid', msg.fuid),
      // The client's options this node fills from its File and If it exists settings.
      labels: { path: localText(RED, 'asset-download.label.filename', 'File'), ifExists: localText(RED, 'asset-download.label.ifExists', 'If it exists') } });
  }

  registerType(RED, 'asset-download', AssetDownloadNode);
}
