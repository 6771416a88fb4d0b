'use strict';
// Reliability suite 6: load. In a real Node-RED (the project's launcher), 20 parallel uploads of
// 50 MiB go through asset-upload nodes to the emulator (a separate dam-emulator process), while an
// asset-event-in takes 200 callbacks per second for 10 s (short mode) or 60 s (RELIABILITY_LONG=1).
// Measured inside Node-RED: event loop delay (perf_hooks.monitorEventLoopDelay in a function node)
// and message counts; from outside: Node-RED's RSS from /proc.
// Pass: every upload succeeds and is stored byte-identical (sha256 of the download); every callback
// is answered 200 and every entry reaches the counter once; heap and RSS at the end within bounds
// of the warm-up. Long mode also holds the callback rate and event loop delay p99 < 100 ms to limits.
require('should');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');
const { spawnCli } = require('../emulator/support');
const { AssetClient } = require('../../dist/api/client');
const {
  LONG, pick, figure, tempDir, rmDir, sleep, launchNodeRed, ids, monitorNodes, monitorStats, monitorReset, rssOf, MiB, mib
} = require('./lib/rig');

const UPLOADS = 20;
const FILE_BYTES = 50 * MiB;
const CALLBACKS_PER_S = 200;
const DURATION_MS = pick(10000, 60000);
/** Rounds of UPLOADS parallel uploads during the callbacks (after one more round in the warm-up). */
const ROUNDS = pick(2, 4);
const LAG_P99_LIMIT_MS = 100;
/** A callback not answered within this is a failure (a hang); generous in short mode, which shares its machine. */
const ANSWER_LIMIT_MS = pick(30000, 10000);
/**
 * Memory is compared after the warm-up and at the end, each time after a full garbage collection
 * (run inside Node-RED). The flow keeps no per-upload or per-callback state except the duplicate
 * filter (at most 10,000 keys, about 1 MiB), while GiBs of file data and thousands of messages pass
 * through: anything that kept a share of them would exceed these bounds many times over.
 * - Heap in use (what is still referenced): within HEAP_BOUND.
 * - RSS: within MEMORY_BOUND (long mode only; a figure in the short mode, see below); beyond the heap it holds memory the allocator keeps after freeing
 *   (stream and socket buffers of 20 parallel transfers: 20 x a few 64 KiB chunks at a time) and
 *   heap pages V8 does not return at once.
 */
const HEAP_BOUND = 16 * MiB;
const MEMORY_BOUND = 64 * MiB;
const signed = (bytes) => `${bytes >= 0 ? '+' : '-'}${mib(Math.abs(bytes))}`;

