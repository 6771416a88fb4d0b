/**
 * The small part of Node-RED's runtime API that our nodes use, typed by hand
 * (the package has no dependency on Node-RED's own typings).
 */
import type { EventEmitter } from 'events';

/** Status shown under a node in the editor. */
export interface NodeStatus {
  fill?: 'red' | 'green' | 'yellow' | 'blue' | 'grey';
  shape?: 'ring' | 'dot';
  text?: string;
}

/** A message passing through a flow. */
export interface NodeMessage {
  _msgid?: string;
  payload?: unknown;
  [key: string]: unknown;
}

/** The `send` callback of an input handler. */
export type NodeSend = (msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null>) => void;
/** The `done` callback of an input handler: with an error, Catch nodes receive the msg. */
export type NodeDone = (err?: Error | string) => void;

/** A node instance, as created by `RED.nodes.createNode`. */
export interface Node extends EventEmitter {
  id: string;
  type: string;
  name?: string;
  z?: string;
  credentials?: Record<string, string | undefined>;
  status(status: NodeStatus | string): void;
  send(msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null>): void;
  log(msg: unknown): void;
  warn(msg: unknown): void;
  error(err: unknown, msg?: NodeMessage): void;
  on(event: 'input', handler: (msg: NodeMessage, send: NodeSend, done: NodeDone) => void): this;
  on(event: 'close', handler: (removed: boolean, done: () => void) => void): this;
  on(event: string, handler: (...args: any[]) => void): this;
}

/** The `RED` object handed to a node module. */
export interface NodeAPI {
  nodes: {
    createNode(node: object, config: object): void;
    registerType(type: string, constructor: Function, opts?: { credentials?: Record<string, { type: 'text' | 'password' }>; settings?: object }): void;
    getNode(id: string): Node | null;
  };
  util: {
    evaluateNodeProperty(value: unknown, type: string, node: Node, msg: NodeMessage | undefined,
      callback: (err: Error | null | undefined, result?: unknown) => void): void;
    cloneMessage<T>(msg: T): T;
  };
  /** Message catalogue lookup in this module's namespace. */
  _(key: string, substitutions?: Record<string, unknown>): string;
  settings: Record<string, any>;
  log: { info(m: unknown): void; warn(m: unknown): void; error(m: unknown): void; debug(m: unknown): void };
  /** The express app serving http-in style routes (httpNodeRoot, httpNodeAuth and middleware apply). */
  httpNode: any;
  /** The express app of the admin API. */
  httpAdmin: any;
}

/** Core `tls-config` node (05-tls.js): fills TLS options for a request. */
export interface TlsConfigNode extends Node {
  valid?: boolean;
  addTLSOptions(opts: Record<string, unknown>): Record<string, unknown>;
}
