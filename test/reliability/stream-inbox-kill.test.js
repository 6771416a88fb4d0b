'use strict';
// Never miss a change with several Node-RED copies (issue 28): the at-least-once inbox on a Redis
// Stream under SIGKILL and a Redis restart.
//
// Real parts: Debian's redis-server (append-only file, fsync always) and nginx (round robin) on
// free ports, two Node-RED processes with the package, the emulator calling back through nginx.
// Both copies run the same flow: asset-event-in with Delivery "at least once" and an asset-redis
// node (so its inbox is the shared stream; visibility timeout VISIBILITY_S) -> prepare ->
// asset-download (the entry's revision) into one mirror folder -> record (one line per processed
// entry, appended synchronously to one file both copies share) -> asset-event-ack.
// While the emulator delivers a stream of changes (new assets and new revisions), each copy is
// SIGKILLed once while it holds entries (seen in Redis: its consumer has pending entries) and
// started again; copy B stays down until another copy claimed what it held, i.e. longer than the
// visibility timeout; Redis is restarted once (clean stop, its append-only file kept). The faults
// wait for states, not times. At the end: every change processed (none lost), each asset's mirror
// file at its latest revision, each asset's revisions processed in order, the stream empty (all
// acknowledged, nothing parked), no delivery given up by the emulator. Changes processed more than
// once are allowed, counted and reported.
//
// STREAM_KILL_RUNS=n repeats it n times in one go (the acceptance's 10 runs in a row).
require('should');
const fs = require('fs');
const path = require('path');
const Redis = require('ioredis');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { pick, tempDir, rmDir, sleep, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis, startNginx } = require('./lib/servers');

const COOKIE = 'stream-kill-session';
const CHANGES = Number(process.env.STREAM_KILL_CHANGES) || pick(120, 400);
const ASSETS = 20;
const VISIBILITY_S = 4;
const RUNS = Number(process.env.STREAM_KILL_RUNS || 1);
const RETRY_DELAY_MS = 300;
const RETRY_COUNT = 400;
const PREFIX = 'sk:';

const random = (min, max) => min + Math.floor(Math.random() * (max - min + 1));

