'use strict';
// Reliability suite 4: callback delivery under a flapping receiver.
//
// A real Node-RED (the project's launcher) runs an asset-event-in that owns its subscription on
// the emulator (duplicate filter on), wired to a sink that appends one line per message to a file
// (synchronously, so a line written is a message emitted). While a stream of changes (uploads
// through the API client, metadata changes, deletes) runs on the emulator, Node-RED is flapped:
// flows stopped and started through the admin API, the process stopped (SIGINT) and started, and
// once the flows stay stopped longer than the subscription's retries last. In the end every
// change must be emitted exactly once, or be listed in the emulator's permanently-failed
// deliveries, never both, and the two counts must add up to the number of changes.
//
// Short mode (npm test): 200 changes. RELIABILITY_LONG=1: 1000 changes, more flaps.
require('should');
const fs = require('fs');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { LONG, pick, figure, tempDir, rmDir, sleep, launchNodeRed, ids, getJson } = require('./lib/rig');
const { waitFor } = require('./lib/support');

const CHANGES = pick(200, 1000);
/** How long the stream of changes lasts: the flaps happen meanwhile. */
const STREAM_MS = pick(20000, 90000);
const COOKIE = 'flap-session';
const SECRET = 'flapping-webhook-secret-value';
const EVENT_NODE = 'f1a2b3c4d5e6f708';
const SUBSCRIPTION_ID = `nr-${EVENT_NODE}`;
/** Emulator retry delay and the subscription's retryCount: a delivery survives an outage of about 2 s. */
const RETRY_DELAY_MS = 100;
const RETRY_COUNT = 20;
/** The deliberate long outage: flows stopped well past RETRY_COUNT x RETRY_DELAY_MS. */
const LONG_OUTAGE_MS = 4000;

const random = (min, max) => min + Math.floor(Math.random() * (max - min + 1));

