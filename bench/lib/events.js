'use strict';
// Case 3: bursts of change callbacks (spec 2.3 payloads) POSTed by autocannon on loopback to
// asset-event-in (one message per entry, and one per callback) and to the core
// http in -> change -> split flow, in the same Node-RED process.
const http = require('http');
const autocannon = require('autocannon');
const { performance } = require('perf_hooks');
const { median, sleep } = require('./util');
const { EVENT_PATHS } = require('./flows');
const { readCpu } = require('./rss');

const rotate = (list, n) => list.map((_, i) => list[(i + n) % list.length]);

/** Fewest callbacks in one half-rate run of a full bench (so three runs give a p99 of 300 answers). */
const HALF_RATE_MIN_CALLBACKS = 100;

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

/**
 * Waits until the counter of `variant` stops moving (messages are delivered after the answers).
 * Resolves with the count, and for the inbox rows the time (Date.now() in Node-RED) of the last count.
 */
async function settledCount(nr, variant, expected) {
  let last = -1;
  let same = 0;
  let at;
  // The inbox hands entries out after the answers, paced by its fsyncs: a pause of a few hundred ms
  // is not the end of its work (it stops after 5 s without progress, or after 2 minutes).
  const patience = variant === 'inbox' || variant === 'streams' ? 50 : 3;
  for (let i = 0; i < (variant === 'inbox' || variant === 'streams' ? 1200 : 100); i++) {
    const all = await counts(nr);
    const c = all[variant];
    at = all[`${variant}At`];
    if (c >= expected) return { count: c, at };
    if (c === last) { if (++same >= patience) return { count: c, at }; } else same = 0;
    last = c;
    await sleep(100);
  }
  return { count: last, at };
}

/** Nearest-rank percentile of ascending `sorted` values. */
function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] : NaN;
}

const roundedPercentile = (sorted, p) => Math.round(percentile(sorted, p) * 10) / 10;

/**
 * The latencies of every answer of several paced runs together, ascending (a run of big callbacks
 * has only tens of answers, so the p99 of one run is its slowest answer). Takes them off the runs:
 * the results JSON keeps each run's percentiles.
 */
function pooledLatencies(runs) {
  const all = runs.flatMap((b) => b.latencies || []);
  for (const b of runs) delete b.latencies;
  return all.sort((a, b) => a - b);
}

/**
 * Callbacks at an even `rate` per second, open loop: callback i is due at start + i / rate
 * whatever the answers before it, and its latency counts from when it was due (waiting for one
 * of the `connections` keep-alive sockets counts too). Not autocannon's rate limit: that sends
 * each second's quota back to back at the start of the second and then pauses, which is full
 * speed in bursts, and it adds one corrected sample per millisecond of every slow answer
 * (coordinated-omission correction with a 1 ms interval), so its p99 is the tail of full speed.
 * Resolves with the fields of autocannon's result that `burst` reads.
 */
function paced({ url, amount, rate, connections, body }) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  return new Promise((resolve) => {
    const latencies = [];
    const result = { '2xx': 0, non2xx: 0, errors: 0, timeouts: 0 };
    const start = performance.now();
    let last = start;
    let sent = 0;
    let settled = 0;
    const settle = () => {
      if (++settled < amount) return;
      agent.destroy();
      latencies.sort((a, b) => a - b);
      const at = (p) => roundedPercentile(latencies, p);
      resolve({ ...result, requests: { total: settled }, seconds: (last - start) / 1000, latencies,
        latency: { p50: at(50), p90: at(90), p99: at(99), max: at(100) } });
    };
    const fire = (due) => {
      const payload = body();
      const req = http.request({ agent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => res.resume());
      let timedOut = false;
      req.setTimeout(30000, () => { timedOut = true; req.destroy(new Error('timeout')); });
      req.on('error', () => undefined); // counted on 'close'
      // 'close' comes once per request whatever happened (answered, refused, cut off mid-answer).
      req.on('close', () => {
        const res = req.res;
        if (res && res.complete) {
          last = performance.now();
          if (res.statusCode >= 200 && res.statusCode < 300) { result['2xx']++; latencies.push(last - due); } else result.non2xx++;
        } else if (timedOut) result.timeouts++;
        else result.errors++;
        settle();
      });
      req.end(payload);
    };
    const due = (i) => start + i * 1000 / rate;
    const tick = () => {
      const now = performance.now();
      while (sent < amount && due(sent) <= now) fire(due(sent++));
      if (sent < amount) setTimeout(tick, Math.max(0, due(sent) - performance.now()));
    };
    tick();
  });
}

