/**
 * asset-export: exports an asset's metadata (spec 4.4); msg.payload is the parsed
 * JSON, or the text for other formats.
 */
import type { ExportOptions } from '../../api/client';
import { clientFor } from '../asset-server';
import { asIntegerId, asString, handleInputAndClose, required, resolveField } from '../shared';
import { createNode, registerType, type Node, type NodeAPI } from '../shared/node-red';
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

export default function register(RED: NodeAPI): void {
  function AssetExportNode(this: Node, config: AssetExportConfig) {
    createNode(RED, this, config);
    const node = this;

    handleInputAndClose(RED, node, async (msg, request) => {
      const fuidField = await resolveField(RED, node, msg, { field: 'fuid', blankReads: 'fuid', value: config.fuid, type: config.fuidType });
      const options: ExportOptions = { fuid: required(fuidField, asIntegerId(fuidField)), signal: request.signal };
      const rrn = asIntegerId(await resolveField(RED, node, msg, { field: 'rrn', blankReads: 'rrn', value: config.rrn, type: config.rrnType || 'num' }));
      if (rrn !== undefined) options.rrn = rrn;
      // `fmt` is the editor's pick list of formats: a plain string. Never msg.type unless the
      // field points at it: the core watch and file nodes set msg.type for their own purposes.
      const exportTypeType = config.exportTypeType === 'fmt' ? 'str' : config.exportTypeType;
      const type = asString(await resolveField(RED, node, msg, { field: 'type', value: config.exportType, type: exportTypeType }));
      if (type !== undefined) options.type = type;

      const client = clientFor(RED, config.server);
      const outcome = await withRetries(() => client.exportMetadata(options), nodeRetry(RED, node, config.retries, request.signal));
      msg.payload = outcome.data;
      msg.contentType = outcome.contentType;
      return RED._('asset-export.status.exported');
    }, { maxInFlight: config.maxInFlight });
  }

  registerType(RED, 'asset-export', AssetExportNode);
}
