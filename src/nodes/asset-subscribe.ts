/**
 * asset-subscribe: registers, reads or deletes a change subscription (spec 4.1).
 */
import type { SubscriptionFields } from '../api/types';
import { AssetApiError, invalidInput } from '../api/errors';
import { clientFor } from './asset-server';
import { asInteger, asString, handleInputAndClose, nameOf, localText, required, resolveField, type FieldSource } from './common';
import type { Node, NodeAPI, NodeMessage } from './node-red';

export type SubscribeAction = 'register' | 'get' | 'delete';
const ACTIONS: readonly SubscribeAction[] = ['register', 'get', 'delete'];

/** Editor properties. TypedInput fields come as value + `<name>Type`. */
export interface AssetSubscribeConfig {
  id: string;
  name?: string;
  server?: string;
  /** The action, or `msg` to read it from msg.action. */
  action?: SubscribeAction | 'msg';
  subscriptionId?: string; subscriptionIdType?: string;
  callback?: string; callbackType?: string;
  /** '' = server default (GET). */
  method?: string;
  successCode?: string; successCodeType?: string;
  retryCount?: string; retryCountType?: string;
  requestType?: string; requestTypeType?: string;
  /** '' = server default (OR). */
  logicalOperand?: string;
  header?: string[];
  queryParam?: string[];
  watchPath?: string[];
  watchMetadata?: string[];
  maxInFlight?: string | number;
}

/** Repeated fields of spec 2.1, in the order the editor lists them. */
const LIST_FIELDS = ['header', 'queryParam', 'watchPath', 'watchMetadata'] as const;

/**
 * Header names whose value is shown: standard headers that describe the content. Any other
 * header can carry a secret under any name (asset-event-in's shared-secret header is named by
 * the user), so its value is masked.
 */
const PUBLIC_HEADER = /^(content-type|content-language|content-encoding|accept|accept-language|accept-encoding|accept-charset|cache-control|user-agent)$/i;

/**
 * Masks secrets in a `get` answer: the values of callback headers other than the standard
 * content headers (`X-Hook-Check: x` -> `X-Hook-Check: ***`; `Content-Type` stays readable) and every query
 * parameter value (`name=value` -> `name=***`: tokens travel under any name there).
 * asset-event-in sends its shared secret as a header, and secrets never go into a msg. Any
 * `header`/`headers`/`queryParam` property is masked, as a string, a list of strings or an
 * object, since the answer's shape is "not shown" in the spec.
 */
export function maskHeaderValues(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(v => maskHeaderValues(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    out[key] = /^headers?$/i.test(key) ? maskValues(v, ':', false, name => !PUBLIC_HEADER.test(name.trim()))
      : /^queryParams?$/i.test(key) ? maskValues(v, '=', true, () => true)
        : maskHeaderValues(v, depth + 1);
  }
  return out;
}

/**
 * `Name<separator>value` -> `Name<separator>***` when `secret(Name)`. A line without the
 * separator is kept when `keepBare` (a query flag is only a name) and masked whole otherwise
 * (a malformed header).
 */
function maskValues(value: unknown, separator: string, keepBare: boolean, secret: (name: string) => boolean): unknown {
  const mask = (line: unknown) => {
    if (typeof line !== 'string') return '***';
    const at = line.indexOf(separator);
    if (at < 0) return keepBare ? line : '***';
    const name = line.slice(0, at).trim();
    if (!secret(name)) return line;
    return `${line.slice(0, at)}${separator}${separator === ':' ? ' ' : ''}***`;
  };
  if (typeof value === 'string') return mask(value);
  if (Array.isArray(value)) return value.map(mask);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, v]) => [name, secret(name) ? '***' : v]));
  }
  return value;
}

function nonEmptyStrings(list: unknown): string[] {
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string' && v.trim() !== '') : [];
}

