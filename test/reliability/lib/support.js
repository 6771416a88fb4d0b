'use strict';
// Shared pieces of the reliability suites (not a test file itself).
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { AssetApiError } = require('../../../dist/api/errors');

/** RELIABILITY_LONG=1 selects the long mode of every suite. */
const LONG = process.env.RELIABILITY_LONG === '1';

/** Picks the short (CI) or the long value. */
function pick(short, long) { return LONG ? long : short; }

function tempDir(prefix = 'dam-reliability-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

function rmDir(dir) {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, check, timeoutMs = 5000, stepMs = 25) {
  const until = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) { last = err; }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
    await sleep(stepMs);
  }
}

function sha256(buffer) {
  return crypto.createHash('sha256').update(buffer).digest('hex');
}

function sha256File(file) {
  return new Promise((resolve, reject) => {
    const hash = crypto.createHash('sha256');
    fs.createReadStream(file).on('data', (c) => hash.update(c)).on('end', () => resolve(hash.digest('hex'))).on('error', reject);
  });
}

/** A sparse file of `size` zero bytes: big on the wire, nothing on disk or in memory. */
function sparseFile(file, size) {
  const fd = fs.openSync(file, 'w');
  try { fs.ftruncateSync(fd, size); } finally { fs.closeSync(fd); }
  return file;
}

/**
 * Records unhandled rejections and uncaught exceptions from now on. `take()` returns and clears
 * what was seen; `stop()` removes the listeners.
 */
function watchProcessFaults() {
  const seen = [];
  const onRejection = (reason) => seen.push(`unhandledRejection: ${reason && reason.stack ? reason.stack : String(reason)}`);
  const onException = (err) => seen.push(`uncaughtException: ${err && err.stack ? err.stack : String(err)}`);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return {
    take() { return seen.splice(0); },
    stop() {
      process.removeListener('unhandledRejection', onRejection);
      process.removeListener('uncaughtException', onException);
    }
  };
}

/**
 * Awaits `promise`, which must reject with an AssetApiError of `kind`; returns the error.
 * `within` (ms) bounds how long it may take.
 */
async function expectFailure(promise, kind, { within } = {}) {
  const started = Date.now();
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  if (!err) throw new Error(`expected an AssetApiError of kind ${kind}, but the call succeeded`);
  if (!(err instanceof AssetApiError)) throw new Error(`expected an AssetApiError of kind ${kind}, got ${err && err.stack}`);
  if (err.kind !== kind) throw new Error(`expected kind ${kind}, got ${err.kind}: ${err.message}`);
  const took = Date.now() - started;
  if (within !== undefined && took > within) throw new Error(`the ${kind} error took ${took} ms, more than ${within} ms`);
  err.took = took;
  return err;
}

/** A full garbage collection, without starting node with --expose-gc (so the baseline is not old garbage). */
function collectGarbage() {
  if (!global.gc) {
    require('v8').setFlagsFromString('--expose-gc');
    global.gc = require('vm').runInNewContext('gc');
  }
  global.gc();
}

/** Samples this process's RSS every `everyMs` until `stop()`, which returns { base, peak, growth } in bytes. */
function rssSampler(everyMs = 20) {
  collectGarbage();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage.rss());
      return { base, peak, growth: peak - base };
    }
  };
}

const MiB = 1024 * 1024;
/**
 * Most RSS growth allowed while a big file streams through this process: the same for 256 MiB
 * and 1 GiB (flat), and well below the smallest file that is streamed (256 MiB).
 */
const RSS_BOUND = 100 * MiB;

/** Figures printed by the suites (one line each, easy to copy into docs/reliability.md). */
function figure(text) {
  console.log(`      [figure] ${text}`);
}

/**
 * The fault suites' set-up: an emulator in `work`, the fault proxy in front of it, a 2 MiB seed
 * asset under /seed and a subscription `subId` (callback nowhere), made directly, not through the proxy.
 */
async function startFaultRig(work, { cookieValue, subId }) {
  const { AssetClient } = require('../../../dist/api/client');
  const { startEmulator } = require('../../../dist/emulator');
  const { startFaultProxy } = require('./fault-proxy');
  const emulator = await startEmulator({
    port: 0, dataDir: path.join(work, 'emulator'), retryDelayMs: 60000,
    sessions: [{ value: cookieValue, permissions: ['events', 'add'] }]
  });
  const proxy = await startFaultProxy(emulator.url);
  const direct = new AssetClient({ baseUrl: emulator.url, cookie: cookieValue });
  const data = crypto.randomBytes(2 * MiB);
  const up = await direct.upload({ file: { buffer: data }, name: 'seed.bin', destination: '/seed', wait: true });
  await direct.registerSubscription(subId, { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' });
  direct.close();
  return { emulator, proxy, seed: { fuid: up.fuids[0], data } };
}

/**
 * Whether Node-RED's log `lines` after index `before` show a deploy's start: a "Started" line
 * after that deploy's "Updated flows". Node-RED answers a deploy before its flows start, and the
 * start-up's own "Started flows" can come in after `before`, so that line alone proves nothing.
 */
function deployStarted(lines, before) {
  const since = lines.slice(before);
  const updated = since.findIndex((l) => /\] Updated flows\s*$/.test(l));
  return updated >= 0 && since.slice(updated + 1).some((l) => /\] Started (flows|modified nodes|modified flows)\s*$/.test(l));
}

module.exports = {
  deployStarted,
  LONG, pick, tempDir, rmDir, sleep, waitFor, sha256, sha256File, sparseFile, watchProcessFaults, expectFailure,
  rssSampler, MiB, RSS_BOUND, figure, startFaultRig
};
