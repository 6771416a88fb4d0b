/**
 * asset-upload: streams a file (msg.filename) or msg.payload (Buffer, string,
 * Readable) to the server's ingest call (spec 4.2).
 */
import { Readable } from 'stream';
import type { UploadOptions, UploadOutcome } from '../../api/client';
import { invalidInput } from '../../api/errors';
import { clientFor } from '../asset-server';
import { asString, handleInputAndClose, localText, nameOf, resolveField, resolvePath, type FieldSource } from '../shared';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';
import { canRepeatUpload, nodeRetry, withRetries } from '../shared/retry';
import { uploadFieldReader, type UploadFieldsConfig } from '../shared/upload-fields';

/** Editor properties. TypedInput fields come as value + `<name>Type`. */
export interface AssetUploadConfig extends UploadFieldsConfig {
  id: string;
  name?: string;
  server?: string;
  filename?: string; filenameType?: string;
  maxInFlight?: string | number;
  /** Tries after a transient failure (shared/retry.ts); missing in flows saved before: 0. */
  retries?: string | number;
}

function isReadable(value: unknown): value is Readable {
  return value instanceof Readable ||
    (!!value && typeof (value as Readable).pipe === 'function' && typeof (value as Readable).on === 'function' &&
     typeof (value as Readable).read === 'function');
}

export default function register(RED: NodeAPI): void {
  function AssetUploadNode(this: Node, config: AssetUploadConfig) {
    createNode(RED, this, config);
    const node = this;
    // Errors name a field by its editor label (English when the catalogue is not loaded).
    const field = (msg: NodeMessage, source: FieldSource) => resolveField(RED, node, msg,
      { ...source, label: localText(RED, `asset-upload.label.${source.field}`, source.field === 'filename' ? 'File' : source.field) });

    /** Where the File field points (new nodes: msg.filename; blank: msg.filename too); else msg.payload. */
    async function fileSource(msg: NodeMessage): Promise<UploadOptions['file']> {
      const filename = asString(await field(msg, { field: 'filename', blankReads: 'filename', value: config.filename, type: config.filenameType }));
      if (filename !== undefined) return { path: resolvePath(RED, filename) };
      const payload = msg.payload;
      if (Buffer.isBuffer(payload)) return { buffer: payload };
      if (typeof payload === 'string') return { buffer: Buffer.from(payload, 'utf8') };
      if (isReadable(payload)) return { stream: payload };
      throw invalidInput('msg.payload', 'must be a Buffer, a string or a Readable stream when File gives no file name');
    }

    const uploadOptions = uploadFieldReader(RED, node, config);

    handleInputAndClose(RED, node, async (msg, request) => {
      const file = await fileSource(msg);
      let outcome: UploadOutcome;
      try {
        const options = await uploadOptions(msg, file);
        options.signal = request.signal;
        options.onProgress = request.progress;
        const client = clientFor(RED, config.server);
        outcome = await withRetries(() => client.upload(options),
          nodeRetry(RED, node, config.retries, request.signal, { canRepeat: (err) => canRepeatUpload(file, err) }));
      } catch (err) {
        // A stream handed over in msg.payload must not stay open when the upload fails.
        if ('stream' in file && !file.stream.destroyed) file.stream.destroy();
        throw err;
      }
      msg.payload = outcome.result;
      msg.fuids = outcome.fuids;
      msg.fuid = outcome.fuids[0];
      msg.rrn = outcome.rrn;
      if (outcome.jobId !== undefined) msg.jobId = outcome.jobId;
      else delete msg.jobId;
      return outcome.fuids.length
        ? RED._('asset-upload.status.uploaded', { fuid: outcome.fuids.join(', ') })
        : RED._('asset-upload.status.accepted');
    }, { maxInFlight: config.maxInFlight, server: config.server, describe: (msg) => nameOf('filename', msg.filename) ?? nameOf('name', msg.name) });
  }

  registerType(RED, 'asset-upload', AssetUploadNode);
}
