'use strict';
// Reliability suite 13 (issue 26, part 1): the Redis duplicate filter's confirmation is in Redis
// before any node after asset-event-in runs. Real parts: Debian's redis-server and real Node-RED
// processes (killed with SIGKILL). The flow: asset-event-in with its filter in Redis (lease 2 s),
// wired to a function node that appends msg.payload to a file and then works synchronously for
// 1.5 s (the event loop is blocked: nothing queued behind it, such as an auto-pipelined command,
// goes out). One callback is POSTed; copy A is SIGKILLed at a random moment after its line
// appears; copy B, with the same flow, gets the same callback (the server's retry) once no claim
// is left pending in Redis (the lease): it must answer `emitted: 0`, and the change is in the
// files once. Before the fix the confirmation was sent on a later tick than the delivery, so
// every round emitted the change twice.
require('should');
const fs = require('fs');
const path = require('path');
const { LONG, pick, tempDir, rmDir, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis } = require('./lib/servers');
const { YIELD_EVERY } = require('../../dist/events');

const ROUNDS = Number(process.env.KILL_ROUNDS) || pick(4, 12);
const BIG_ROUNDS = Number(process.env.KILL_BIG_ROUNDS) || pick(2, 6);
const PREFIX = 'kill:';
const SUB_ID = 'kill-confirm-0001';

function lines(file) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

