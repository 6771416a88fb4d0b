'use strict';
// asset-event-in with its duplicate filter in Redis (asset-redis config node), in the test helper,
// against a real redis-server on a free port.
require('should');
const path = require('path');
const { execFileSync } = require('child_process');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');
const redisNode = require('../../nodes/asset-redis.js');
const Redis = require('ioredis');
const { useRedisRig } = require('../lib/redis-rig');

helper.init(require.resolve('node-red'));

const PASSWORD = 'redis-pass-4c1e9a77';

function entry(assetId, rrn, action = 'added') {
  return { assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action };
}
const payload = (entries) => ({ success: true, data: { entry: entries }, id: 'sub-redis-0001' });

describe('asset-event-in with the duplicate filter in Redis (test helper, real redis-server)', function () {
  this.timeout(20000);
  let server, direct, app, received;

  const rig = useRedisRig(helper, { tempPrefix: 'dam-event-in-redis-', password: PASSWORD });
  before(() => { ({ server, direct } = rig); });
  afterEach(() => helper.unload());
  beforeEach(async () => { if (server.running) await direct.flushall(); });

  async function load(redisProps = {}, password = PASSWORD) {
    const flow = [
      { id: 'r1', type: 'asset-redis', name: 'shared', url: server.url, timeout: 300, lease: 5, ...redisProps },
      { id: 'n1', type: 'asset-event-in', name: 'events', path: '/dam/redis', redis: 'r1', wires: [['h1']] },
      { id: 'h1', type: 'helper' }
    ];
    await helper.load([redisNode, (RED) => { app = RED.httpNode; return eventIn(RED); }], flow, { r1: { password } });
    received = [];
    helper.getNode('h1').on('input', (msg) => received.push(msg));
    return helper.getNode('n1');
  }
  const post = (body) => request(app).post('/dam/redis').set('Content-Type', 'application/json').send(body);
  const lastStatus = (node) => (node.status.lastCall ? node.status.lastCall.args[0] : {});
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
  async function waitUntil(check) {
    while (!check()) await new Promise((resolve) => setImmediate(resolve));
  }

  it('drops an entry already emitted, with the key under prefix + {node id} (a cluster hash tag) in Redis', async function () {
    await load();
    (await post(payload([entry(1, 10), entry(2, 20)]))).body.should.eql({ success: true, received: 2, emitted: 2 });
    (await post(payload([entry(1, 10), entry(3, 30)]))).body.should.eql({ success: true, received: 2, emitted: 1 });
    received.map((m) => m.payload.assetId).should.eql([1, 2, 3]);
    const prefix = 'dam:dedup:{n1}:';
    const keys = await direct.keysBuffer('*');
    keys.every((k) => k.subarray(0, prefix.length).toString() === prefix).should.be.true();
    const entryKeys = keys.filter((k) => k.length === prefix.length + 20);
    entryKeys.length.should.equal(3);
    (await direct.pttl(entryKeys[0])).should.be.within(590000, 600000, 'expires after the 600 s window');
    const markers = keys.filter((k) => k.subarray(prefix.length, prefix.length + 2).toString() === 'b:');
    markers.length.should.equal(2, 'one per callback that emitted');
    for (const marker of markers) (await direct.get(marker)).should.equal('d');
  });

  it('an entry another copy claimed and has not emitted yet: the rest is emitted, the answer is 503', async function () {
    const node = await load();
    const { entryKey, RedisDuplicateFilter } = require('../../dist/events');
    const otherCopy = new RedisDuplicateFilter(direct, { prefix: 'dam:dedup:{n1}:', windowMs: 60000, leaseMs: 5000, timeoutMs: 500 });
    const claimed = await otherCopy.claim([entryKey('sub-redis-0001', entry(7, 70))]);
    claimed.verdicts.should.eql(['new']);
    const res = await post(payload([entry(7, 70), entry(8, 80)]));
    res.status.should.equal(503);
    res.body.emitted.should.equal(1);
    received.map((m) => m.payload.assetId).should.eql([8]);
    // The other copy confirms: the server's retry is answered with success, nothing twice.
    await claimed.confirm();
    (await post(payload([entry(7, 70), entry(8, 80)]))).body.should.eql({ success: true, received: 2, emitted: 0 });
    node.should.be.ok();
  });

  it('closed while its claim waits for Redis: nothing emitted, 503, and the claim let go (the retry need not wait for the lease)', async function () {
    const node = await load({ timeout: 5000, lease: 600 });
    (await post(payload([entry(4, 40)]))).status.should.equal(200); // connected
    const realEval = Redis.prototype.eval;
    let evals = 0;
    Redis.prototype.eval = function (...args) { evals++; return realEval.apply(this, args); };
    server.pause();
    try {
      const answer = post(payload([entry(5, 50)])).then((res) => res);
      await waitUntil(() => evals === 1); // the claim is on its way to the paused Redis
      await node.close(false); // a redeploy of this node only
      server.resume();
      const res = await answer;
      res.status.should.equal(503);
      res.body.should.eql({ success: false, error: 'endpoint is closing' });
      received.map((m) => m.payload.assetId).should.eql([4]);
      const markers = await direct.keys('dam:dedup:{n1}:b:*');
      (await Promise.all(markers.map((k) => direct.get(k)))).should.eql(['d'], 'the first callback\'s; none left to block the retry for the 600 s lease');
    } finally {
      Redis.prototype.eval = realEval;
      server.resume();
    }
  });

  it('Redis not answering: 503 within the timeout, nothing emitted, the status says so; then it recovers', async function () {
    const node = await load();
    (await post(payload([entry(1, 1)]))).status.should.equal(200);
    server.pause();
    try {
      // Answered while Redis is still paused: the node did not wait for it (a time bound here is
      // a load test; the status names the 300 ms limit that ended the wait).
      const res = await post(payload([entry(2, 2)]));
      res.status.should.equal(503);
      res.body.should.eql({ success: false, error: 'duplicate filter unavailable; send again later' });
      lastStatus(node).should.match({ fill: 'red', shape: 'ring', text: /did not answer within 300 ms/ });
    } finally {
      server.resume();
    }
    await server.restart(); // and down for a moment: the client reconnects by itself
    // Until it has (its next try may be a few hundred ms after the restart), the callback is
    // refused as the server would be told, and nothing is emitted: the server sends it again.
    let res = await post(payload([entry(2, 2)]));
    while (res.status === 503) {
      res.body.should.eql({ success: false, error: 'duplicate filter unavailable; send again later' });
      received.map((m) => m.payload.assetId).should.eql([1]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      res = await post(payload([entry(2, 2)]));
    }
    res.body.should.eql({ success: true, received: 1, emitted: 1 });
    await settle();
    lastStatus(node).fill.should.equal('green');
    received.map((m) => m.payload.assetId).should.eql([1, 2]);
  });

  it('a wrong password: 503 and a red status naming the problem, never the password', async function () {
    const node = await load({}, 'not-the-password-39f');
    (await post(payload([entry(1, 1)]))).status.should.equal(503);
    lastStatus(node).fill.should.equal('red');
    JSON.stringify(node.status.args).should.not.containEql('not-the-password-39f');
    received.should.eql([]);
  });

  it('a password in the URL is refused with the field named, and not shown', async function () {
    const node = await load({ url: `redis://:${PASSWORD}@127.0.0.1:${server.port}` });
    lastStatus(node).should.match({ fill: 'red', text: /^redis: url: must not hold a password/ });
    JSON.stringify(node.status.args).should.not.containEql(PASSWORD);
    const errors = helper.log().args.map((a) => JSON.stringify(a)).join('\n');
    errors.should.not.containEql(PASSWORD);
    // ioredis also reads one from the query.
    for (const query of [`password=${PASSWORD}`, `db=0&sentinelPassword=${PASSWORD}`]) {
      await helper.unload();
      const other = await load({ url: `redis://127.0.0.1:${server.port}/0?${query}` });
      lastStatus(other).should.match({ fill: 'red', text: /^redis: url: must not hold a password/ }, query);
    }
  });

  it('a claim lease not longer than the timeout is refused, naming both (a claim could expire before its confirmation)', async function () {
    const node = await load({ timeout: 2000, lease: 2 });
    lastStatus(node).should.match({ fill: 'red', text: /^redis: lease: must be longer than the timeout/ });
    (await post(payload([entry(1, 1)]))).status.should.equal(404);
  });

  it('the Redis client is loaded only when an asset-redis node is used', function () {
    const root = path.join(__dirname, '..', '..');
    const script = "require('./nodes/asset-event-in.js'); require('./nodes/asset-redis.js');" +
      "console.log(Object.keys(require.cache).filter((k) => k.includes('/node_modules/ioredis/')).length)";
    execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' }).trim().should.equal('0');
  });
});