/**
 * One burst: `amount` callbacks of `n` entries at full speed (autocannon, 10 connections, each
 * sending its next callback when the last was answered) or at an even `rate` callbacks/s (paced).
 * Returns entries/s counted, latency percentiles (ms), entries sent and lost, HTTP failures.
 */
async function burst(nr, variant, n, amount, rate, redisMeter) {
  const reset = await nr.post('/bench/reset', {});
  if (reset.status !== 200) throw new Error(`POST /bench/reset: HTTP ${reset.status}`);
  const connections = Math.min(10, amount, rate || Infinity);
  const opts = {
    url: nr.url + EVENT_PATHS[variant], method: 'POST', connections, amount, timeout: 30, sampleInt: 100,
    headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (req) => { req.body = callbackBody(n); return req; } }]
  };
  const redisBefore = redisMeter && await redisMeter.snapshot();
  const cpuBefore = readCpu(nr.pid);
  const began = performance.now();
  const beganAt = Date.now();
  const r = rate
    ? await paced({ url: opts.url, amount, rate, connections, body: () => callbackBody(n) })
    : await cannon(opts);
  // autocannon makes exactly `amount` requests (its `requests.sent` also counts rate-limited tries)
  const sentEntries = amount * n;
  const { count: counted, at: lastCountAt } = await settledCount(nr, variant, sentEntries);
  const cpu = readCpu(nr.pid) - cpuBefore; // Node-RED's CPU for this burst (less sensitive to load than time)
  const redisCost = redisBefore ? await redisMeter.cost(redisBefore, counted) : {};
  // The inbox answers once entries are stored and hands them out after: its entries/s counts until
  // the last acknowledgement was counted (its time as the count function saw it; flows without it:
  // until the poll saw the last count, up to 0.1 s late), not the last answer.
  const inboxRow = (variant === 'inbox' || variant === 'streams') && !rate;
  const countedFor = typeof lastCountAt === 'number' ? (lastCountAt - beganAt) / 1000 : (performance.now() - began) / 1000;
  const seconds = inboxRow ? Math.max(r.seconds, countedFor) : r.seconds;
  return {
    callbacks: amount, answered: r.requests.total, ok2xx: r['2xx'], non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts,
    seconds, answerSeconds: r.seconds, callbacksPerSec: r['2xx'] / seconds, entriesPerSec: counted / seconds,
    p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, latencies: r.latencies,
    sentEntries, counted, lost: sentEntries - counted, cpuSeconds: cpu, cpuMicrosPerEntry: cpu / counted * 1e6,
    redisCpuMicrosPerEntry: redisCost.redisCpuMicrosPerEntry, redisScriptsPerEntry: redisCost.scriptsPerEntry, redisCommandsPerEntry: redisCost.commandsPerEntry
  };
}

const usesRedis = (variant) => variant === 'redis' || variant === 'streams';