/** Editor labels of the request fields (catalogue `asset-subscribe.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = {
  subscriptionId: 'Id', callback: 'Callback', successCode: 'Answer', retryCount: 'Retries', requestType: 'Request type'
};
const NO_CALLBACK = 'Callback (msg.subscription.callback) is required to register: set it in the node, or leave it blank and give msg.subscription.callback';

export default function register(RED: NodeAPI): void {
  function AssetSubscribeNode(this: Node, config: AssetSubscribeConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    // Errors name a field by its editor label (English when the catalogue is not loaded).
    // A field the msg cannot fill in is named with the spec's name too: "Answer (successCode)".
    const field = (msg: NodeMessage, source: FieldSource) => {
      const label = localText(RED, `asset-subscribe.label.${source.field}`, FIELD_LABELS[source.field] ?? source.field);
      const named = source.blankReads === undefined && label.toLowerCase() !== source.field.toLowerCase() ? `${label} (${source.field})` : label;
      return resolveField(RED, node, msg, { ...source, label: named });
    };

    /** Editor values + evaluated TypedInputs; msg.subscription fills in only the fields the node leaves blank. */
    async function subscriptionFields(msg: NodeMessage): Promise<SubscriptionFields> {
      const fields: Record<string, unknown> = {};
      const callback = asString(await field(msg, { field: 'callback', value: config.callback, type: config.callbackType }));
      if (callback !== undefined) fields.callback = callback;
      if (config.method) fields.method = config.method;
      const successCode = asInteger(await field(msg, { field: 'successCode', value: config.successCode, type: config.successCodeType || 'num' }));
      if (successCode !== undefined) fields.successCode = successCode;
      const retryCount = asInteger(await field(msg, { field: 'retryCount', value: config.retryCount, type: config.retryCountType || 'num' }));
      if (retryCount !== undefined) fields.retryCount = retryCount;
      const requestType = asString(await field(msg, { field: 'requestType', value: config.requestType, type: config.requestTypeType }));
      if (requestType !== undefined) fields.requestType = requestType;
      if (config.logicalOperand) fields.logicalOperand = config.logicalOperand;
      for (const name of LIST_FIELDS) {
        const values = nonEmptyStrings(config[name]);
        if (values.length) fields[name] = values;
      }

      const override = msg.subscription;
      if (override !== undefined && override !== null) {
        if (typeof override !== 'object' || Array.isArray(override)) {
          throw invalidInput('msg.subscription', 'must be an object with the subscription field names (callback, method, watchPath, ...)');
        }
        for (const [name, value] of Object.entries(override)) {
          if (fields[name] === undefined || fields[name] === '') fields[name] = value;
        }
      }
      if (fields.callback === undefined || fields.callback === '') {
        throw new AssetApiError('invalid-input', localText(RED, 'asset-subscribe.errors.noCallback', NO_CALLBACK), { field: 'callback' });
      }
      return fields as unknown as SubscriptionFields;
    }

    handleInputAndClose(RED, node, async (msg, request) => {
      // msg.action only when the node's Action says "set by msg.action".
      const actionField = config.action === 'msg'
        ? await resolveField(RED, node, msg, { field: 'action', value: 'action', type: 'msg' })
        : await resolveField(RED, node, msg, { field: 'action', value: config.action || 'register', type: 'str' });
      const actionText = required(actionField, asString(actionField)).toLowerCase();
      if (!ACTIONS.includes(actionText as SubscribeAction)) {
        throw invalidInput(actionField.label, `must be one of ${ACTIONS.join(', ')}, got "${actionText.slice(0, 30)}"`);
      }
      const action = actionText as SubscribeAction;
      const idField = await field(msg, { field: 'subscriptionId', blankReads: 'subscriptionId', value: config.subscriptionId, type: config.subscriptionIdType });
      const id = required(idField, asString(idField));
      const client = clientFor(RED, config.server);
      const call = { signal: request.signal };

      if (action === 'register') {
        msg.payload = await client.registerSubscription(id, await subscriptionFields(msg), call);
      } else if (action === 'get') {
        msg.payload = maskHeaderValues(await client.getSubscription(id, call));
      } else {
        msg.payload = await client.deleteSubscription(id, call);
      }
      msg.subscriptionId = id;
      msg.action = action;
      return RED._(`asset-subscribe.status.${action}`);
    }, { maxInFlight: config.maxInFlight, describe: (msg) => nameOf('subscriptionId', msg.subscriptionId) });
  }

  RED.nodes.registerType('asset-subscribe', AssetSubscribeNode);
}
