/**
 * Node-RED's runtime API as the nodes use it, from `@types/node-red` (a dev dependency: types only,
 * nothing of it is loaded at run time). Narrowed where our nodes keep more than a generic node.
 */
import type * as NodeRed from 'node-red';

/** The `RED` object handed to a node module (and to the sidebar plugin). */
export type NodeAPI = NodeRed.NodeAPI;
/** Status shown under a node in the editor. */
export type NodeStatus = NodeRed.NodeStatus;
/** A message passing through a flow. */
export type NodeMessage = NodeRed.NodeMessage;
/** A node instance, as created by `RED.nodes.createNode`; credentials as Node-RED stores them (text). */
export type Node = NodeRed.Node<Record<string, string | undefined>>;
/** The `send` callback of an input handler. */
export type NodeSend = (msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null>) => void;
/** The `done` callback of an input handler: with an error, Catch nodes receive the msg. */
export type NodeDone = (err?: Error) => void;

/** Core `tls-config` node (05-tls.js): fills TLS options for a request. */
export interface TlsConfigNode extends Node {
  valid?: boolean;
  addTLSOptions(opts: Record<string, unknown>): Record<string, unknown>;
}

/** A node's editor properties: at least its id (the rest is the node's own config interface). */
export interface NodeConfig { id: string }

/**
 * `RED.nodes.createNode` for our config interfaces. @types/node-red types the definition as a
 * generic NodeDef (id, type, name, z all required), which a node's own config interface is not:
 * the one place where the two are joined.
 */
export function createNode(RED: NodeAPI, node: Node, config: NodeConfig): void {
  RED.nodes.createNode(node, config as unknown as NodeRed.NodeDef);
}

/**
 * `RED.nodes.registerType` for a constructor whose `this` is our node interface (a Node with the
 * members the node adds, such as asset-server's getClient): the other join with the generic typing.
 */
export function registerType<TNode extends Node, TConfig extends NodeConfig>(RED: NodeAPI, type: string,
  constructor: (this: TNode, config: TConfig) => void, credentials?: Record<string, { type: 'text' | 'password' }>): void {
  RED.nodes.registerType(type, constructor as unknown as NodeRed.NodeConstructor<Node, NodeRed.NodeDef, Record<string, string | undefined>>,
    credentials ? { credentials } : undefined);
}
