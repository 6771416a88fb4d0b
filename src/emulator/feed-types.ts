/**
 * CONTRACT between the emulator's two halves:
 * - the repository + HTTP side (server.ts, repository.ts, upload.ts, cli.ts, index.ts), and
 * - the subscription side (subscriptions.ts, matching.ts, delivery.ts) implementing SubscriptionHub.
 */
import type { LogicalOperand } from '../api/types';

/**
 * A subscription as the emulator stores it and shows it under `subscription` in its answer to
 * GET subscribe/:id: defaults filled in, repeated fields as arrays. The spec does not show that
 * answer; this shape is the emulator's choice.
 */
export interface StoredSubscription {
  callback: string;
  header: string[];
  method: string;
  successCode: number;
  retryCount: number;
  requestType: string;
  queryParam: string[];
  watchMetadata: string[];
  watchPath: string[];
  logicalOperand: LogicalOperand;
}

/** One committed change to the repository; each has its own rrn. */
export interface AssetChange {
  /** Repository revision of this change (one per write transaction; may be shared by the files of one zip upload). */
  rrn: number;
  fuid: number;
  /** Full repository path of the asset, e.g. `/inbox/a.jpg`. */
  path: string;
  owner: string;
  action: 'added' | 'modified' | 'deleted';
  /** The asset's custom metadata after the change (before it, for deleted). */
  metadata: Record<string, string>;
  /** Metadata keys whose value this change set (empty for a content-only change). */
  changedMetadataKeys: string[];
}

/** Fields of a subscription as parsed from a request: every value as a list, in order. */
export type FormFields = Record<string, string[]>;

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'permanently-failed';

/** One delivery (one callback call and its retries), as listed by GET /emulator/deliveries. */
export interface DeliveryRecord {
  id: number;
  subscription: string;
  state: DeliveryState;
  /** Attempts made so far (1 + retries). */
  attempts: number;
  entries: { assetId: number; rrn: number; path: string; owner: string; action: string }[];
  createdAt: string;
  lastAttemptAt?: string;
  /** Status of the last attempt, or the network error code. */
  lastResult?: number | string;
  /** When the next attempt of a failed delivery is due (ISO time); only in state failed. */
  nextAttemptAt?: string;
}

export interface SubscriptionHubOptions {
  dataDir: string;
  retryDelayMs: number;
  /** Timeout of one callback request (ms). */
  callbackTimeoutMs?: number;
  log: (line: string) => void;
}

export interface SubscriptionHub {
  /** Validates id and fields (spec 2.1, 4.1, 8) and stores durably; same id replaces. */
  register(id: string, fields: FormFields): Promise<{ ok: true } | { ok: false; error: string }>;
  get(id: string): StoredSubscription | undefined;
  /** false when the id is unknown. */
  remove(id: string): Promise<boolean>;
  /** Matches the change against every subscription, durably queues entries, starts deliveries. */
  publish(change: AssetChange): Promise<void>;
  /** Highest rrn passed to publish and made durable (the repository re-publishes later ones after a crash). */
  lastPublishedRrn(): number;
  deliveries(subscriptionId?: string): DeliveryRecord[];
  /** Stops timers, aborts calls in flight (their state stays pending and resumes on the next open). */
  close(): Promise<void>;
}