describe(`reliability 13: a copy SIGKILLed while its flow works emits nothing twice (Redis filter, ${LONG ? 'long' : 'short'} mode)`, function () {
  this.timeout(pick(180000, 600000));
  let work, redis, copies, probe;
  const logs = {};

  before(async function () {
    if (!installed('redis-server')) {
      if (process.env.CI) throw new Error('redis-server is not installed (.ci/run installs it)');
      this.skip();
    }
    work = tempDir('dam-kill-confirm-');
    redis = await startRedis(path.join(work, 'redis'), { durable: false });
    const Redis = require('ioredis');
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    copies = [];
    for (const name of ['a', 'b']) {
      logs[name] = path.join(work, `emitted-${name}.log`);
      copies.push(await launchNodeRed({ env: { KILL_TEST_LOG: logs[name] } }));
    }
  });

  after(async function () {
    if (probe) probe.disconnect();
    for (const copy of copies || []) await copy.close().catch(() => undefined);
    if (redis) await redis.stop();
    rmDir(work);
  });

  /** The same flow in both copies; only the log file differs (by env). */
  function flow() {
    const next = ids('ca');
    const tab = { id: next(), type: 'tab', label: 'kill-confirm' };
    const store = { id: next(), type: 'asset-redis', name: 'shared', url: redis.url, prefix: PREFIX, timeout: 500, lease: 2 };
    const work = next();
    const events = {
      id: next(), type: 'asset-event-in', z: tab.id, name: 'changes', method: 'post', path: '/dam/kill', manage: false,
      subscriptionId: SUB_ID, dedup: true, dedupWindow: '600', redis: store.id, wires: [[work]]
    };
    const worker = {
      id: work, type: 'function', z: tab.id, name: 'record, then work 1.5 s', outputs: 0, libs: [{ var: 'fs', module: 'fs' }],
      func: [
        'const p = msg.payload;',
        'fs.appendFileSync(env.get("KILL_TEST_LOG"), JSON.stringify({ assetId: p.assetId, rrn: p.rrn }) + "\\n");',
        'const until = Date.now() + 1500;',
        'while (Date.now() < until) { /* synchronous work: the event loop is blocked */ }',
        'return null;'
      ].join('\n'),
      wires: []
    };
    return [tab, store, events, worker];
  }

  const callback = (assetId) => JSON.stringify({ success: true, id: SUB_ID, data: { entry: [{ assetId, rrn: 1, path: '/kill/x.txt', owner: 'k', action: 'added' }] } });

  async function post(copy, assetId) {
    const res = await fetch(`${copy.url}/dam/kill`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: callback(assetId) });
    return { status: res.status, body: await res.json() };
  }

  /** Batch markers still claimed ('c') and not confirmed: they block the key until the lease ends. */
  async function pendingClaims() {
    const keys = await probe.keys(`${PREFIX}*b:*`);
    let pending = 0;
    for (const key of keys) if (await probe.get(key) === 'c') pending++;
    return pending;
  }

  it(`${ROUNDS} rounds: SIGKILL at a random moment while the flow works, the retry on the other copy emits nothing`, async function () {
    for (const copy of copies) await copy.deploy(flow());
    const counts = { rounds: 0, twice: 0, lost: 0, emittedByRetry: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate: the killed copy of the last round is started again and takes the first call.
      const [first, second] = round % 2 === 0 ? copies : [copies[1], copies[0]];
      const [firstLog, secondLog] = round % 2 === 0 ? [logs.a, logs.b] : [logs.b, logs.a];
      if (!first.running) { await first.start(); await first.deploy(flow()); }
      if (!second.running) { await second.start(); await second.deploy(flow()); }
      const assetId = 7000000 + round;
      const seen = () => lines(firstLog).filter((l) => l.assetId === assetId).length + lines(secondLog).filter((l) => l.assetId === assetId).length;
      const answer = post(first, assetId).catch((err) => ({ error: err }));
      await waitFor(`round ${round}: the change in copy ${first === copies[0] ? 'A' : 'B'}'s file`, () => seen() === 1, 30000, 5);
      // A random moment within the 1.5 s the flow works (the line is written first).
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 1300)));
      await first.kill();
      await answer; // mostly the connection died with the copy; either way the server may send it again
      await waitFor('no claim left pending in Redis (the lease)', async () => await pendingClaims() === 0, 30000, 50);
      const retry = await post(second, assetId);
      retry.status.should.equal(200);
      counts.rounds++;
      if (retry.body.emitted > 0) counts.emittedByRetry++;
      // The retry's flow (if it emitted) has written its line before the answer.
      const n = seen();
      if (n > 1) counts.twice++;
      if (n === 0) counts.lost++;
    }
    console.log(`      kill rounds: ${JSON.stringify(counts)}`);
    counts.twice.should.equal(0, 'changes emitted twice (the confirmation was not in Redis when the flow ran)');
    counts.lost.should.equal(0, 'changes lost');
    counts.emittedByRetry.should.equal(0);
  });

  // Part 1 of the follow-up: a callback longer than one chunk (YIELD_EVERY messages, handed on with
  // the event loop let run between chunks). The flow writes a line per message and works 1.5 s on
  // the last message of a chunk: copy A is SIGKILLed during that work, after a chunk's lines are all
  // in its file (randomly after the first or the second chunk). The chunks it handed on must be
  // confirmed, the others claimable again after the lease: copy B's retry emits exactly the rest.
  // Before the fix the whole callback was confirmed after its last chunk, so B emitted it all again.
  const BIG = 1200;

  function bigFlow() {
    const nodes = flow();
    const worker = nodes[3];
    worker.name = 'record, then work 1.5 s at the end of a chunk';
    worker.libs = [{ var: 'fs', module: 'fs' }];
    worker.func = [
      'const p = msg.payload;',
      'fs.appendFileSync(env.get("KILL_TEST_LOG"), JSON.stringify({ assetId: p.assetId, rrn: p.rrn }) + "\\n");',
      `if (msg.parts && msg.parts.index % ${YIELD_EVERY} === ${YIELD_EVERY - 1}) {`,
      '  const until = Date.now() + 1500;',
      '  while (Date.now() < until) { /* synchronous work: the event loop is blocked */ }',
      '}',
      'return null;'
    ].join('\n');
    return nodes;
  }

  function bigCallback(base) {
    const entries = Array.from({ length: BIG }, (_, i) => ({ assetId: base + i, rrn: 1, path: `/kill/big-${i}.txt`, owner: 'k', action: 'added' }));
    return JSON.stringify({ success: true, id: SUB_ID, data: { entry: entries } });
  }

  it(`${BIG_ROUNDS} rounds of a ${BIG}-entry callback: SIGKILL after a chunk was worked through, the retry emits only the chunks never handed on`, async function () {
    const counts = { rounds: 0, entries: 0, twice: 0, lost: 0, emittedByRetry: 0 };
    for (let round = 0; round < BIG_ROUNDS; round++) {
      const [first, second] = round % 2 === 0 ? copies : [copies[1], copies[0]];
      for (const copy of [first, second]) {
        if (!copy.running) await copy.start();
        await copy.deploy(bigFlow());
      }
      const base = 8000000 + round * 10000;
      for (const file of [logs.a, logs.b]) fs.writeFileSync(file, ''); // both copies idle: this round's lines only
      const seen = () => [...lines(logs.a), ...lines(logs.b)];
      const chunks = 1 + Math.floor(Math.random() * 2); // killed after the first or the second chunk
      const body = bigCallback(base);
      const answer = fetch(`${first.url}/dam/kill`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }).catch((err) => ({ error: err }));
      await waitFor(`round ${round}: ${chunks} chunk(s) of lines`, () => seen().length >= chunks * YIELD_EVERY, 60000, 20);
      await first.kill(); // within the 1.5 s of work at the end of the chunk
      await answer;
      await waitFor('no claim left pending in Redis (the lease)', async () => await pendingClaims() === 0, 30000, 50);
      const retry = await fetch(`${second.url}/dam/kill`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      const retryBody = await retry.json();
      retry.status.should.equal(200, JSON.stringify(retryBody));
      // The retry's flow works 1.5 s at the end of each chunk it emits; its answer comes after the hand-over.
      await waitFor('the retry\'s lines', () => seen().length >= BIG || retryBody.emitted === 0, 60000, 20);
      const perAsset = new Map();
      for (const l of seen()) perAsset.set(l.assetId, (perAsset.get(l.assetId) || 0) + 1);
      counts.rounds++;
      counts.entries += BIG;
      if (retryBody.emitted > BIG - chunks * YIELD_EVERY) counts.emittedByRetry++;
      for (let i = 0; i < BIG; i++) {
        const n = perAsset.get(base + i) || 0;
        if (n > 1) counts.twice++;
        if (n === 0) counts.lost++;
      }
    }
    console.log(`      big-callback kill rounds: ${JSON.stringify(counts)}`);
    counts.twice.should.equal(0, 'entries emitted twice (a chunk handed on was not confirmed when the copy died)');
    counts.lost.should.equal(0, 'entries lost');
  });
});
