'use strict';
// Reliability suite 9: two Node-RED copies behind nginx (round robin), one duplicate filter in
// Redis. Real parts: Debian's redis-server and nginx on free ports, two Node-RED processes with the
// package, the emulator calling back through nginx with a short retry delay. Both copies deploy the
// same flow: an asset-event-in that owns subscription SUB_ID (callback = nginx), keeps its filter in
// Redis, and hands every message to a function node that appends it to a file of its own copy
// (synchronously: a kill cannot lose a line that was written). During a stream of uploads, copy A
// is killed with SIGKILL and started again, and Redis is restarted once. Then every change is
// emitted exactly once across the two copies, or reported by the emulator as permanently failed,
// and the two add up; none twice. A clean stop of one copy leaves the subscription in place.
require('should');
const fs = require('fs');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { LONG, pick, figure, tempDir, rmDir, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis, startNginx } = require('./lib/servers');

const SUB_ID = 'scale-out-0001';
const COOKIE = 'local-dev';
const UPLOADS = pick(90, 600);
const CONCURRENCY = 3;

/** The lines a copy's flow wrote: one { assetId, rrn, action } per emitted message. */
function emitted(file) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

const keyOf = (e) => `${e.assetId}:${e.action}`;

describe(`reliability 9: two Node-RED copies behind nginx, duplicate filter in Redis (${LONG ? 'long' : 'short'} mode)`, function () {
  this.timeout(pick(90000, 600000));
  let work, redis, nginx, emulator, copies, client;
  const logs = {};

  before(async function () {
    for (const command of ['redis-server', 'nginx']) {
      if (!installed(command)) {
        if (process.env.CI) throw new Error(`${command} is not installed (.ci/run installs it)`);
        this.skip();
      }
    }
    work = tempDir('dam-scale-out-');
    redis = await startRedis(path.join(work, 'redis'));
    emulator = await startEmulator({ port: 0, dataDir: path.join(work, 'emulator'), retryDelayMs: 100 });
    copies = [];
    for (const name of ['a', 'b']) {
      logs[name] = path.join(work, `emitted-${name}.log`);
      copies.push(await launchNodeRed({ env: { SCALE_OUT_LOG: logs[name] } }));
    }
    nginx = await startNginx(path.join(work, 'nginx'), copies.map((c) => c.port));
    client = new AssetClient({ baseUrl: emulator.url, cookie: COOKIE });
  });

  after(async function () {
    if (client) client.close();
    for (const copy of copies || []) await copy.close().catch(() => undefined);
    if (nginx) await nginx.stop();
    if (redis) await redis.stop();
    if (emulator) await emulator.close();
    rmDir(work);
  });

  /** The same flow for every copy (as an HA deployment has it): only the log file differs, by env. */
  function flow() {
    const next = ids('c9');
    const tab = { id: next(), type: 'tab', label: 'scale-out' };
    const server = {
      id: next(), type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 10, rejectUnauthorized: true,
      publicBaseUrl: nginx.url, credentials: { cookie: COOKIE }
    };
    const store = { id: next(), type: 'asset-redis', name: 'shared', url: redis.url, prefix: 'scale:', timeout: 500, lease: 1 };
    const record = next();
    const events = {
      id: next(), type: 'asset-event-in', z: tab.id, name: 'changes', method: 'post', path: '/dam/scale', server: server.id,
      manage: true, subscriptionId: SUB_ID, watchPath: ['* /scale'], retryCount: '100', dedup: true, dedupWindow: '600',
      redis: store.id, wires: [[record]]
    };
    const recorder = {
      id: record, type: 'function', z: tab.id, name: 'record', outputs: 0, libs: [{ var: 'fs', module: 'fs' }],
      func: [
        'const p = msg.payload;',
        'fs.appendFileSync(env.get("SCALE_OUT_LOG"), JSON.stringify({ assetId: p.assetId, rrn: p.rrn, action: p.action }) + "\\n");',
        'return null;'
      ].join('\n'),
      wires: []
    };
    return [tab, server, store, events, recorder];
  }

  async function deliveries() {
    const res = await fetch(`${emulator.url}/emulator/deliveries?subscription=${SUB_ID}`, { headers: { Cookie: `JSESSIONID=${COOKIE}` } });
    return (await res.json()).deliveries;
  }

  it('emits every change exactly once across the copies, or the emulator reports it permanently failed; none twice', async function () {
    for (const copy of copies) await copy.deploy(flow());
    await waitFor('the subscription registered by the copies', async () => {
      const sub = await client.getSubscription(SUB_ID).catch(() => null);
      return sub && sub.subscription.callback === `${nginx.url}/dam/scale`;
    }, 15000, 50);

    const [a, b] = copies;

    // The same callback twice through nginx: round robin hands one to each copy; the second is dropped.
    const probe = { assetId: 900000001, rrn: 1, path: '/scale/probe.txt', owner: 'probe', action: 'added' };
    const answers = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${nginx.url}/dam/scale`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ success: true, id: SUB_ID, data: { entry: [probe] } })
      });
      answers.push(await res.json());
    }
    answers.map((x) => x.emitted).should.eql([1, 0]);
    (emitted(logs.a).length + emitted(logs.b).length).should.equal(1, 'the probe emitted by one copy only');
    const expected = new Set([keyOf(probe)]);
    const events = [];
    let uploaded = 0;
    const sinceA = () => emitted(logs.a).length;
    const sinceB = () => emitted(logs.b).length;
    // The faults, driven by states of the stream, while it runs.
    let faultsDone = false;
    const faults = (async () => {
      await waitFor('a third of the uploads', () => uploaded >= UPLOADS / 3, 60000, 10);
      const aBefore = sinceA();
      await waitFor('copy A emitting', () => sinceA() > aBefore, 30000, 10);
      await a.kill();
      events.push(`A killed (SIGKILL) after ${uploaded} uploads`);
      const bBefore = sinceB();
      await waitFor('copy B emitting while A is down', () => sinceB() > bBefore, 30000, 10);
      await a.start();
      const aBack = sinceA();
      await waitFor('copy A emitting again after its restart', () => sinceA() > aBack, 30000, 10);
      events.push(`A started again and emitting after ${uploaded} uploads`);
      const atRestart = uploaded;
      await waitFor('more uploads', () => uploaded >= atRestart + 5, 30000, 10);
      // Redis down until a callback has failed for it (503 and a retry): the fault is felt.
      const retriedBefore = (await deliveries()).filter((d) => d.attempts > 1).length;
      await redis.stop();
      await waitFor('a delivery retried while Redis is down', async () => (await deliveries()).filter((d) => d.attempts > 1).length > retriedBefore, 30000, 20);
      await redis.start();
      events.push(`Redis stopped until a delivery failed, then started again, after ${uploaded} uploads`);
      const total = sinceA() + sinceB();
      await waitFor('a copy emitting after the Redis restart', () => sinceA() + sinceB() > total, 30000, 10);
      faultsDone = true;
    })();
    const uploadOne = async (i) => {
      const outcome = await client.upload({ file: { buffer: Buffer.from(`change ${i}`) }, name: `f-${i}.txt`, destination: '/scale', wait: true });
      expected.add(`${outcome.fuids[0]}:added`);
      uploaded++;
    };
    // The stream: UPLOADS changes at least, and on until the faults are over.
    let nextIndex = 0;
    let faultError;
    faults.catch((err) => { faultError = err; });
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while ((nextIndex < UPLOADS || !faultsDone) && !faultError) await uploadOne(nextIndex++);
    }));
    if (faultError) throw faultError;
    await faults;

    // Wait for the state where every change is accounted for and no delivery is still going.
    let failedKeys = [];
    let missing = [];
    let underWay = [];
    await waitFor('every change emitted or permanently failed, no delivery under way', async () => {
      const list = await deliveries();
      underWay = list.filter((d) => d.state !== 'succeeded' && d.state !== 'permanently-failed');
      if (underWay.length) return false;
      failedKeys = list.filter((d) => d.state === 'permanently-failed').flatMap((d) => d.entries.map(keyOf));
      const seen = new Set([...emitted(logs.a), ...emitted(logs.b)].map(keyOf));
      for (const k of failedKeys) seen.add(k);
      missing = [...expected].filter((k) => !seen.has(k));
      return missing.length === 0;
    }, pick(60000, 300000), 100).catch((err) => {
      // Which side: a delivery the emulator still works on, or a change neither emitted nor failed.
      console.log('      under way:', JSON.stringify(underWay.map((d) => ({ state: d.state, attempts: d.attempts, entries: d.entries.map(keyOf), last: d.lastResult, dueAt: d.dueAt }))));
      console.log('      missing:', JSON.stringify(missing), 'events:', JSON.stringify(events));
      throw err;
    });

    const fromA = emitted(logs.a).map(keyOf);
    const fromB = emitted(logs.b).map(keyOf);
    const all = [...fromA, ...fromB];
    const twice = all.filter((k, i) => all.indexOf(k) !== i);
    twice.should.eql([], 'entries emitted twice');
    const emittedSet = new Set(all);
    const failedSet = new Set(failedKeys);
    [...failedSet].filter((k) => emittedSet.has(k)).should.eql([], 'permanently failed and yet emitted');
    for (const k of all) expected.has(k).should.be.true(`${k} was emitted but not uploaded`);
    (emittedSet.size + failedSet.size).should.equal(expected.size, 'emitted + permanently failed = changes');
    fromA.length.should.be.above(0, 'copy A emitted');
    fromB.length.should.be.above(0, 'copy B emitted');
    const retried = (await deliveries()).filter((d) => d.attempts > 1).length;
    retried.should.be.above(0, 'some deliveries were retried (the kill and the Redis restart were felt)');

    // A clean stop of one copy leaves the subscription registered; the other still receives.
    await b.stop();
    const sub = await client.getSubscription(SUB_ID);
    sub.subscription.callback.should.equal(`${nginx.url}/dam/scale`);
    const last = await client.upload({ file: { buffer: Buffer.from('after the stop') }, name: 'last.txt', destination: '/scale', wait: true });
    await waitFor('the last change emitted by copy A', () => emitted(logs.a).some((e) => e.assetId === last.fuids[0]), 30000, 50);

    a.crashLines().should.eql([]);
    figure(`suite 9: ${nextIndex} changes through nginx to 2 Node-RED copies with the filter in Redis; ${events.join(', ')}; ` +
      `emitted ${fromA.length} by A + ${fromB.length} by B, ${failedSet.size} permanently failed, none twice; ${retried} deliveries retried`);
  });
});