describe('reliability: at-least-once inbox on a Redis Stream, two Node-RED copies under SIGKILL and a Redis restart', function () {
  this.timeout(pick(240000, 900000) * RUNS);
  let work, redis, nginx, emulator, client, copies, inspect;

  before(async function () {
    for (const command of ['redis-server', 'nginx']) {
      if (!installed(command)) {
        if (process.env.CI) throw new Error(`${command} is not installed (.ci/run installs it)`);
        this.skip();
      }
    }
    work = tempDir('dam-stream-kill-');
    redis = await startRedis(path.join(work, 'redis'));
    emulator = await startEmulator({ port: 0, dataDir: path.join(work, 'emulator'), retryDelayMs: RETRY_DELAY_MS, sessions: [{ value: COOKIE, permissions: ['events', 'add'] }] });
    client = new AssetClient({ baseUrl: emulator.url, cookie: COOKIE, timeout: 20000 });
    copies = [await launchNodeRed(), await launchNodeRed()];
    nginx = await startNginx(path.join(work, 'nginx'), copies.map((c) => c.port));
    inspect = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(n * 50, 500) });
    inspect.on('error', () => undefined);
  });

  after(async function () {
    if ((process.env.RELIABILITY_DEBUG || (this.currentTest && this.currentTest.state === 'failed')) && copies) {
      for (const c of copies) console.log(c.lines.filter((l) => /\[(warn|error)\]/.test(l)).slice(-30).join('\n'));
    }
    if (inspect) inspect.disconnect();
    if (client) client.close();
    for (const copy of copies || []) await copy.close().catch(() => undefined);
    if (nginx) await nginx.stop();
    if (redis) await redis.stop();
    if (emulator) await emulator.close();
    rmDir(work);
  });

  function flow({ name, hookPath, mirror, processed }) {
    const next = ids(name.slice(0, 4));
    const tab = { id: next(), type: 'tab', label: name };
    const server = { id: next(), type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 20, credentials: { cookie: COOKIE } };
    const store = { id: next(), type: 'asset-redis', name: 'shared', url: redis.url, prefix: PREFIX, timeout: 1000, lease: 5 };
    const at = { x: 100, y: 100, z: tab.id };
    const eventIn = next(), prep = next(), download = next(), record = next(), ack = next(), reject = next(), catcher = next();
    return {
      eventIn,
      nodes: [tab, server, store,
        {
          id: eventIn, type: 'asset-event-in', ...at, name: 'changes', method: 'post', path: hookPath, output: 'entry', dedup: true,
          redis: store.id, delivery: 'atLeastOnce', maxInFlight: 4, visibilityTimeout: VISIBILITY_S, maxDeliveries: 1000, rejectBackoff: 0.2, outputs: 2,
          wires: [[prep], []]
        },
        {
          id: prep, type: 'function', ...at, name: 'prepare', outputs: 1, libs: [],
          func: [
            'const p = msg.payload;',
            'msg.change = { a: p.assetId, r: p.rrn };',
            'msg.fuid = p.assetId;',
            'msg.rrn = p.rrn;',
            `msg.filename = ${JSON.stringify(mirror)} + "/" + p.assetId + ".txt";`,
            'return msg;'
          ].join('\n'),
          wires: [[download]]
        },
        {
          id: download, type: 'asset-download', ...at, name: 'to mirror', server: server.id, fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg',
          output: 'file', filename: 'filename', filenameType: 'msg', maxInFlight: 4, wires: [[record]]
        },
        {
          id: record, type: 'function', ...at, name: 'record', outputs: 1, libs: [{ var: 'fs', module: 'fs' }, { var: 'proc', module: 'process' }],
          func: `fs.appendFileSync(${JSON.stringify(processed)}, JSON.stringify({ ...msg.change, d: msg.redelivered, pid: proc.pid }) + "\\n");\nreturn msg;`,
          wires: [[ack]]
        },
        { id: ack, type: 'asset-event-ack', ...at, action: 'ack', wires: [[]] },
        { id: catcher, type: 'catch', ...at, scope: [prep, download, record], uncaught: false, wires: [[reject]] },
        { id: reject, type: 'asset-event-ack', ...at, action: 'reject', wires: [[]] }
      ]
    };
  }

  const lines = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

  /** Pending entries per consumer of the stream (a consumer name holds its copy's pid). */
  async function pendingByPid(stream) {
    const summary = await inspect.xpending(stream, 'g');
    const out = new Map();
    for (const [consumer, count] of summary[3] || []) {
      const pid = Number(String(consumer).split('-').slice(-2)[0]);
      out.set(pid, (out.get(pid) || 0) + Number(count));
    }
    return out;
  }

  async function run(round) {
    const name = `strm-${round}`;
    const dir = tempDir(`dam-${name}-`);
    const mirror = path.join(dir, 'mirror');
    fs.mkdirSync(mirror);
    const processed = path.join(dir, 'processed.jsonl');
    const folder = `/${name}`;
    const subscriptionId = `stream-${name}-sub`;
    const { nodes, eventIn } = flow({ name, hookPath: `/dam/${name}`, mirror, processed });
    const stream = `${PREFIX}{${eventIn}}:in:s`;
    const expected = [];
    const latest = new Map();
    const events = [];
    let uploaded = 0;
    let faultsDone = false;
    const [a, b] = copies;
    try {
      for (const copy of copies) await copy.deploy(nodes);
      await client.registerSubscription(subscriptionId, {
        callback: `${nginx.url}/dam/${name}`, method: 'POST', successCode: 200, retryCount: RETRY_COUNT, watchPath: [`* ${folder}`]
      });

      /** Waits until `copy` holds entries (pending in Redis under its consumer), then SIGKILLs it. */
      const killHolding = async (copy, label) => {
        const pid = copy.pid;
        await waitFor(`copy ${label} holding entries`, async () => ((await pendingByPid(stream)).get(pid) || 0) > 0, 60000, 5);
        const held = (await pendingByPid(stream)).get(pid) || 0;
        await copy.kill();
        events.push(`${label} SIGKILLed holding ${held} after ${uploaded} uploads`);
        return pid;
      };
      const faults = (async () => {
        await waitFor('a fifth of the uploads', () => uploaded >= CHANGES / 5, 60000, 10);
        await killHolding(a, 'A');
        await sleep(random(0, 300));
        await a.start();
        events.push(`A started again after ${uploaded} uploads`);
        const afterA = uploaded;
        await waitFor('more uploads', () => uploaded >= afterA + 10, 60000, 10);
        const bPid = await killHolding(b, 'B');
        // Down until copy A claimed what B held: longer than the visibility timeout.
        const downAt = Date.now();
        await waitFor('copy A claimed what B held', async () => !((await pendingByPid(stream)).get(bPid) > 0), 60000, 50);
        // The idle time counts from B's last touch, before the kill: down at least the timeout itself too.
        await waitFor('B down longer than the visibility timeout', () => Date.now() - downAt > VISIBILITY_S * 1000, 60000, 50);
        const downMs = Date.now() - downAt;
        await b.start();
        events.push(`B started again after ${downMs} ms down (timeout ${VISIBILITY_S} s)`);
        const afterB = uploaded;
        await waitFor('more uploads', () => uploaded >= afterB + 10, 60000, 10);
        await redis.restart();
        events.push(`Redis restarted after ${uploaded} uploads`);
        const afterRedis = uploaded;
        await waitFor('more uploads', () => uploaded >= afterRedis + 10, 60000, 10);
        faultsDone = true;
      })();
      let faultError;
      faults.catch((err) => { faultError = err; });
      // The stream: CHANGES changes at least, and on until the faults are over.
      const names = [];
      for (let i = 0; (i < CHANGES || !faultsDone) && !faultError; i++) {
        const fresh = names.length < ASSETS && (names.length < 3 || Math.random() < 0.4);
        const file = fresh ? `file-${names.length}.txt` : names[random(0, names.length - 1)];
        if (fresh) names.push(file);
        const content = `${file} change ${i}`;
        const out = await client.upload({ file: { buffer: Buffer.from(content) }, name: file, destination: folder, wait: true });
        expected.push(`${out.fuids[0]}:${out.rrn}`);
        latest.set(out.fuids[0], { rrn: out.rrn, content });
        uploaded++;
        await sleep(random(10, 60));
      }
      if (faultError) throw faultError;
      await faults;

      let state;
      await waitFor('every change processed and acknowledged, the stream empty', async () => {
        const done = new Set(lines(processed).map((l) => `${l.a}:${l.r}`));
        const missing = expected.filter((k) => !done.has(k));
        const [len, parked, pending] = [await inspect.xlen(stream), await inspect.hlen(`${PREFIX}{${eventIn}}:in:p`), (await inspect.xpending(stream, 'g'))[0]];
        state = { missing: missing.length, len, parked, pending };
        return missing.length === 0 && len === 0 && parked === 0 && Number(pending) === 0;
      }, 180000, 200).catch((err) => {
        console.log(`      ${name}: ${JSON.stringify(state)}; ${events.join('; ')}`);
        throw err;
      });

      const records = lines(processed);
      const done = new Set(records.map((l) => `${l.a}:${l.r}`));
      expected.filter((k) => !done.has(k)).should.eql([], 'changes never processed');
      // Order per asset across both copies: the shared file is in the order the work was done.
      const lastRrn = new Map();
      for (const l of records) {
        if (lastRrn.has(l.a) && Number(l.r) < lastRrn.get(l.a)) {
          console.log(`      order broken for asset ${l.a}:\n${records.filter((x) => x.a === l.a).map((x) => JSON.stringify(x)).join('\n')}\n      ${events.join('; ')}`);
        }
        if (lastRrn.has(l.a)) Number(l.r).should.be.aboveOrEqual(lastRrn.get(l.a), `asset ${l.a}: revision ${l.r} processed after ${lastRrn.get(l.a)}`);
        lastRrn.set(l.a, Number(l.r));
      }
      for (const [fuid, { content }] of latest) fs.readFileSync(path.join(mirror, `${fuid}.txt`), 'utf8').should.equal(content, `mirror of asset ${fuid}`);
      const history = await fetch(`${emulator.url}/emulator/deliveries?subscription=${subscriptionId}`, { headers: { cookie: `JSESSIONID=${COOKIE}` } }).then((r) => r.json());
      history.deliveries.filter((d) => d.state === 'permanently-failed').should.eql([]);
      const byCopy = {};
      for (const l of records) byCopy[l.pid] = (byCopy[l.pid] || 0) + 1;
      const report = {
        changes: expected.length, processed: records.length, duplicates: records.length - done.size,
        redelivered: records.filter((l) => l.d > 0).length, processes: Object.keys(byCopy).length, retried: history.deliveries.filter((d) => d.attempts > 1).length
      };
      console.log(`      ${name}: ${JSON.stringify(report)}; ${events.join('; ')}`);
      report.processes.should.be.aboveOrEqual(2, 'both copies did work');
      for (const c of copies) c.crashLines().should.eql([]);
      await client.deleteSubscription(subscriptionId).catch(() => undefined);
      return report;
    } finally {
      faultsDone = true;
      for (const c of copies) if (!c.running) await c.start().catch(() => undefined);
      rmDir(dir);
    }
  }

  for (let round = 1; round <= RUNS; round++) {
    it(`run ${round}/${RUNS}: every change in the mirror at its latest revision, all acknowledged, none lost (each copy SIGKILLed holding entries, one past the visibility timeout, Redis restarted)`, async function () {
      await run(round);
    });
  }
});
