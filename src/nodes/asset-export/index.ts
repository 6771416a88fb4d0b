/**
 * asset-export: exports an asset's metadata (spec 4.4); msg.payload is the parsed
 * JSON, or the text for other formats.
 */
import type { ExportOptions } from '../../api/client';
import { clientFor } from '../asset-server';
import { asIntegerId, asString, handleInputAndClose, nameOf, localText, required, resolveField, type FieldSource } from '../shared';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';
import { nodeRetry, withRetries } from '../shared/retry';

/** Editor properties. TypedInput fields come as value + `<name>Type`. */
export interface AssetExportConfig {
  id: string;
  name?: string;
  server?: string;
  fuid?: string; fuidType?: string;
  rrn?: string; rrnType?: string;
  exportType?: string; exportTypeType?: string;
  maxInFlight?: string | number;
  /** Tries after a transient failure (shared/retry.ts); missing in flows saved before: 0. */
  retries?: string | number;
}

/** Editor labels of the request fields (catalogue `asset-export.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = { fuid: 'Asset fuid', rrn: 'Revision', type: 'Type' };
/** The catalogue key of a field whose msg property has another name. */
const LABEL_KEYS: Record<string, string> = { type: 'exportType' };

export default function register(RED: NodeAPI): void {
  function AssetExportNode(this: Node, config: AssetExportConfig) {
    createNode(RED, this, config);
    const node = this;
    // Errors name a field by its editor label (English when the catalogue is not loaded).
    const field = (msg: NodeMessage, source: FieldSource) => resolveField(RED, node, msg,
      { ...source, label: localText(RED, `asset-export.label.${LABEL_KEYS[source.field] ?? source.field}`, FIELD_LABELS[source.field] ?? source.field) });

    handleInputAndClose(RED, node, async (msg, request) => {
      const fuidField = await field(msg, { field: 'fuid', blankReads: 'fuid', value: config.fuid, type: config.fuidType });
      const options: ExportOptions = { fuid: required(fuidField, asIntegerId(fuidField)), signal: request.signal };
      const rrn = asIntegerId(await field(msg, { field: 'rrn', blankReads: 'rrn', value: config.rrn, type: config.rrnType || 'num' }));
      if (rrn !== undefined) options.rrn = rrn;
      // `fmt` is the editor's pick list of formats: a plain string. Never msg.type unless the
      // field points at it: the core watch and file nodes set msg.type for their own purposes.
      const exportTypeType = config.exportTypeType === 'fmt' ? 'str' : config.exportTypeType;
      const type = asString(await field(msg, { field: 'type', value: config.exportType, type: exportTypeType }));
      if (type !== undefined) options.type = type;

      const client = clientFor(RED, config.server);
      const outcome = await withRetries(() => client.exportMetadata(options), nodeRetry(RED, node, config.retries, request.signal));
      msg.payload = outcome.data;
      msg.contentType = outcome.contentType;
      return RED._('asset-export.status.exported');
    }, { maxInFlight: config.maxInFlight, server: config.server, describe: (msg) => nameOf('fuid', msg.fuid) });
  }

  registerType(RED, 'asset-export', AssetExportNode);
}
