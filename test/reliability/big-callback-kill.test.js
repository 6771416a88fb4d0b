'use strict';
// A callback larger than one emission chunk (YIELD_EVERY entries), duplicate filter in Redis,
// Node-RED killed with SIGKILL while it emits: the chunks it had not handed on yet must not be
// confirmed in Redis, or the server's retry finds them "duplicate" and they are lost. Each chunk is
// confirmed just before it is handed on (issue 26 follow-up): the chunk being delivered when the
// process died is confirmed, and its messages that Node-RED held in memory die with it (as with
// any message in flight in a killed Node-RED: "at most once"); every later chunk is emitted by the
// retry, and nothing twice. (Before, the whole callback was confirmed after its last chunk: nothing
// lost, the first chunk emitted twice.)
// Real parts: redis-server, a spawned Node-RED whose function node kills its own process with
// SIGKILL when the first message of the first attempt reaches it; Node-RED then started again.
require('should');
const fs = require('fs');
const path = require('path');
const { YIELD_EVERY } = require('../../dist/events');
const { tempDir, rmDir, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis } = require('./lib/servers');

const ENTRIES = YIELD_EVERY * 3 + 7;

describe('reliability: SIGKILL while a large callback is emitted, filter in Redis: no chunk not handed on lost, none twice', function () {
  this.timeout(120000);
  let work, redis, nr;

  before(async function () {
    if (!installed('redis-server')) {
      if (process.env.CI) throw new Error('redis-server is not installed (.ci/run installs it)');
      this.skip();
    }
    work = tempDir('dam-big-kill-');
    redis = await startRedis(path.join(work, 'redis'));
  });
  after(async function () {
    if (nr) await nr.stop().catch(() => undefined);
    if (redis) await redis.stop();
    rmDir(work);
  });

  it('every entry of the chunks not handed on is emitted after the retry, none twice', async function () {
    const log = path.join(work, 'emitted.log');
    const killFlag = path.join(work, 'killed');
    nr = await launchNodeRed({ env: { BIG_LOG: log, BIG_KILL_FLAG: killFlag } });
    const next = ids('bk');
    const tab = { id: next(), type: 'tab', label: 'big' };
    const store = { id: next(), type: 'asset-redis', name: 'r', url: redis.url, prefix: 'big:', timeout: 500, lease: 1 };
    const record = next();
    const events = {
      id: next(), type: 'asset-event-in', z: tab.id, method: 'post', path: '/dam/big', dedup: true, dedupWindow: '600',
      redis: store.id, wires: [[record]]
    };
    const recorder = {
      id: record, type: 'function', z: tab.id, outputs: 0, libs: [{ var: 'fs', module: 'fs' }, { var: 'proc', module: 'process' }],
      func: [
        'fs.appendFileSync(env.get("BIG_LOG"), msg.payload.assetId + "\\n");',
        // The first attempt: killed as its first message arrives, the others not sent yet.
        'if (!fs.existsSync(env.get("BIG_KILL_FLAG"))) { fs.writeFileSync(env.get("BIG_KILL_FLAG"), "x"); proc.kill(proc.pid, "SIGKILL"); }',
        'return null;'
      ].join('\n')
    };
    await nr.deploy([tab, store, events, recorder]);

    const entries = Array.from({ length: ENTRIES }, (_, i) => ({ assetId: 700000 + i, rrn: 1, path: `/big/${i}.txt`, action: 'added' }));
    const body = JSON.stringify({ success: true, id: 'big-sub', data: { entry: entries } });
    const post = () => fetch(`${nr.url}/dam/big`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })
      .then((res) => res.status, () => 'no answer');
    (await post()).should.equal('no answer', 'the first attempt dies with Node-RED');
    await waitFor('Node-RED gone', () => !nr.running, 30000, 20);

    await nr.start(); // the flows come back from flows.json
    // The server retries until it is answered 200 (503 while the lease of the killed claim lasts).
    await waitFor('the retry answered 200', async () => (await post()) === 200, 60000, 200);
    const emitted = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number);
    const seen = new Set(emitted);
    (emitted.length - seen.size).should.equal(0, 'entries emitted twice');
    const lost = entries.filter((e, i) => i >= YIELD_EVERY && !seen.has(e.assetId)).map((e) => e.assetId);
    lost.length.should.equal(0, `entries of the chunks never handed on not emitted: ${lost.length} of ${ENTRIES - YIELD_EVERY}`);
    seen.has(entries[0].assetId).should.be.true();
  });
});
