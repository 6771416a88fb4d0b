/**
 * asset-event-in's editor properties -> checked settings, and the subscription fields
 * they ask the server for. Every problem is a SettingError naming the property and the rule.
 */
import { createHash } from 'crypto';
import type { SubscriptionFields } from '../../api/types';
import { SUBSCRIPTION_ID_RULE, isSubscriptionId } from '../../api/values';
import { DEFAULT_SECRET_HEADER, secretHeaderSetting } from '../shared/masking';
import { SettingError, isBlankSetting, numberSetting } from '../shared';

/** Editor properties. */
export interface AssetEventInConfig {
  id: string;
  name?: string;
  /** Route path under httpNodeRoot. */
  path?: string;
  /** 'post' (default) or 'get'. */
  method?: string;
  /** Status answered once the messages are sent. Default 200. */
  successCode?: string | number;
  /** 'entry' (default): one msg per entry; 'callback': one msg per callback, payload = array. */
  output?: string;
  /** Emit entries that are empty objects. Default false (dropped, counted in the status). */
  emitEmpty?: boolean;
  /** Body size limit in MB (10^6 bytes). Default 50. */
  maxBodyMB?: string | number;
  /** Most entries in one callback (413 above). Default 100000. */
  maxEntries?: string | number;
  /** Header carrying the shared secret. Default X-DAM-Secret. */
  secretHeader?: string;
  /** Fixed subscription id; blank = derived from the node id (`nr-<id>`) when managing. */
  subscriptionId?: string;
  /** Answer 400 when the payload's id is not the subscription id. Default true. */
  checkId?: boolean;
  /** Duplicate filter. Default true. */
  dedup?: boolean;
  /** Duplicate window in seconds. Default 600. */
  dedupWindow?: string | number;
  /** Most remembered entries. Default 10000. */
  dedupMax?: string | number;
  /** asset-redis config node id: keep the duplicate filter in Redis (several Node-RED copies). Blank = in memory. */
  redis?: string;
  /** asset-server config node id. */
  server?: string;
  /** Register / delete the subscription with the node. */
  manage?: boolean;
  watchPath?: string[];
  watchMetadata?: string[];
  /** '' = server default (OR). */
  logicalOperand?: string;
  /** '' = server default (3). */
  retryCount?: string | number;
}

/** Settings read from the editor properties, checked. */
export interface Settings {
  path: string;
  method: 'post' | 'get';
  successCode: number;
  perCallback: boolean;
  emitEmpty: boolean;
  maxBodyBytes: number;
  maxEntries: number;
  secretHeader: string;
  subscriptionId?: string;
  checkId: boolean;
  dedup?: { windowMs: number; maxKeys: number };
  manage: boolean;
}

export const DEFAULTS = {
  successCode: 200,
  maxBodyMB: 50,
  maxEntries: 100000,
  secretHeader: DEFAULT_SECRET_HEADER,
  dedupWindowS: 600,
  dedupMax: 10000
} as const;

