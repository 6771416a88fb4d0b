'use strict';
// Case 3: bursts of change callbacks (spec 2.3 payloads) POSTed by autocannon on loopback to
// asset-event-in (one message per entry, and one per callback) and to the core
// http in -> change -> split flow, in the same Node-RED process.
const autocannon = require('autocannon');
const { performance } = require('perf_hooks');
const { median, sleep } = require('./util');
const { EVENT_PATHS } = require('./flows');
const { readCpu } = require('./rss');

const rotate = (list, n) => list.map((_, i) => list[(i + n) % list.length]);

let sequence = 0; // every entry of the whole run has its own assetId/rrn, so no filter drops any

/** One callback body with `n` entries, built as a string (the load generator must stay cheap). */
function callbackBody(n) {
  const base = sequence * 1000 + 1;
  sequence++;
  let s = '{"success":true,"data":{"entry":[';
  for (let k = 0; k < n; k++) {
    const id = base + k;
    s += `${k ? ',' : ''}{"assetId":${id},"rrn":${id},"path":"/burst/f${id}.bin","owner":"bench","action":"added"}`;
  }
  return s + ']},"id":"bench-burst-subscription"}';
}

/**
 * Runs autocannon and times the burst with our own clock: autocannon's `duration` is counted in
 * its 1-second ticks, far too coarse for bursts of a second or two.
 */
function cannon(opts) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let last = start;
    const instance = autocannon(opts, (err, result) => {
      if (err) return reject(err);
      resolve({ ...result, seconds: (last - start) / 1000 });
    });
    instance.on('response', () => { last = performance.now(); });
  });
}

async function counts(nr) {
  const r = await nr.get('/bench/counts');
  if (r.status !== 200) throw new Error(`GET /bench/counts: HTTP ${r.status}`);
  return r.json();
}

/** Waits until the counter of `variant` stops moving (messages are delivered after the answers). */
async function settledCount(nr, variant, expected) {
  let last = -1;
  let same = 0;
  for (let i = 0; i < 100; i++) {
    const c = (await counts(nr))[variant];
    if (c >= expected) return c;
    if (c === last) { if (++same >= 3) return c; } else same = 0;
    last = c;
    await sleep(100);
  }
  return last;
}

/**
 * One burst: `amount` callbacks of `n` entries at full speed (or at `rate` callbacks/s).
 * Returns entries/s counted, latency percentiles (ms), entries sent and lost, HTTP failures.
 */
async function burst(nr, variant, n, amount, rate) {
  const reset = await nr.post('/bench/reset', {});
  if (reset.status !== 200) throw new Error(`POST /bench/reset: HTTP ${reset.status}`);
  const connections = Math.min(10, amount, rate || Infinity);
  const opts = {
    url: nr.url + EVENT_PATHS[variant], method: 'POST', connections, amount, timeout: 30, sampleInt: 100,
    headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (req) => { req.body = callbackBody(n); return req; } }]
  };
  if (rate) opts.overallRate = rate;
  const cpuBefore = readCpu(nr.pid);
  const r = await cannon(opts);
  // autocannon makes exactly `amount` requests (its `requests.sent` also counts rate-limited tries)
  const sentEntries = amount * n;
  const counted = await settledCount(nr, variant, sentEntries);
  const cpu = readCpu(nr.pid) - cpuBefore; // Node-RED's CPU for this burst (less sensitive to load than time)
  const seconds = r.seconds;
  return {
    callbacks: amount, answered: r.requests.total, ok2xx: r['2xx'], non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts,
    seconds, callbacksPerSec: r['2xx'] / seconds, entriesPerSec: counted / seconds,
    p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max,
    sentEntries, counted, lost: sentEntries - counted, cpuSeconds: cpu, cpuMicrosPerEntry: cpu / counted * 1e6
  };
}

/** Warm-up burst for a fixed time; returns callbacks per second (nothing else is kept). */
async function calibrate(nr, variant, n, seconds) {
  const r = await cannon({
    url: nr.url + EVENT_PATHS[variant], method: 'POST', connections: 10, duration: seconds, timeout: 30, sampleInt: 100,
    headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (req) => { req.body = callbackBody(n); return req; } }]
  });
  await settledCount(nr, variant, Infinity); // the warm-up's messages must be done before the next reset
  // No answer within a short (--quick) warm-up on a loaded machine: 0, so the bursts use their minimum size.
  return r.seconds > 0 ? r['2xx'] / r.seconds : 0;
}

/**
 * @param ctx { nr, opts: { runs, quick }, log, hasOurs, hasRedis }
 * @returns rows: per batch size and variant, the runs and medians
 */
async function runEvents(ctx) {
  const { nr, opts, log } = ctx;
  const variants = ctx.hasOurs ? ['ours', 'batch', ...(ctx.hasRedis ? ['redis'] : []), 'core'] : ['core'];
  const batchSizes = [1, 100, 1000];
  const burstSeconds = opts.quick ? 0.25 : 2;
  const warmSeconds = opts.quick ? 0.2 : 1;
  const results = [];
  for (const n of batchSizes) {
    const rows = {};
    for (const v of variants) {
      const perSec = await calibrate(nr, v, n, warmSeconds);
      rows[v] = { variant: v, entriesPerCallback: n, warmCallbacksPerSec: perSec, max: [], half: [] };
    }
    // full speed, interleaved
    for (let run = 0; run < opts.runs; run++) {
      for (const v of rotate(variants, run)) {
        const amount = Math.max(20, Math.round(rows[v].warmCallbacksPerSec * burstSeconds));
        const b = await burst(nr, v, n, amount);
        rows[v].max.push(b);
        log(`  events ${n}/callback ${v} run ${run + 1}: ${Math.round(b.entriesPerSec)} entries/s, p99 ${b.p99} ms, lost ${b.lost}`);
      }
    }
    // half of each flow's own maximum rate, interleaved
    for (const v of variants) {
      rows[v].maxCallbacksPerSec = median(rows[v].max.map((b) => b.callbacksPerSec));
      rows[v].halfRate = Math.max(1, Math.floor(rows[v].maxCallbacksPerSec / 2));
    }
    for (let run = 0; run < opts.runs; run++) {
      for (const v of rotate(variants, run)) {
        const rate = rows[v].halfRate;
        const amount = Math.max(10, Math.round(rate * burstSeconds));
        const b = await burst(nr, v, n, amount, rate);
        rows[v].half.push(b);
        log(`  events ${n}/callback ${v} at ${rate}/s run ${run + 1}: p99 ${b.p99} ms, lost ${b.lost}`);
      }
    }
    for (const v of variants) {
      const r = rows[v];
      r.entriesPerSec = median(r.max.map((b) => b.entriesPerSec));
      r.p50 = median(r.max.map((b) => b.p50));
      r.p99 = median(r.max.map((b) => b.p99));
      r.halfP50 = median(r.half.map((b) => b.p50));
      r.halfP99 = median(r.half.map((b) => b.p99));
      r.cpuMicrosPerEntry = median(r.max.map((b) => b.cpuMicrosPerEntry));
      r.lost = [...r.max, ...r.half].reduce((s, b) => s + b.lost, 0);
      r.httpFailures = [...r.max, ...r.half].reduce((s, b) => s + b.non2xx + b.errors + b.timeouts, 0);
      results.push(r);
    }
  }
  return results;
}

module.exports = { runEvents, callbackBody };
