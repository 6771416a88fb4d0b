/**
 * The upload fields of asset-upload and asset-hot-folder (spec 4.2), read once, by one rule:
 * each from where the editor's TypedInput points, a blank field reading the msg property of the
 * same name; a value set on the node is never replaced by the msg.
 */
import type { UploadOptions } from '../../api/client';
import { AssetApiError } from '../../api/errors';
import { asBoolean, asInteger, asNumber, asString, resolveField, type FieldSource } from './fields';
import type { Node, NodeAPI, NodeMessage } from './node-red';
import { localText } from './texts';

/** Editor properties of the upload fields. TypedInput fields come as value + `<name>Type`. */
export interface UploadFieldsConfig {
  assetName?: string; assetNameType?: string;
  destination?: string; destinationType?: string;
  destinationFuid?: string; destinationFuidType?: string;
  collectionId?: string; collectionIdType?: string;
  wait?: string; waitType?: string;
  waitInMinutes?: string; waitInMinutesType?: string;
  expandZip?: string; expandZipType?: string;
}

/** Editor labels of the upload fields (catalogue `<type>.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = {
  name: 'Asset name', destination: 'Destination', destinationFuid: 'Folder fuid', collectionId: 'Collection',
  wait: 'Wait', waitInMinutes: 'Wait minutes', expandZip: 'Expand zip'
};
/** The catalogue key of a field whose msg property has another name. */
const LABEL_KEYS: Record<string, string> = { name: 'assetName' };
const NO_DESTINATION = 'Destination (msg.destination) or Folder fuid (msg.destinationFuid) is required: the server folder to upload into, e.g. /inbox';

const BOTH_DESTINATIONS = 'both Destination (__destination__) and Folder fuid (__destinationFuid__) are set: the server uses Destination and ignores Folder fuid';

/** Reads the upload fields of one node; warns once per node when both destinations are set. */
export function uploadFieldReader(RED: NodeAPI, node: Node, config: UploadFieldsConfig, catalogue = node.type):
  (msg: NodeMessage, file: UploadOptions['file']) => Promise<UploadOptions> {
  // Errors name a field by its editor label and msg property (English when the catalogue is not loaded).
  const field = (msg: NodeMessage, source: FieldSource) => resolveField(RED, node, msg,
    { ...source, label: localText(RED, `${catalogue}.label.${LABEL_KEYS[source.field] ?? source.field}`, FIELD_LABELS[source.field] ?? source.field) });
  let warnedBoth = false;
  /** Spec 4.2: with both, the server uses destination. Said once per node, not per file. */
  function warnBothDestinations(options: UploadOptions): void {
    if (warnedBoth) return;
    warnedBoth = true;
    node.warn(localText(RED, `${catalogue}.warn.bothDestinations`, BOTH_DESTINATIONS,
      { destination: options.destination, destinationFuid: options.destinationFuid }));
  }

  return async (msg, file) => {
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
    if (options.destination === undefined && options.destinationFuid === undefined) {
      throw new AssetApiError('invalid-input', localText(RED, `${catalogue}.errors.noDestination`, NO_DESTINATION), { field: 'destination' });
    }
    return options;
  };
}
