#!/usr/bin/env node
/**
 * `dam-emulator`: runs the emulator until SIGTERM or SIGINT.
 *
 *   dam-emulator [--host 127.0.0.1] [--port 8873] [--data DIR] [--retry-delay 60s]
 *                [--ingest-delay 0s] [--session VALUE:PERMS[:USER] ...] [--user NAME:PASSWORD:PERMS ...]
 *                [--session-idle SECONDS] [--session-max-age SECONDS] [--one-session-per-user] [--form-charset iso-8859-1|utf-8] [--quiet]
 *                [--max-upload SIZE] [--max-zip-ratio N] [--max-zip-size SIZE] [--max-zip-entries N]
 */
import * as path from 'path';
import { parseArgs } from 'util';
import type { Permission } from '../api/types';
import { DEFAULT_PORT, DEFAULT_SESSION, startEmulator, type EmulatorSession, type EmulatorUser } from './index';
import { DEFAULT_FORM_CHARSET, FORM_CHARSETS, type FormCharset } from './charset';
import { parseSize } from './limits';

export const DEFAULT_DATA_DIR = '.dam-emulator';

const USAGE = `usage: dam-emulator [--host 127.0.0.1] [--port ${DEFAULT_PORT}] [--data DIR] [--retry-delay 60s]
                    [--ingest-delay 0s] [--session VALUE:PERMS[:USER] ...] [--user NAME:PASSWORD:PERMS ...]
                    [--session-idle SECONDS] [--session-max-age SECONDS] [--one-session-per-user]
                    [--form-charset iso-8859-1|utf-8] [--quiet]
                    [--max-upload SIZE] [--max-zip-ratio N] [--max-zip-size SIZE] [--max-zip-entries N]

  --host HOST            address to listen on (default 127.0.0.1)
  --port PORT            TCP port, 0 picks a free one (default ${DEFAULT_PORT})
  --data DIR             folder holding all state (default ./${DEFAULT_DATA_DIR})
  --retry-delay TIME     delay between callback retries: a number with ms, s or m (default 60s)
  --ingest-delay TIME    every ingest takes at least this long: a slow server, to try out
                         waitInMinutes and timeouts (default 0s)
  --session V:PERMS      makes the cookie JSESSIONID=V valid with PERMS, a comma list of
                         events and add (may be empty: "viewer:"); an optional :USER names the
                         owner of what it adds. Repeatable. Default: local-dev:events,add
  --form-charset CS      charset of a form or multipart body that declares none: iso-8859-1
                         (default, what a servlet container does) or utf-8
  --user N:PASSWORD:PERMS
                         a user who may log in (GET /command utility call, or POST
                         /review/j_security_check form login) and gets a new session with
                         PERMS (events,add; may be empty). Repeatable. Default: none
  --session-idle S       a session unused for S seconds expires (default: never)
  --session-max-age S    a session expires S seconds after it was made (default: never)
  --one-session-per-user a login ends that user's other sessions, as the vendor's licence
                         (one active session per named user) has it (default: off)
  --quiet                no request log lines
  --max-upload SIZE      largest uploaded file, e.g. 500MB or 2GiB (default 10GB)
  --max-zip-ratio N      a zip archive may expand to at most N times its size (default 100)
  --max-zip-size SIZE    ... and to at most SIZE (default 10GB); a larger one is refused
  --max-zip-entries N    ... and hold at most N files and folders (default 10000)
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
  const permissions = parsePermissions('--session', permsText);
  if (user !== undefined && user.trim() === '') throw new UsageError('--session: the user name after the second ":" must not be empty');
  return user === undefined ? { value, permissions } : { value, permissions, user: user.trim() };
}

/** `NAME:PASSWORD:PERMS` -> user. The password may hold ":" (the name ends at the first, the permissions start after the last). */
export function parseUser(text: string): EmulatorUser {
  const first = text.indexOf(':');
  const last = text.lastIndexOf(':');
  if (first <= 0 || last === first) throw new UsageError(`--user must be NAME:PASSWORD:PERMS (for example alice:s3cret:events,add), got a value without two ":"`);
  const name = text.slice(0, first).trim();
  const password = text.slice(first + 1, last);
  if (name === '') throw new UsageError('--user: the name must not be empty');
  if (password === '') throw new UsageError('--user: the password must not be empty');
  return { name, password, permissions: parsePermissions('--user', text.slice(last + 1)) };
}

function parsePermissions(option: string, text: string): Permission[] {
  const permissions: Permission[] = [];
  for (const p of text.split(',').map(s => s.trim()).filter(s => s !== '')) {
    if (p !== 'events' && p !== 'add') throw new UsageError(`${option}: unknown permission ${JSON.stringify(p)} (allowed: events, add)`);
    if (!permissions.includes(p)) permissions.push(p);
  }
  return permissions;
}

function parseSeconds(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(text.trim())) throw new UsageError(`${option} must be a number of seconds (0 = never), got ${JSON.stringify(text)}`);
  return Number(text);
}

export interface CliOptions {
  host: string; port: number; dataDir: string; retryDelayMs: number; ingestDelayMs: number; sessions: EmulatorSession[]; quiet: boolean; help: boolean;
  formCharset: FormCharset;
  users: EmulatorUser[]; sessionIdle?: number; sessionMaxAge?: number; oneSessionPerUser: boolean;
  maxUploadBytes?: number; maxZipRatio?: number; maxZipBytes?: number; maxZipEntries?: number;
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
        'ingest-delay': { type: 'string' }, session: { type: 'string', multiple: true }, user: { type: 'string', multiple: true },
        'session-idle': { type: 'string' }, 'session-max-age': { type: 'string' }, 'one-session-per-user': { type: 'boolean' }, 'form-charset': { type: 'string' },
        'max-upload': { type: 'string' }, 'max-zip-ratio': { type: 'string' }, 'max-zip-size': { type: 'string' }, 'max-zip-entries': { type: 'string' },
        quiet: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }
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
  const formCharset = (v['form-charset'] ?? DEFAULT_FORM_CHARSET).toLowerCase() as FormCharset;
  if (!FORM_CHARSETS.includes(formCharset)) {
    throw new UsageError(`--form-charset must be ${FORM_CHARSETS.join(' or ')}, got ${JSON.stringify(v['form-charset'])}`);
  }
  const size = (option: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    try { return parseSize(text, option); } catch (e) { throw new UsageError((e as Error).message); }
  };
  const ratioText = v['max-zip-ratio'];
  if (ratioText !== undefined && !(/^\d+(\.\d+)?$/.test(ratioText.trim()) && Number(ratioText) > 0)) {
    throw new UsageError(`--max-zip-ratio must be a number above 0, got ${JSON.stringify(ratioText)}`);
  }
  const entriesText = v['max-zip-entries'];
  if (entriesText !== undefined && !(/^\d+$/.test(entriesText.trim()) && Number(entriesText) > 0)) {
    throw new UsageError(`--max-zip-entries must be a whole number above 0, got ${JSON.stringify(entriesText)}`);
  }
  return {
    maxUploadBytes: size('--max-upload', v['max-upload']),
    maxZipEntries: entriesText === undefined ? undefined : Number(entriesText),
    maxZipRatio: ratioText === undefined ? undefined : Number(ratioText),
    maxZipBytes: size('--max-zip-size', v['max-zip-size']),
    host, port,
    dataDir: path.resolve(v.data ?? DEFAULT_DATA_DIR),
    retryDelayMs: v['retry-delay'] === undefined ? 60_000 : parseDuration(v['retry-delay']),
    ingestDelayMs: v['ingest-delay'] === undefined ? 0 : parseDuration(v['ingest-delay'], '--ingest-delay'),
    sessions: v.session ? v.session.map(parseSession) : [DEFAULT_SESSION],
    users: v.user ? v.user.map(parseUser) : [],
    sessionIdle: parseSeconds('--session-idle', v['session-idle']),
    sessionMaxAge: parseSeconds('--session-max-age', v['session-max-age']),
    oneSessionPerUser: !!v['one-session-per-user'],
    quiet: !!v.quiet,
    help: !!v.help,
    formCharset
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
    formCharset: options.formCharset,
    maxUploadBytes: options.maxUploadBytes, maxZipRatio: options.maxZipRatio, maxZipBytes: options.maxZipBytes, maxZipEntries: options.maxZipEntries,
    users: options.users, sessionIdle: options.sessionIdle, sessionMaxAge: options.sessionMaxAge, oneSessionPerUser: options.oneSessionPerUser,
    log: options.quiet ? undefined : line => process.stdout.write(`${stamp()} ${line}\n`)
  });
  // One write, so a reader sees the cookies together with the listening line.
  const banner = [`dam-emulator listening on ${emulator.url}`, `data folder: ${emulator.dataDir}`];
  // The cookie values are what a user needs to call the emulator: printed here, and nowhere else.
  for (const s of options.sessions) {
    banner.push(`cookie: JSESSIONID=${s.value} (permissions: ${s.permissions.length ? s.permissions.join(', ') : 'none'}${s.user ? `; user ${s.user}` : ''})`);
  }
  // Passwords are not printed: the user gave them on the command line.
  for (const u of options.users) banner.push(`login: user ${u.name} (permissions: ${u.permissions.length ? u.permissions.join(', ') : 'none'})`);
  if (options.sessionIdle || options.sessionMaxAge) {
    banner.push(`sessions expire: ${options.sessionIdle ? `after ${options.sessionIdle} s idle` : ''}${options.sessionIdle && options.sessionMaxAge ? ', ' : ''}${options.sessionMaxAge ? `${options.sessionMaxAge} s after they are made` : ''}`);
  }
  if (options.oneSessionPerUser) banner.push('one session per user: a login ends that user\'s other sessions');
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
