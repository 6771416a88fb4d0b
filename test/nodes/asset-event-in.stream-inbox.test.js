'use strict';
// asset-event-in with Delivery "at least once" and an asset-redis node: its inbox is a Redis Stream
// (test helper, real redis-server on a free port). Same settings and msg properties as the journal
// inbox; the duplicate window is kept by the inbox's store script.
require('should');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const redisNode = require('../../nodes/asset-redis.js');
const { useRedisRig } = require('../lib/redis-rig');

helper.init(require.resolve('node-red'));

const entry = (assetId, rrn) => ({ assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action: 'modified' });
const payload = (entries) => ({ success: true, data: { entry: entries }, id: 'sub-stream-0001' });
const STREAM = 'dam:dedup:{n1}:in:s';

describe('asset-event-in at least once with an asset-redis node: the Redis Stream inbox (test helper, real redis-server)', function () {
  this.timeout(20000);
  let server, direct, app, seen, done, parked;

  const rig = useRedisRig(helper, { tempPrefix: 'dam-event-in-stream-' });
  before(() => { ({ server, direct } = rig); });
  afterEach(() => helper.unload());
  beforeEach(async () => { if (server.running) await direct.flushall(); });

  /** No user directory in the settings: the Redis inbox does not need one. */
  async function load(holdWork = false, props = {}) {
    const flow = [
      { id: 'f1', type: 'tab' },
      { id: 'r1', type: 'asset-redis', name: 'shared', url: server.url, timeout: 500, lease: 5 },
      { id: 'n1', z: 'f1', x: 1, y: 1, type: 'asset-event-in', path: '/dam/stream', redis: 'r1', delivery: 'atLeastOnce', visibilityTimeout: 60, outputs: 2, wires: [['w1'], ['p1']], ...props },
      { id: 'rj', z: 'f1', x: 1, y: 1, type: 'asset-event-ack', action: 'reject', wires: [['d1']] },
      { id: 'p1', z: 'f1', x: 1, y: 1, type: 'helper' },
      { id: 'w1', z: 'f1', x: 1, y: 1, type: 'helper', wires: [['a1']] },
      { id: 'a1', z: 'f1', x: 1, y: 1, type: 'asset-event-ack', action: 'ack', wires: [['d1']] },
      { id: 'd1', z: 'f1', x: 1, y: 1, type: 'helper' }
    ];
    await helper.load([redisNode, eventAck, (RED) => { app = RED.httpNode; return eventIn(RED); }], flow);
    seen = [];
    done = [];
    const work = helper.getNode('w1');
    work.on('input', (msg) => { seen.push(msg); if (!holdWork) work.send(msg); });
    helper.getNode('d1').on('input', (msg) => done.push(msg));
    parked = [];
    helper.getNode('p1').on('input', (msg) => parked.push(msg));
    return helper.getNode('n1');
  }
  const post = (body) => request(app).post('/dam/stream').set('Content-Type', 'application/json').send(body);
  async function until(check, what) {
    for (let i = 0; i < 1000; i++) { if (await check()) return; await new Promise((r) => setTimeout(r, 10)); }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('stores in the stream before the answer, delivers with the handle, acknowledges (the stream empties); a repeat is not stored', async function () {
    await load(true);
    (await post(payload([entry(1, 10), entry(2, 20)]))).body.should.eql({ success: true, received: 2, stored: 2 });
    (await direct.xlen(STREAM)).should.equal(2, 'in Redis when the server got its 2xx');
    await until(() => seen.length === 2, 'both delivered');
    seen.map((m) => [m.payload.assetId, m.redelivered, m.subscriptionId, m.topic]).should.eql([[1, 0, 'sub-stream-0001', 'modified'], [2, 0, 'sub-stream-0001', 'modified']]);
    seen[0]._inbox.should.match({ node: 'n1', delivery: 1 });
    (await post(payload([entry(1, 10)]))).body.should.eql({ success: true, received: 1, stored: 0 }, 'the server sending it again');
    for (const m of seen) helper.getNode('w1').send(m);
    await until(() => done.length === 2, 'both acknowledged');
    await until(async () => (await direct.xlen(STREAM)) === 0, 'the stream empty');
    (await direct.keys('*')).every((k) => k.startsWith('dam:dedup:{n1}:in:')).should.be.true();
  });

  it('the DAM server away: deliveries held, one probe at a time, nothing parked past Deliveries; the probe\'s acknowledgement resumes them', async function () {
    await load(true, { maxDeliveries: 2, rejectBackoff: 0.05 });
    await post(payload([entry(1, 1), entry(2, 1), entry(3, 1)]));
    await until(() => seen.length === 3, 'three delivered');
    const away = (msg, assetError) => helper.getNode('rj').receive(Object.assign(msg, { error: { message: 'connect ECONNREFUSED' }, assetError }));
    seen.splice(0).forEach((m) => away(m, { kind: 'network', code: 'ECONNREFUSED' }));
    let probe;
    for (let i = 0; i < 6; i++) {
      await until(() => seen.length >= 1, `probe ${i + 1}`);
      seen.length.should.equal(1, 'one probe at a time');
      probe = seen.shift();
      if (i < 5) away(probe, { kind: 'http', status: 503 });
    }
    parked.should.eql([]);
    require('../../dist/nodes/shared/server-answers').noteOutcome('server-a'); // what a DAM node's success does (the failed node is not known here: any server counts)
    helper.getNode('w1').send(probe); // to the ack node
    await until(() => seen.length === 2, 'the other two at once');
    seen.map((m) => m.payload.assetId).sort().should.eql([1, 2, 3].filter((a) => a !== probe.payload.assetId));
    parked.should.eql([]);
  });

  it('Inbox size bounds the stream too: a callback that would pass it is answered 503, nothing dropped; taken once an acknowledgement makes room', async function () {
    const node = await load(true, { inboxMaxMB: 0.05 });
    // Real HTTP on 127.0.0.1 (supertest would listen on every interface).
    const http = require('http');
    const local = http.createServer(app);
    await new Promise((r) => local.listen(0, '127.0.0.1', r));
    try {
      const big = (assetId) => fetch(`http://127.0.0.1:${local.address().port}/dam/stream`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload([{ ...entry(assetId, 1), blob: 'x'.repeat(30000) }]))
      });
      (await big(1)).status.should.equal(200);
      const refused = await big(2);
      refused.status.should.equal(503);
      (await refused.json()).error.should.match(/inbox full \(0\.05 MB\)/);
      (await direct.xlen(STREAM)).should.equal(1);
      await until(() => node.status.args.some(([st]) => st && st.fill === 'red' && /inbox full \(0\.05 MB\)/.test(st.text)), 'a red "inbox full" status');
      await until(() => seen.length === 1, 'the stored entry delivered');
      helper.getNode('w1').send(seen[0]); // to the ack node
      await until(() => done.length === 1, 'acknowledged');
      await until(async () => (await big(2)).status === 200, 'the retry taken');
    } finally {
      await new Promise((r) => local.close(r));
    }
  });

  it('Redis down: the callback is answered 503 naming the inbox, the status is red; back up, it is stored', async function () {
    const node = await load();
    await server.stop();
    const res = await post(payload([entry(5, 1)]));
    res.status.should.equal(503);
    res.body.error.should.match(/inbox cannot store: Redis/);
    await until(() => node.status.args.some(([s]) => s && s.fill === 'red' && /inbox cannot store/.test(s.text)), 'the status red with the reason');
    await server.start();
    await until(async () => (await post(payload([entry(5, 1)]))).status === 200, 'stored once Redis is back');
    await until(() => done.length === 1, 'delivered and acknowledged');
    done[0].payload.assetId.should.equal(5);
  });
});
