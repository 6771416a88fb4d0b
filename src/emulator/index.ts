/**
 * CONTRACT STUB — filled in by the emulator work (issue 2).
 * The local stand-in of the asset server: a real HTTP server that keeps the spec's rules.
 */
import type { Permission } from '../api/types';

export interface EmulatorSession {
  /** Cookie value: valid as `JSESSIONID=<value>`. */
  value: string;
  permissions: Permission[];
}

export interface EmulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8873; 0 picks a free port. */
  port?: number;
  /** Folder holding all state. Default: a new temporary folder. */
  dataDir?: string;
  /** Delay between delivery retries in ms. Default 60000 (spec section 3). */
  retryDelayMs?: number;
  /** Valid sessions. Default one session `local-dev` with events and add. */
  sessions?: EmulatorSession[];
  /** Where log lines go. Default: nowhere. Never receives a cookie value. */
  log?: (line: string) => void;
}

export interface RunningEmulator {
  /** e.g. http://127.0.0.1:8873 (no trailing slash). */
  url: string;
  port: number;
  dataDir: string;
  /** Add or replace a session at run time. */
  addSession(session: EmulatorSession): void;
  /** Invalidate a session (as an expired cookie on a real server). */
  revokeSession(value: string): void;
  /** Stops accepting, ends deliveries in flight, flushes state. */
  close(): Promise<void>;
}

export async function startEmulator(_options: EmulatorOptions = {}): Promise<RunningEmulator> {
  throw new Error('not implemented');
}
