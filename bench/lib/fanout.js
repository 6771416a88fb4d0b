'use strict';
// Case 4: emulator fan-out. 1000 subscriptions call back a local receiver; 100 of them watch
// `* /fan`, the others `* /other-N`. One upload to /fan must reach the 100 quickly.
const http = require('http');
const crypto = require('crypto');
const { performance } = require('perf_hooks');
const { median, request, sleep, waitFor } = require('./util');
const { readMemory, measurePeak } = require('./rss');

const SUBSCRIBE = '/review/api/events/assets/subscribe/';

/** A callback receiver on 127.0.0.1 that counts POSTs per subscription for the current run. */
function startReceiver() {
  const state = { hits: new Map(), strays: 0, runPath: '', watchers: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let body;
      try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { body = undefined; }
      const entries = (body && body.data && body.data.entry) || [];
      const mine = entries.some((e) => e && typeof e.path === 'string' && e.path.startsWith(state.runPath));
      res.statusCode = 200;
      res.end('{"success":true}');
      if (mine) {
        state.hits.set(body.id, (state.hits.get(body.id) || 0) + 1);
        for (const w of state.watchers.splice(0)) w();
      } else {
        state.strays++;
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const url = `http://127.0.0.1:${server.address().port}`;
    resolve({
      url, state,
      reset(runPath) { state.hits = new Map(); state.strays = 0; state.runPath = runPath; },
      /** Resolves when `count` distinct subscriptions were called for this run. */
      until(count, timeoutMs) {
        return new Promise((ok, fail) => {
          const timer = setTimeout(() => fail(new Error(`only ${state.hits.size} of ${count} deliveries within ${timeoutMs} ms`)), timeoutMs);
          const check = () => {
            if (state.hits.size >= count) { clearTimeout(timer); ok(performance.now()); } else state.watchers.push(check);
          };
          check();
        });
      },
      close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); })
    });
  }));
}

function form(fields) {
  const p = new URLSearchParams();
  for (const [k, v] of fields) p.append(k, v);
  return p.toString();
}

/** A small multipart upload (wait=true), built by hand so this case depends on the emulator only. */
async function uploadSmall(emulator, cookie, destination, name) {
  const boundary = 'bench' + crypto.randomBytes(8).toString('hex');
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="destination"\r\n\r\n${destination}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="wait"\r\n\r\ntrue\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    crypto.randomBytes(1024),
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ]);
  const r = await request('POST', emulator.url + '/review/api/asset/upload', {
    body, headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` }
  });
  const json = r.status === 200 ? r.json() : undefined;
  if (!json || json.success !== true) throw new Error(`upload to ${destination}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
  return json;
}

/**
 * @param ctx { emulator (fresh), cookie, opts: { runs, quick }, log }
 */
async function runFanout(ctx) {
  const { emulator, cookie, opts, log } = ctx;
  const total = 1000;
  const matching = 100;
  const receiver = await startReceiver();
  const idleRss = readMemory(emulator.pid).rss;
  try {
    // Register the subscriptions, 16 at a time.
    const t0 = performance.now();
    let next = 0;
    async function worker() {
      while (next < total) {
        const i = next++;
        const id = `bench-fan-${String(i).padStart(4, '0')}`;
        const body = form([
          ['callback', `${receiver.url}/cb/${i}`], ['method', 'POST'], ['retryCount', '3'],
          ['watchPath', i < matching ? '* /fan' : `* /other-${i}`]
        ]);
        const r = await request('POST', emulator.url + SUBSCRIBE + id, {
          body, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }
        });
        const json = r.status === 200 ? r.json() : undefined;
        if (!json || json.success !== true) throw new Error(`subscribe ${id}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
      }
    }
    await Promise.all(Array.from({ length: 16 }, worker));
    const registerMs = performance.now() - t0;
    await sleep(200);
    const afterSubscribeRss = readMemory(emulator.pid).rss;
    log(`  fan-out: ${total} subscriptions registered in ${Math.round(registerMs)} ms`);

    const runs = [];
    for (let run = 0; run < opts.runs; run++) {
      const dir = `/fan/run-${run + 1}`;
      receiver.reset(dir + '/');
      const m = await measurePeak(emulator.pid, async () => {
        const start = performance.now();
        const reached = receiver.until(matching, 30000);
        reached.catch(() => undefined); // awaited below; an upload still under way must not make it unhandled
        await uploadSmall(emulator, cookie, dir, `change-${run + 1}.bin`);
        const answered = performance.now();
        const end = await reached;
        return { fromUploadStartMs: end - start, fromUploadAnswerMs: end - answered };
      });
      // The emulator's own record: all 100 deliveries of this change succeeded, and no others were made.
      const states = await waitFor(async () => {
        const r = await request('GET', emulator.url + '/emulator/deliveries', { headers: { cookie } });
        if (r.status !== 200) throw new Error(`GET /emulator/deliveries: HTTP ${r.status}`);
        const json = r.json();
        const list = Array.isArray(json) ? json : (json.deliveries || []);
        const mine = list.filter((d) => (d.entries || []).some((e) => String(e.path || '').startsWith(dir + '/')));
        const succeeded = mine.filter((d) => d.state === 'succeeded').length;
        return succeeded >= matching ? { deliveries: mine.length, succeeded } : null;
      }, { timeout: 10000, interval: 100, what: `${matching} succeeded deliveries in /emulator/deliveries` });
      await sleep(300); // let any wrong delivery to a non-matching subscription arrive
      runs.push({ ...m.result, ...states, strays: receiver.state.strays, peakRss: m.peak, rssGrowth: m.growth });
      log(`  fan-out run ${run + 1}: ${Math.round(m.result.fromUploadStartMs)} ms to ${matching} deliveries`);
    }
    return {
      subscriptions: total, matching, registerMs, idleRss, afterSubscribeRss, runs,
      ms: median(runs.map((r) => r.fromUploadStartMs)),
      msFromAnswer: median(runs.map((r) => r.fromUploadAnswerMs)),
      peakRss: Math.max(...runs.map((r) => r.peakRss)),
      strays: runs.reduce((s, r) => s + r.strays, 0)
    };
  } finally {
    await receiver.close();
  }
}

module.exports = { runFanout };
