#!/usr/bin/env node
/**
 * `dam-emulator`: runs the emulator until SIGTERM or SIGINT.
 *
 *   dam-emulator [--host 127.0.0.1] [--port 8873] [--data DIR] [--retry-delay 60s]
 *                [--ingest-delay 0s] [--session VALUE:PERMS[:USER] ...] [--quiet]
 */
import * as path from 'path';
import { parseArgs } from 'util';
import type { Permission } from '../api/types';
import { DEFAULT_PORT, DEFAULT_SESSION, startEmulator, type EmulatorSession } from './index';

export const DEFAULT_DATA_DIR = '.dam-emulator';

const USAGE = `usage: dam-emulator [--host 127.0.0.1] [--port ${DEFAULT_PORT}] [--data DIR] [--retry-delay 60s]
                    [--ingest-delay 0s] [--session VALUE:PERMS[:USER] ...] [--quiet]

  --host HOST            address to listen on (default 127.0.0.1)
  --port PORT            TCP port, 0 picks a free one (default ${DEFAULT_PORT})
  --data DIR             folder holding all state (default ./${DEFAULT_DATA_DIR})
  --retry-delay TIME     delay between callback retries: a number with ms, s or m (default 60s)
  --ingest-delay TIME    every ingest takes at least this long: a slow server, to try out
                         waitInMinutes and timeouts (default 0s)
  --session V:PERMS      makes the cookie JSESSIONID=V valid with PERMS, a comma list of
                         events and add (may be empty: "viewer:"); an optional :USER names the
                         owner of what it adds. Repeatable. Default: local-dev:events,add
  --quiet                no request log lines
`;

export class UsageError extends Error {}

/** `60s`, `500ms`, `2m`, `1.5s` -> milliseconds. */
export function parseDuration(text: string, option = '--retry-delay'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text.trim());
  if (!m) throw new UsageError(`${option} must be a number followed by ms, s or m (for example 60s), got ${JSON.stringify(text)}`);
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
  return Math.round(ms);
}

/** `VALUE:PERMS[:USER]` -> session. The value must be a valid cookie value (RFC 6265 cookie-octets). */
export function parseSession(text: string): EmulatorSession {
  const first = text.indexOf(':');
  if (first < 0) throw new UsageError(`--session must be VALUE:PERMS (for example local-dev:events,add or viewer:), got ${JSON.stringify(text)}`);
  const value = text.slice(0, first);
  const rest = text.slice(first + 1);
  const second = rest.indexOf(':');
  const permsText = second < 0 ? rest : rest.slice(0, second);
  const user = second < 0 ? undefined : rest.slice(second + 1);
  if (!/^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/.test(value)) {
    throw new UsageError('--session: the cookie value must be non-empty printable ASCII without spaces, quotes, commas, semicolons or backslashes');
  }
  const permissions: Permission[] = [];
  for (const p of permsText.split(',').map(s => s.trim()).filter(s => s !== '')) {
    if (p !== 'events' && p !== 'add') throw new UsageError(`--session: unknown permission ${JSON.stringify(p)} (allowed: events, add)`);
    if (!permissions.includes(p)) permissions.push(p);
  }
  if (user !== undefined && user.trim() === '') throw new UsageError('--session: the user name after the second ":" must not be empty');
  return user === undefined ? { value, permissions } : { value, permissions, user: user.trim() };
}

export interface CliOptions {
  host: string; port: number; dataDir: string; retryDelayMs: number; ingestDelayMs: number; sessions: EmulatorSession[]; quiet: boolean; help: boolean;
}

export function parseCli(argv: string[]): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: 'string' }, port: { type: 'string' }, data: { type: 'string' }, 'retry-delay': { type: 'string' },
        'ingest-delay': { type: 'string' }, session: { type: 'string', multiple: true }, quiet: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }
      }
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values;
  const portText = v.port ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`);
  const host = v.host ?? '127.0.0.1';
  if (host === '') throw new UsageError('--host must not be empty');
  return {
    host, port,
    dataDir: path.resolve(v.data ?? DEFAULT_DATA_DIR),
    retryDelayMs: v['retry-delay'] === undefined ? 60_000 : parseDuration(v['retry-delay']),
    ingestDelayMs: v['ingest-delay'] === undefined ? 0 : parseDuration(v['ingest-delay'], '--ingest-delay'),
    sessions: v.session ? v.session.map(parseSession) : [DEFAULT_SESSION],
    quiet: !!v.quiet,
    help: !!v.help
  };
}

async function main(): Promise<void> {
  let options: CliOptions;
  try { options = parseCli(process.argv.slice(2)); } catch (e) {
    process.stderr.write(`dam-emulator: ${(e as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options.help) { process.stdout.write(USAGE); return; }
  const stamp = () => new Date().toISOString();
  const emulator = await startEmulator({
    host: options.host, port: options.port, dataDir: options.dataDir, retryDelayMs: options.retryDelayMs,
    ingestDelayMs: options.ingestDelayMs, sessions: options.sessions,
    log: options.quiet ? undefined : line => process.stdout.write(`${stamp()} ${line}\n`)
  });
  // One write, so a reader sees the cookies together with the listening line.
  const banner = [`dam-emulator listening on ${emulator.url}`, `data folder: ${emulator.dataDir}`];
  // The cookie values are what a user needs to call the emulator: printed here, and nowhere else.
  for (const s of options.sessions) {
    banner.push(`cookie: JSESSIONID=${s.value} (permissions: ${s.permissions.length ? s.permissions.join(', ') : 'none'}${s.user ? `; user ${s.user}` : ''})`);
  }
  process.stdout.write(banner.join('\n') + '\n');

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) { process.stderr.write(`dam-emulator: ${signal} again, exiting at once\n`); process.exit(1); }
    stopping = true;
    process.stdout.write(`dam-emulator: ${signal} received, shutting down\n`);
    emulator.close().then(() => process.exit(0), e => { process.stderr.write(`dam-emulator: error while shutting down: ${(e as Error).message}\n`); process.exit(1); });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('unhandledRejection', e => process.stderr.write(`dam-emulator: unhandled rejection: ${(e as Error)?.stack ?? String(e)}\n`));
}

if (require.main === module) {
  main().catch(e => {
    process.stderr.write(`dam-emulator: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
