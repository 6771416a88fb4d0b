/**
 * asset-upload: streams a file (msg.filename) or msg.payload (Buffer, string,
 * Readable) to the server's ingest call (spec 4.2).
 */
import { Readable } from 'stream';
import type { UploadOptions, UploadOutcome } from '../../api/client';
import { invalidInput } from '../../api/errors';
import { clientFor } from '../asset-server';
import { asBoolean, asInteger, asNumber, asString, handleInputAndClose, localText, resolveField, resolvePath, type FieldSource } from '../shared';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';

/** Editor properties. TypedInput fields come as value + `<name>Type`. */
export interface AssetUploadConfig {
  id: string;
  name?: string;
  server?: string;
  filename?: string; filenameType?: string;
  assetName?: string; assetNameType?: string;
  destination?: string; destinationType?: string;
  destinationFuid?: string; destinationFuidType?: string;
  collectionId?: string; collectionIdType?: string;
  wait?: string; waitType?: string;
  waitInMinutes?: string; waitInMinutesType?: string;
  expandZip?: string; expandZipType?: string;
  maxInFlight?: string | number;
}

const BOTH_DESTINATIONS = 'both Destination (__destination__) and Folder fuid (__destinationFuid__) are set: the server uses Destination and ignores Folder fuid';

function isReadable(value: unknown): value is Readable {
  return value instanceof Readable ||
    (!!value && typeof (value as Readable).pipe === 'function' && typeof (value as Readable).on === 'function' &&
     typeof (value as Readable).read === 'function');
}

export default function register(RED: NodeAPI): void {
  function AssetUploadNode(this: Node, config: AssetUploadConfig) {
    createNode(RED, this, config);
    const node = this;
    const field = (msg: NodeMessage, source: FieldSource) => resolveField(RED, node, msg, source);

    let warnedBoth = false;
    /** Spec 4.2: with both, the server uses destination. Said once per node, not per file. */
    function warnBothDestinations(options: UploadOptions): void {
      if (warnedBoth) return;
      warnedBoth = true;
      node.warn(localText(RED, 'asset-upload.warn.bothDestinations', BOTH_DESTINATIONS,
        { destination: options.destination, destinationFuid: options.destinationFuid }));
    }

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

    /** Every upload field except the file, from where the editor points (a blank field reads msg.<field>). */
    async function uploadOptions(msg: NodeMessage, file: UploadOptions['file']): Promise<UploadOptions> {
      const options: UploadOptions = { file };
      const assetName = asString(await field(msg, { field: 'name', blankReads: 'name', value: config.assetName, type: config.assetNameType }));
      if (assetName !== undefined) options.name = assetName;
      const destination = asString(await field(msg, { field: 'destination', blankReads: 'destination', value: config.destination, type: config.destinationType }));
      if (destination !== undefined) options.destination = destination;
      const destinationFuid = asInteger(await field(msg, { field: 'destinationFuid', blankReads: 'destinationFuid', value: config.destinationFuid, type: config.destinationFuidType || 'num' }));
      if (destinationFuid !== undefined) options.destinationFuid = destinationFuid;
      const collectionId = asInteger(await field(msg, { field: 'collectionId', blankReads: 'collectionId', value: config.collectionId, type: config.collectionIdType || 'num' }));
      if (collectionId !== undefined) options.collectionId = collectionId;
      const wait = asBoolean(await field(msg, { field: 'wait', blankReads: 'wait', value: config.wait, type: config.waitType || 'bool' }));
      if (wait !== undefined) options.wait = wait;
      const waitInMinutes = asNumber(await field(msg, { field: 'waitInMinutes', blankReads: 'waitInMinutes', value: config.waitInMinutes, type: config.waitInMinutesType || 'num' }));
      if (waitInMinutes !== undefined) options.waitInMinutes = waitInMinutes;
      const expandZip = asBoolean(await field(msg, { field: 'expandZip', blankReads: 'expandZip', value: config.expandZip, type: config.expandZipType || 'bool' }));
      if (expandZip !== undefined) options.expandZip = expandZip;
      if (options.destination !== undefined && options.destinationFuid !== undefined) warnBothDestinations(options);
      return options;
    }

    handleInputAndClose(RED, node, async (msg, request) => {
      const file = await fileSource(msg);
      let outcome: UploadOutcome;
      try {
        const options = await uploadOptions(msg, file);
        options.signal = request.signal;
        options.onProgress = request.progress;
        outcome = await clientFor(RED, config.server).upload(options);
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
    }, { maxInFlight: config.maxInFlight });
  }

  registerType(RED, 'asset-upload', AssetUploadNode);
}