/** Route pattern characters Express 4 (Node-RED 4) and 5 (Node-RED 5) read differently (a bare * is an error in 5), and ? and # that no URL path holds. */
const NEVER_IN_PATH = /[?#+()[\]{}!*]/;
/** A parameter: a managed node registers its path as the callback URL, which must be that very path. */
const PATTERN_IN_PATH = /:/;

/** Reads and checks the editor properties; a managed subscription without an id gets one derived from the node id. */
export function readSettings(config: AssetEventInConfig, nodeId: string): Settings {
  let path = (config.path || '').trim();
  if (!path) throw new SettingError('path: is required');
  if (!path.startsWith('/')) path = '/' + path;
  if (NEVER_IN_PATH.test(path)) throw new SettingError('path: must not contain ? # + ( ) [ ] { } ! *: route patterns, read differently by Node-RED 4 and 5, and never part of the callback URL\'s path');
  if (config.manage === true && PATTERN_IN_PATH.test(path)) {
    throw new SettingError('path: with "manage subscription" it is the callback URL the server calls: no parameter (:x)');
  }
  const method = (config.method || 'post').toLowerCase();
  if (method !== 'post' && method !== 'get') throw new SettingError('method: must be POST or GET');
  const successCode = numberSetting(config.successCode, 'successCode', DEFAULTS.successCode,
    (n) => Number.isInteger(n) && n >= 200 && n <= 299, 'must be an HTTP status from 200 to 299');
  const maxBodyMB = numberSetting(config.maxBodyMB, 'maxBodyMB', DEFAULTS.maxBodyMB, (n) => n > 0, 'must be a number of MB above 0');
  const maxEntries = numberSetting(config.maxEntries, 'maxEntries', DEFAULTS.maxEntries, (n) => Number.isInteger(n) && n >= 1, 'must be a whole number, 1 or more');
  // Spaces around the name are the editor's, not the header's (as in every other text setting).
  const { name: secretHeader, broken } = secretHeaderSetting(config.secretHeader);
  if (broken) throw new SettingError(`secretHeader: ${broken}`);
  const manage = config.manage === true;
  let subscriptionId = (config.subscriptionId || '').trim() || undefined;
  if (subscriptionId === undefined && manage) subscriptionId = derivedSubscriptionId(nodeId);
  if (subscriptionId !== undefined && !isSubscriptionId(subscriptionId)) {
    throw new SettingError(`subscriptionId: ${SUBSCRIPTION_ID_RULE} (spec 2.1)`);
  }
  const settings: Settings = {
    path, method, successCode, manage, secretHeader, subscriptionId,
    perCallback: config.output === 'callback',
    emitEmpty: config.emitEmpty === true,
    maxBodyBytes: Math.floor(maxBodyMB * 1e6),
    maxEntries,
    checkId: config.checkId !== false
  };
  if (config.dedup !== false) {
    const windowS = numberSetting(config.dedupWindow, 'dedupWindow', DEFAULTS.dedupWindowS, (n) => n >= 0, 'must be a number of seconds, 0 or more');
    const maxKeys = numberSetting(config.dedupMax, 'dedupMax', DEFAULTS.dedupMax, (n) => Number.isInteger(n) && n >= 1, 'must be a whole number, 1 or more');
    settings.dedup = { windowMs: windowS * 1000, maxKeys };
  }
  return settings;
}

/** `nr-` + the node id, valid per spec 2.1 (8..40 of [A-Za-z0-9-]); hashed when the id does not fit. */
export function derivedSubscriptionId(nodeId: string): string {
  const candidate = 'nr-' + nodeId.replace(/[^A-Za-z0-9-]/g, '-');
  if (isSubscriptionId(candidate)) return candidate;
  return 'nr-' + createHash('sha256').update(nodeId).digest('hex').slice(0, 16);
}

/** publicBaseUrl + httpNodeRoot + path, with exactly one slash at each joint. */
export function callbackUrl(publicBaseUrl: string, httpNodeRoot: string | undefined, path: string): string {
  const parts = [publicBaseUrl.replace(/\/+$/, ''), (httpNodeRoot || '/').replace(/^\/+|\/+$/g, ''), path.replace(/^\/+/, '')];
  return parts.filter((p, i) => i === 0 || p !== '').join('/');
}

/**
 * The subscription fields (spec 4.1) an owned subscription registers: the callback URL of this
 * endpoint, its method and success status, the secret header when a secret is set, and the
 * watch filters of the editor.
 */
export function subscriptionFields(config: AssetEventInConfig, settings: Settings, callback: string, secret: string | undefined): SubscriptionFields {
  const fields: SubscriptionFields = {
    callback,
    method: settings.method.toUpperCase(),
    successCode: settings.successCode
  };
  if (secret) fields.header = [`${settings.secretHeader}: ${secret}`];
  const list = (v: unknown) => Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string' && s.trim() !== '') : [];
  if (list(config.watchPath).length) fields.watchPath = list(config.watchPath);
  if (list(config.watchMetadata).length) fields.watchMetadata = list(config.watchMetadata);
  if (config.logicalOperand) fields.logicalOperand = config.logicalOperand;
  if (!isBlankSetting(config.retryCount)) {
    fields.retryCount = numberSetting(config.retryCount, 'retryCount', 3, (n) => Number.isInteger(n) && n >= 0, 'must be a whole number, 0 or more');
  }
  return fields;
}
