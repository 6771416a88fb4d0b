/**
 * asset-subscribe: registers, reads or deletes a change subscription (spec 4.1).
 */
import type { SubscriptionFields } from '../../api/types';
import { AssetApiError, invalidInput, redactSecrets } from '../../api/errors';
import { clientFor } from '../asset-server';
import { asInteger, asString, handleInputAndClose, nameOf, localText, required, resolveField, type FieldSource } from '../shared';
import { maskHeaderValues, secretHeaderSetting, secretProblem } from '../shared/masking';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';
import { nodeRetry, withRetries } from '../shared/retry';

export { maskHeaderValues } from '../shared/masking';

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
  /** Tries after a transient failure (shared/retry.ts); missing in flows saved before: 0. */
  retries?: string | number;
  /** Header carrying the credential `secret` (an asset-event-in's shared secret). Default X-DAM-Secret. */
  secretHeader?: string;
}

/** A header field as given (node list, msg.subscription: an array or one string), as a list. */
function headerList(value: unknown): unknown[] {
  if (value === undefined || value === null || value === '') return [];
  return Array.isArray(value) ? value : [value];
}

/** Repeated fields of spec 2.1, in the order the editor lists them. */
const LIST_FIELDS = ['header', 'queryParam', 'watchPath', 'watchMetadata'] as const;

function nonEmptyStrings(list: unknown): string[] {
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string' && v.trim() !== '') : [];
}

/** Editor labels of the request fields (catalogue `asset-subscribe.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = {
  subscriptionId: 'Id', callback: 'Callback', successCode: 'Answer', retryCount: 'Callback retries', requestType: 'Request type'
};
const NO_CALLBACK = 'Callback (msg.subscription.callback) is required to register: set it in the node, or leave it blank and give msg.subscription.callback';

export default function register(RED: NodeAPI): void {
  function AssetSubscribeNode(this: Node, config: AssetSubscribeConfig) {
    createNode(RED, this, config);
    const node = this;
    const secret = (node.credentials as { secret?: string } | undefined)?.secret || undefined;
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
      if (secret) fields.header = [...headerList(fields.header), secretHeaderLine(secret)];
      return fields as unknown as SubscriptionFields;
    }

    /** `Name: secret`; the name and the secret checked as asset-event-in checks its own. */
    function secretHeaderLine(value: string): string {
      const wrong = secretProblem(value);
      if (wrong) throw invalidInput('secret', wrong);
      const { name, broken } = secretHeaderSetting(config.secretHeader);
      if (broken) throw invalidInput('secretHeader', broken);
      return `${name}: ${value}`;
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
      const retry = nodeRetry(RED, node, config.retries, request.signal);

      if (action === 'register') {
        const fields = await subscriptionFields(msg);
        try {
          // A server may echo what it was sent: its answer masked as get's, its error redacted.
          msg.payload = maskHeaderValues(await withRetries(() => client.registerSubscription(id, fields, call), retry));
        } catch (err) {
          if (!secret || !(err instanceof AssetApiError)) throw err;
          const serverMessage = err.serverMessage === undefined ? undefined : redactSecrets(err.serverMessage, [secret]);
          throw new AssetApiError(err.kind, redactSecrets(err.message, [secret]), { ...err, serverMessage });
        }
      } else if (action === 'get') {
        msg.payload = maskHeaderValues(await withRetries(() => client.getSubscription(id, call), retry));
      } else {
        msg.payload = await withRetries(() => client.deleteSubscription(id, call), retry);
      }
      msg.subscriptionId = id;
      msg.action = action;
      return RED._(`asset-subscribe.status.${action}`);
    }, { maxInFlight: config.maxInFlight, server: config.server, describe: (msg) => nameOf('subscriptionId', msg.subscriptionId),
      labels: { id: localText(RED, 'asset-subscribe.label.subscriptionId', 'Id') } });
  }

  registerType(RED, 'asset-subscribe', AssetSubscribeNode, { secret: { type: 'password' } });
}