describe(`reliability 4: delivery under a flapping receiver (${LONG ? 'long' : 'short'} mode, ${CHANGES} changes)`, function () {
  this.timeout(pick(59000, 600000));
  let emulator;
  let emulatorDir;
  let rig;
  let sinkFile;
  let client;

  before(async function () {
    emulatorDir = tempDir('dam-flap-emu-');
    emulator = await startEmulator({ port: 0, dataDir: emulatorDir, retryDelayMs: RETRY_DELAY_MS, sessions: [{ value: COOKIE, permissions: ['events', 'add'] }] });
    client = new AssetClient({ baseUrl: emulator.url, cookie: COOKIE, timeout: 10000 });
    rig = await launchNodeRed({ extraSettings: { runtimeState: { enabled: true, ui: false } } });
    sinkFile = path.join(rig.userDir, 'emitted.jsonl');
  });

  after(async function () {
    if (process.env.RELIABILITY_DEBUG && rig) console.log(rig.lines.join('\n'));
    if (rig) await rig.close();
    if (emulator) await emulator.close();
    rmDir(emulatorDir);
  });

  function flows() {
    const next = ids('f1');
    const tab = { id: next(), type: 'tab', label: 'flapping receiver' };
    const server = {
      id: next(), type: 'asset-server', name: 'emulator', baseUrl: emulator.url, publicBaseUrl: rig.url, timeout: 10,
      credentials: { cookie: COOKIE }
    };
    const sink = {
      id: next(), type: 'function', z: tab.id, name: 'sink', outputs: 0,
      libs: [{ var: 'fs', module: 'fs' }],
      func: [
        'const p = msg.payload;',
        `fs.appendFileSync(${JSON.stringify(sinkFile)}, JSON.stringify({ assetId: p.assetId, rrn: p.rrn, action: p.action, sub: msg.subscriptionId }) + "\\n");`,
        'return null;'
      ].join('\n'),
      wires: []
    };
    const eventIn = {
      id: EVENT_NODE, type: 'asset-event-in', z: tab.id, name: 'flapping', method: 'post', path: '/dam/flap',
      manage: true, server: server.id, watchPath: ['* /flap'], retryCount: String(RETRY_COUNT), dedup: true,
      credentials: { secret: SECRET }, wires: [[sink.id]]
    };
    return [tab, server, eventIn, sink];
  }

  async function emulatorCall(method, pathname, body) {
    return getJson(emulator.url + pathname, {
      method, headers: { cookie: `JSESSIONID=${COOKIE}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body)
    });
  }

  /** The stream of changes: each one records the entry key the subscription must deliver. */
  async function produce(expected, stop) {
    const live = []; // { fuid, name }
    const gap = STREAM_MS / CHANGES;
    const started = Date.now();
    for (let i = 0; i < CHANGES; i++) {
      const wait = started + i * gap - Date.now();
      if (wait > 0) await sleep(wait);
      const roll = Math.random();
      if (live.length < 5 || roll < 0.5) {
        const name = `file-${i}.txt`;
        const out = await client.upload({ file: { buffer: Buffer.from(`content ${i}`) }, name, destination: '/flap', wait: true });
        live.push({ fuid: out.fuids[0], name });
        expected.push(`${out.fuids[0]}:${out.rrn}:added`);
      } else if (roll < 0.7) {
        const target = live[random(0, live.length - 1)];
        const out = await client.upload({ file: { buffer: Buffer.from(`revision ${i}`) }, name: target.name, destination: '/flap', wait: true });
        out.fuids[0].should.equal(target.fuid);
        expected.push(`${target.fuid}:${out.rrn}:modified`);
      } else if (roll < 0.95) {
        const target = live[random(0, live.length - 1)];
        const out = await emulatorCall('PUT', `/emulator/assets/${target.fuid}/metadata`, { Step: String(i) });
        out.success.should.equal(true);
        expected.push(`${target.fuid}:${out.rrn}:modified`);
      } else {
        const target = live.splice(random(0, live.length - 1), 1)[0];
        const out = await emulatorCall('DELETE', `/emulator/assets/${target.fuid}`);
        out.success.should.equal(true);
        expected.push(`${target.fuid}:${out.rrn}:deleted`);
      }
    }
    stop.done = true;
  }

  /** Flaps Node-RED until the stream is done; returns what it did. */
  async function flap(stop) {
    const done = [];
    const plan = ['flows', 'process', 'long-outage', 'flows', 'process'];
    for (let cycle = 0; !stop.done; cycle++) {
      await sleep(random(800, 2000)); // up and receiving
      if (stop.done) break;
      const kind = cycle < plan.length ? plan[cycle] : ['flows', 'process'][cycle % 2];
      const began = Date.now();
      if (kind === 'process') {
        await rig.stop();
        await sleep(random(100, 800));
        await rig.start();
      } else {
        await rig.flowState('stop');
        await sleep(kind === 'long-outage' ? LONG_OUTAGE_MS : random(200, 1000));
        await rig.flowState('start');
      }
      done.push(`${kind} ${Date.now() - began} ms`);
    }
    return done;
  }

  function emittedLines() {
    if (!fs.existsSync(sinkFile)) return [];
    return fs.readFileSync(sinkFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  async function permanentlyFailedKeys() {
    const { deliveries } = await emulatorCall('GET', `/emulator/deliveries?subscription=${SUBSCRIPTION_ID}`);
    const keys = [];
    let unfinished = 0;
    let retried = 0;
    for (const d of deliveries) {
      if (d.attempts > 1) retried++;
      if (d.state === 'permanently-failed') for (const e of d.entries) keys.push(`${e.assetId}:${e.rrn}:${e.action}`);
      else if (d.state !== 'succeeded') unfinished++;
    }
    return { keys, unfinished, retried, deliveries: deliveries.length, list: deliveries };
  }

  it('emits every change exactly once or lists it as permanently failed, and the two add up', async function () {
    await rig.deploy(flows());
    await waitFor('the node to register its subscription', async () => {
      const d = await emulatorCall('GET', `/review/api/events/assets/subscribe/${SUBSCRIPTION_ID}`);
      return d.success && d.subscription.retryCount === RETRY_COUNT;
    }, 10000);

    const expected = [];
    const stop = { done: false };
    const started = Date.now();
    const [, flaps] = await Promise.all([produce(expected, stop), flap(stop)]);
    const streamMs = Date.now() - started;
    (await rig.answers()).should.equal(true);
    if (!rig.running) throw new Error('Node-RED is not running after the flapping');

    // Every delivery settles: succeeded or permanently failed, nothing waiting.
    const settleUntil = Date.now() + pick(25000, 120000);
    let emitted;
    let failed;
    for (;;) {
      emitted = emittedLines();
      failed = await permanentlyFailedKeys();
      if (failed.unfinished === 0 && emitted.length + failed.keys.length >= expected.length) break;
      if (Date.now() > settleUntil) break;
      await sleep(200);
    }
    await sleep(1000); // anything late (a duplicate) shows up now
    emitted = emittedLines();
    failed = await permanentlyFailedKeys();

    const emittedKeys = emitted.map((e) => `${e.assetId}:${e.rrn}:${e.action}`);
    const counts = new Map();
    for (const k of emittedKeys) counts.set(k, (counts.get(k) || 0) + 1);
    const twice = [...counts].filter(([, n]) => n > 1).map(([k]) => k);
    const expectedSet = new Set(expected);
    const failedSet = new Set(failed.keys);
    const unknown = [...counts.keys()].filter((k) => !expectedSet.has(k));
    const both = [...counts.keys()].filter((k) => failedSet.has(k));
    const lost = expected.filter((k) => !counts.has(k) && !failedSet.has(k));

    figure(`suite 4 (${LONG ? 'long' : 'short'}): ${expected.length} changes in ${(streamMs / 1000).toFixed(1)} s, ` +
      `${flaps.length} flaps [${flaps.join(', ')}]; emitted ${counts.size}, permanently failed ${failedSet.size}, ` +
      `sum ${counts.size + failedSet.size}; emitted twice ${twice.length}; lost ${lost.length}; deliveries ${failed.deliveries} (${failed.retried} retried)`);

    if (lost.length) {
      // Which delivery held each lost change, and what became of it.
      for (const k of lost) {
        const d = failed.list.find((x) => x.entries.some((e) => `${e.assetId}:${e.rrn}:${e.action}` === k));
        console.log(`      lost ${k}: ${d ? JSON.stringify({ ...d, entries: d.entries.length }) : 'in no delivery'}`);
      }
      console.log(rig.lines.slice(-80).join('\n'));
    }
    expected.should.have.length(CHANGES);
    expectedSet.size.should.equal(CHANGES); // every change has its own key
    twice.should.eql([], 'no change is emitted twice');
    unknown.should.eql([], 'nothing is emitted that was not a change');
    both.should.eql([], 'no change is both emitted and permanently failed');
    lost.should.eql([], 'no change is lost');
    (counts.size + failedSet.size).should.equal(CHANGES);
    emitted.forEach((e) => e.sub.should.equal(SUBSCRIPTION_ID));
    flaps.some((f) => f.startsWith('process')).should.be.true('the process was restarted at least once');
    // The long outage outlasts every retry: deliveries tried during it end permanently failed.
    failedSet.size.should.be.above(0);
    counts.size.should.be.above(CHANGES / 2);
    failed.retried.should.be.above(failedSet.size ? 1 : 0, 'some deliveries needed retries and then succeeded');
    rig.crashLines().should.eql([]);
  });
});
