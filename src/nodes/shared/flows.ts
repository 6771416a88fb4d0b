/**
 * The deployed flows as Node-RED holds them (RED.nodes.eachNode: every node's settings, enabled or
 * not): for checks one node makes against the others (a shared route or folder, a subscription id
 * managed twice) and for what a closing node is (disabled, or removed).
 */
import type { NodeAPI } from './node-red';

/** A node's settings as the deployed flows hold them. */
export interface FlowNodeConfig { id: string; type: string; z?: string; d?: boolean; disabled?: boolean; name?: unknown; [setting: string]: unknown }

function allFlowNodes(RED: NodeAPI): FlowNodeConfig[] {
  const nodes: FlowNodeConfig[] = [];
  RED.nodes.eachNode((n) => { nodes.push(n as unknown as FlowNodeConfig); });
  return nodes;
}

/** The nodes that run: neither disabled nor on a disabled flow (tab); in the order of the flows. */
export function enabledFlowNodes(RED: NodeAPI): FlowNodeConfig[] {
  const nodes = allFlowNodes(RED);
  const disabledTabs = new Set(nodes.filter((n) => n.type === 'tab' && n.disabled === true).map((n) => n.id));
  return nodes.filter((n) => n.d !== true && (n.z === undefined || !disabledTabs.has(n.z)));
}

/** The node `id` in the deployed flows, enabled or not (a disabled node is closed as "removed" but is still there). */
export function flowNode(RED: NodeAPI, id: string): FlowNodeConfig | undefined {
  return allFlowNodes(RED).find((n) => n.id === id);
}

/** `type "name" (id)`, as a warning names another node. */
export function describeFlowNode(n: FlowNodeConfig): string {
  return `${n.type} ${typeof n.name === 'string' && n.name ? `"${n.name}" ` : ''}(${n.id})`;
}
