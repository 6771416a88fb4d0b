/**
 * Wire types of the asset server's web API (spec sections 2.1 to 2.4, 4.1 to 4.4).
 *
 * Shared by the client (src/api) and the emulator (src/emulator). Types only:
 * validation logic is never shared between the two ends, so that one bug cannot
 * hide in both (see DESIGN.md).
 */

/** A value that may be given once or several times (repeated form field). */
export type OneOrMany<T> = T | T[];

/** HTTP method of a callback (spec 4.1 rule 3). */
export type CallbackMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** How several watchMetadata conditions combine (spec 4.1 rule 11). */
export type LogicalOperand = 'AND' | 'OR';

/**
 * Fields of a subscription registration (spec 2.1), without the id, which goes in the path.
 * Repeated fields accept one string or an array; each value is sent as its own form field.
 */
export interface SubscriptionFields {
  /** Required. http(s) URL the server calls when a change is detected. */
  callback: string;
  /** `Name: value` header(s) set on the callback request. */
  header?: OneOrMany<string>;
  /** Callback HTTP method. Server default GET. */
  method?: CallbackMethod | string;
  /** Status of the callback response counted as success. Server default 200. */
  successCode?: number | string;
  /** Retries before a delivery is permanently failed. Server default 3. */
  retryCount?: number | string;
  /** Server default `auto`. */
  requestType?: string;
  /** Query parameter(s) appended to the callback URL, each `name=value`. */
  queryParam?: OneOrMany<string>;
  /** Metadata condition(s): `Key=Value`, `Key==Value`, `Key==*`, `Key=*`, `*==*`. */
  watchMetadata?: OneOrMany<string>;
  /** Watched path(s): `* /dir`, `+ /dir`, `- /dir` or a bare file path. Server default `/`. */
  watchPath?: OneOrMany<string>;
  /** AND or OR. Server default OR. */
  logicalOperand?: LogicalOperand | string;
}

/** Result of register / delete (spec 2.2). */
export interface SubscriptionResult {
  /** Echo of the id from the request path. */
  id: string;
  /** True when the operation completed (the client throws on false). */
  success: boolean;
  /** The server's message when success is false. */
  error?: string;
}

/**
 * Details of a stored subscription as returned by GET. The spec does not show this answer:
 * the client passes on whatever the server sends. The emulator's choice is
 * `{ success, id, subscription: {...fields, repeated ones as arrays} }` (StoredSubscription
 * in src/emulator/feed-types.ts); a real server may answer otherwise.
 */
export interface SubscriptionDetails {
  /** True when the subscription was found (the client throws on false). */
  success: boolean;
  /** The subscription id. */
  id: string;
  /** The stored fields as the server shows them (the emulator: repeated ones as arrays in registration order). */
  subscription?: Record<string, unknown>;
  /** The server's message when success is false. */
  error?: string;
  [extra: string]: unknown;
}

/** Change action reported in a callback entry (spec 2.3, section 3). */
export type AssetAction = 'none' | 'added' | 'modified' | 'deleted';

/** One changed asset in a callback payload (spec 2.3). May arrive as an empty object. */
export interface CallbackEntry {
  /** Asset id (fuid). */
  assetId?: number;
  /** 64-bit revision: may exceed 2^53, so receivers keep it as a string when it does. */
  rrn?: number | string;
  /** Repository path of the asset. */
  path?: string;
  /** Owner of the asset. */
  owner?: string;
  /** What happened: none, added, modified or deleted. */
  action?: AssetAction | string;
}

/** Body of a POST callback (spec 2.3). */
export interface CallbackPayload {
  /** Success flag, boolean or "true"/"false". */
  success: boolean | string;
  /** One entry per changed asset since the last callback. */
  data: { entry: CallbackEntry[] };
  /** Id of the subscription that triggered the call. */
  id: string;
}

/** Result of an upload (spec 2.4). */
export interface UploadResult {
  /** True when the upload completed (the client throws on false). */
  success: boolean;
  data?: {
    /** Branch id, 1 = HEAD. */
    bid: number;
    /** Asset ids of the added assets. */
    fuids: number[];
    /** Revision at which the assets were added. */
    rrn: number | string;
  };
  /** Byte count of the received file. */
  length?: number;
  /** Ingest job id when `wait` is false. The emulator sends it as `jobId`. */
  jobId?: string;
  /** The server's message when success is false. */
  error?: string;
  [extra: string]: unknown;
}

/** Metadata export formats the emulator supports (spec 4.4: "not shown"). */
export type ExportType = 'json' | 'xml' | string;

/** Permission names of the server (spec section 5). */
export type Permission = 'events' | 'add';

/** API paths, relative to the base URL (spec section 4). */
export const API_PATHS = {
  subscribe: '/review/api/events/assets/subscribe/',
  upload: '/review/api/asset/upload',
  download: '/review/api/asset/download',
  exportMetadata: '/review/api/asset/export/metadata'
} as const;