/** The Redis figures of a burst, for the progress line. */
function redisText(b) {
  if (b.redisCpuMicrosPerEntry === undefined) return '';
  const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');
  return `; redis-server ${f(b.redisCpuMicrosPerEntry)} µs CPU/entry, ${f(b.redisScriptsPerEntry)} round trips/entry, ${f(b.redisCommandsPerEntry)} commands/entry`;
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
  const variants = ctx.hasOurs ? ['ours', 'batch', ...(ctx.hasInbox ? ['inbox'] : []), ...(ctx.hasRedis ? ['redis'] : []), ...(ctx.hasStreams ? ['streams'] : []), 'core'] : ['core'];
  const batchSizes = [1, 100, 1000];
  const results = [];
  for (const n of batchSizes) {
    // --quick: 1 s at 100 per callback, the size the at-least-once target is set at. That row's time
    // runs until its backlog (up to about 1000 stored entries) is acknowledged, 20 to 50 ms after the
    // last answer: 8 to 18 % of a 0.25 s burst, 2 to 5 % of a 1 s one (docs/performance.md Follow-up 11).
    const burstSeconds = opts.quick ? (n === 100 ? 1 : 0.25) : 2;
    const warmSeconds = opts.quick && n !== 100 ? 0.2 : 1;
    const rows = {};
    for (const v of variants) {
      const perSec = await calibrate(nr, v, n, warmSeconds);
      rows[v] = { variant: v, entriesPerCallback: n, warmCallbacksPerSec: perSec, max: [], half: [] };
    }
    // full speed, interleaved
    for (let run = 0; run < opts.runs; run++) {
      for (const v of rotate(variants, run)) {
        const amount = Math.max(20, Math.round(rows[v].warmCallbacksPerSec * burstSeconds));
        const b = await burst(nr, v, n, amount, undefined, usesRedis(v) ? ctx.redisMeter : undefined);
        rows[v].max.push(b);
        log(`  events ${n}/callback ${v} run ${run + 1}: ${Math.round(b.entriesPerSec)} entries/s, p99 ${b.p99} ms, lost ${b.lost}${redisText(b)}`);
      }
    }
    // half of each flow's own maximum rate, interleaved
    for (const v of variants) {
      rows[v].maxCallbacksPerSec = median(rows[v].max.map((b) => b.callbacksPerSec));
      rows[v].halfRate = Math.max(1, Math.floor(rows[v].maxCallbacksPerSec / 2));
    }
    // Each flow at half its own maximum; and asset-event-in (one msg per entry) also at the core
    // flow's half rate, where its p99 is compared with the core flow's at the same load (its own
    // half rate is higher when it is faster). All interleaved, the order rotating per run.
    const paces = variants.map((v) => ({ v, rate: rows[v].halfRate, runs: rows[v].half, label: `at ${rows[v].halfRate}/s` }));
    if (rows.core && rows.ours && rows.ours.halfRate !== rows.core.halfRate) {
      rows.ours.coreRate = [];
      paces.push({ v: 'ours', rate: rows.core.halfRate, runs: rows.ours.coreRate, label: `at the core flow's ${rows.core.halfRate}/s` });
    }
    for (let run = 0; run < opts.runs; run++) {
      for (const pace of rotate(paces, run)) {
        const amount = Math.max(opts.quick ? 10 : HALF_RATE_MIN_CALLBACKS, Math.round(pace.rate * burstSeconds));
        const b = await burst(nr, pace.v, n, amount, pace.rate);
        pace.runs.push(b);
        log(`  events ${n}/callback ${pace.v} ${pace.label} run ${run + 1}: p99 ${b.p99} ms, lost ${b.lost}`);
      }
    }
    for (const v of variants) {
      const r = rows[v];
      r.entriesPerSec = median(r.max.map((b) => b.entriesPerSec));
      r.p50 = median(r.max.map((b) => b.p50));
      r.p99 = median(r.max.map((b) => b.p99));
      const pooled = pooledLatencies(r.half);
      r.halfSamples = pooled.length;
      r.halfP50 = roundedPercentile(pooled, 50);
      r.halfP99 = roundedPercentile(pooled, 99);
      // The core flow's half rate: its own, and asset-event-in's when that is the same rate.
      if (r.coreRate) r.coreRateP99 = roundedPercentile(pooledLatencies(r.coreRate), 99);
      else if (rows.core && (v === 'core' || v === 'ours')) r.coreRateP99 = r.halfP99;
      const runs = [...r.max, ...r.half, ...(r.coreRate || [])];
      r.lost = runs.reduce((s, b) => s + b.lost, 0);
      r.httpFailures = runs.reduce((s, b) => s + b.non2xx + b.errors + b.timeouts, 0);
      r.cpuMicrosPerEntry = median(r.max.map((b) => b.cpuMicrosPerEntry));
      if (usesRedis(v) && ctx.redisMeter) {
        r.redisCpuMicrosPerEntry = median(r.max.map((b) => b.redisCpuMicrosPerEntry));
        r.redisScriptsPerEntry = median(r.max.map((b) => b.redisScriptsPerEntry));
        r.redisCommandsPerEntry = median(r.max.map((b) => b.redisCommandsPerEntry));
      }
      results.push(r);
    }
  }
  return results;
}

module.exports = { runEvents, callbackBody, paced, burst, calibrate };