describe(`reliability 6: load (${LONG ? 'long' : 'short'} mode: ${UPLOADS} x 50 MiB uploads, ${CALLBACKS_PER_S} callbacks/s for ${DURATION_MS / 1000} s)`, function () {
  // A hang detector, not a speed limit: with two CPU hogs beside it the short mode took up to 57 s
  // (of 58 s before); each callback has its own ANSWER_LIMIT_MS.
  this.timeout(pick(180000, 600000));
  let emulator;
  let emulatorDir;
  let workDir;
  let bigFile;
  let bigSha;
  let rig;
  let agent;

  before(async function () {
    workDir = tempDir('dam-load-');
    bigFile = path.join(workDir, 'big.bin');
    const hash = crypto.createHash('sha256');
    const fd = fs.openSync(bigFile, 'w');
    for (let i = 0; i < FILE_BYTES / MiB; i++) {
      const chunk = crypto.randomBytes(MiB);
      hash.update(chunk);
      fs.writeSync(fd, chunk);
    }
    fs.closeSync(fd);
    bigSha = hash.digest('hex');

    emulatorDir = tempDir('dam-load-emu-');
    emulator = await spawnCli(['--port', '0', '--data', emulatorDir, '--quiet']);
    rig = await launchNodeRed();
    const next = ids('c6');
    const tab = { id: next(), type: 'tab', label: 'load' };
    const monitor = monitorNodes(tab.id, next);
    const server = { id: next(), type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 60, credentials: { cookie: 'local-dev' } };
    const uploadIn = next();
    const upload = next();
    const done = next();
    const respond = next();
    const catcher = next();
    const failed = next();
    const flows = [
      tab, server, ...monitor.nodes,
      { id: uploadIn, type: 'http in', z: tab.id, name: 'upload', url: '/load/upload', method: 'post', upload: false, wires: [[`${uploadIn}-f`]] },
      { id: `${uploadIn}-f`, type: 'function', z: tab.id, name: 'file', outputs: 1, libs: [],
        func: 'msg.filename = msg.payload.file; msg.name = msg.payload.name; return msg;', wires: [[upload]] },
      { id: upload, type: 'asset-upload', z: tab.id, name: 'upload', server: server.id,
        filename: 'filename', filenameType: 'msg', assetName: 'name', assetNameType: 'msg', destination: '/load', destinationType: 'str',
        destinationFuid: '', destinationFuidType: 'num', collectionId: '', collectionIdType: 'num', wait: 'true', waitType: 'bool',
        waitInMinutes: '', waitInMinutesType: 'num', expandZip: 'false', expandZipType: 'bool', maxInFlight: UPLOADS, wires: [[done]] },
      { id: done, type: 'function', z: tab.id, name: 'result', outputs: 1, libs: [],
        func: 'msg.payload = { fuid: msg.fuid, rrn: msg.rrn, length: msg.payload.length }; return msg;', wires: [[respond]] },
      { id: respond, type: 'http response', z: tab.id, name: '', statusCode: '', headers: {}, wires: [] },
      { id: catcher, type: 'catch', z: tab.id, name: '', scope: [upload], uncaught: false, wires: [[failed]] },
      { id: failed, type: 'function', z: tab.id, name: 'failed', outputs: 1, libs: [],
        func: 'msg.statusCode = 502; msg.payload = { error: msg.error && msg.error.message }; return msg;', wires: [[respond]] },
      { id: next(), type: 'asset-event-in', z: tab.id, name: 'events', method: 'post', path: '/load/events', wires: [[monitor.counter]] }
    ];
    await rig.deploy(flows);
    agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  });

  after(async function () {
    if (agent) agent.destroy();
    if (process.env.RELIABILITY_DEBUG && rig) console.log(rig.lines.join('\n'));
    if (rig) await rig.close();
    if (emulator) { emulator.child.kill('SIGTERM'); await emulator.exited; }
    rmDir(emulatorDir);
    rmDir(workDir);
  });

  function post(urlPath, body, timeoutMs) {
    return new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const req = http.request(`${rig.url}${urlPath}`, {
        method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }
      }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          const out = Buffer.concat(chunks).toString('utf8');
          try { resolve({ status: res.statusCode, json: JSON.parse(out) }); } catch { resolve({ status: res.statusCode, text: out }); }
        });
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      req.on('error', (e) => { clearTimeout(timer); reject(e); });
      req.end(text);
    });
  }

  /** Sends callbacks at `perSecond` for `ms`; each has 1 to 3 entries with keys never used before. */
  async function callbacks(perSecond, ms, state) {
    const started = Date.now();
    const pending = [];
    let sent = 0;
    while (Date.now() - started < ms) {
      const due = Math.floor(((Date.now() - started) / 1000) * perSecond);
      for (; sent < due; sent++) {
        const n = 1 + (state.next % 3);
        const entry = Array.from({ length: n }, () => {
          const k = ++state.next;
          return { assetId: 1000000 + k, rrn: 5000000 + k, path: `/load/cb-${k}.txt`, owner: 'load', action: 'added' };
        });
        state.entries += n;
        pending.push(post('/load/events', { success: true, id: 'load-subscription', data: { entry } }, ANSWER_LIMIT_MS).then((r) => {
          if (r.status !== 200 || !r.json || r.json.emitted !== n) state.bad.push(`${r.status} ${JSON.stringify(r.json || r.text)}`);
          else state.ok++;
        }, (err) => state.bad.push(err.message)));
      }
      await sleep(5);
    }
    await Promise.all(pending);
    state.sent += sent;
    state.ms += Date.now() - started;
  }

  /** One round: UPLOADS uploads at once; resolves with the answers (and when each came). */
  async function uploadRound(round) {
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: UPLOADS }, (_, i) =>
      post('/load/upload', { file: bigFile, name: `big-${round}-${i}.bin` }, 300000).then((r) => ({ ...r, took: Date.now() - started }))));
    return { results, ms: Date.now() - started };
  }

  it('uploads all files intact, emits every callback entry once, keeps the event loop responsive and memory flat', async function () {
    // Warm-up: callbacks for 2 s with one round of 20 uploads, so that code paths are compiled and
    // the heap and buffer pools reach their working size before the baseline is taken.
    const warm = { next: 0, entries: 0, ok: 0, bad: [], sent: 0, ms: 0 };
    const warmRound = uploadRound('warm');
    await callbacks(CALLBACKS_PER_S, 2000, warm);
    const rounds = [await warmRound];
    warm.bad.should.eql([]);
    await sleep(1000);
    const before = (await monitorStats(rig, { gc: true })).memory;
    await monitorReset(rig); // after the collection: its pause is not counted as event loop delay
    const baseline = rssOf(rig.pid);

    // The load: callbacks for DURATION_MS; meanwhile ROUNDS rounds of 20 parallel uploads, spread over it.
    const state = { next: 1e6, entries: 0, ok: 0, bad: [], sent: 0, ms: 0 };
    let peak = baseline;
    const sampler = setInterval(() => { const r = rssOf(rig.pid); if (r > peak) peak = r; }, 100);
    const loadStarted = Date.now();
    const uploading = (async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const wait = loadStarted + 1000 + (round * (DURATION_MS - 1000)) / ROUNDS - Date.now();
        if (wait > 0) await sleep(wait);
        rounds.push(await uploadRound(round));
      }
    })();
    await callbacks(CALLBACKS_PER_S, DURATION_MS, state);
    await uploading;
    await sleep(1000); // messages in flight reach the counter
    const stats = await monitorStats(rig);
    clearInterval(sampler);
    const after = (await monitorStats(rig, { gc: true })).memory;
    const end = rssOf(rig.pid);

    // Uploads: all succeeded, one new asset each, stored byte-identical.
    const results = rounds.flatMap((r) => r.results);
    const failures = results.filter((r) => r.status !== 200 || !r.json || !Number.isInteger(r.json.fuid));
    failures.should.eql([], 'every upload succeeded');
    new Set(results.map((r) => r.json.fuid)).size.should.equal(results.length);
    results.forEach((r) => r.json.length.should.equal(FILE_BYTES));
    const client = new AssetClient({ baseUrl: emulator.url, cookie: 'local-dev', timeout: 60000 });
    try {
      for (const r of results) {
        const { stream } = await client.downloadToStream({ fuid: r.json.fuid });
        const hash = crypto.createHash('sha256');
        for await (const chunk of stream) hash.update(chunk);
        hash.digest('hex').should.equal(bigSha, `fuid ${r.json.fuid} is byte-identical`);
      }
    } finally {
      client.close();
    }

    // Callbacks: every one answered 200 with its entries emitted; every entry counted once.
    const rate = state.sent / (state.ms / 1000);
    state.bad.should.eql([], 'every callback answered 200 with all its entries emitted');
    state.ok.should.equal(state.sent);
    stats.count.total.should.equal(state.entries, 'every entry reached the counter');
    stats.count.distinct.should.equal(state.entries, 'each entry once');

    const roundMs = rounds.slice(1).map((r) => r.ms);
    const mibPerS = (UPLOADS * FILE_BYTES) / MiB / (Math.max(...roundMs) / 1000);
    figure(`suite 6 (${LONG ? 'long' : 'short'}): ${results.length} uploads of 50 MiB (${rounds.length} rounds of ${UPLOADS} in parallel, ` +
      `${ROUNDS} during the load, ${roundMs.map((ms) => (ms / 1000).toFixed(1)).join('/')} s each, slowest ${mibPerS.toFixed(0)} MiB/s) all stored intact; ` +
      `${state.sent} callbacks in ${(state.ms / 1000).toFixed(1)} s (${rate.toFixed(0)}/s), ${state.entries} entries, all emitted once; ` +
      `event loop delay p50 ${stats.lag.p50} ms, p99 ${stats.lag.p99} ms, max ${stats.lag.max} ms (${stats.lag.samples} samples, 10 ms resolution); ` +
      `RSS after warm-up ${mib(baseline)}, peak ${mib(peak)}, end ${mib(end)} (${signed(end - baseline)}); ` +
      `heap in use after a full GC ${mib(before.heapUsed)} -> ${mib(after.heapUsed)} (${signed(after.heapUsed - before.heapUsed)})`);

    // Rates and delays are timings: on a shared machine (CI, several engineers) they measure the
    // neighbours as much as Node-RED, so the short mode reports them and only the long mode, run
    // by hand on a quiet machine, holds them to limits.
    // RSS is the same kind of figure: what the allocator keeps after freeing depends on how the
    // neighbours' load interleaves the 20 transfers' buffers (a CI run beside other work ended
    // 86 MB above its baseline with an unchanged heap), so only the long mode holds it to a bound.
    // The heap in use after a full GC is what a leak grows, whatever the machine does: held in both.
    if (LONG) {
      rate.should.be.above(CALLBACKS_PER_S * 0.9, 'the callback rate was held');
      stats.lag.p99.should.be.below(LAG_P99_LIMIT_MS);
      (end - baseline).should.be.below(MEMORY_BOUND);
    }
    (after.heapUsed - before.heapUsed).should.be.below(HEAP_BOUND);
    rig.crashLines().should.eql([]);
  });
});
