'use strict';
// asset-event-in with its duplicate filter in Redis: the confirmation's untested paths (issue 26
// follow-up, part 2), in the test helper against a real redis-server. Redis is stopped (SIGSTOP) or
// killed (SIGKILL) right when the node sends a confirmation: the test watches the node's calls to
// the real client (counted and passed on, never answered by the test) to know that moment.
// - closed (redeploy) while a confirmation is awaited: 503, that chunk not emitted, its claim let
//   go, so the retry on the new node is emitted at once and once;
// - a confirmation without an answer (Redis stopped, or killed, between claim and confirmation):
//   its outcome is unknown (it may have landed, and then a retry would be dropped as a duplicate:
//   lost), so the entries are handed on anyway, the answer is success and the status red;
// - a claim that lapsed before its confirmation (the flow held the event loop longer than the lease):
//   refused, 503, the chunks handed on before stay emitted and the rest comes with the retry.
require('should');
const path = require('path');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const Redis = require('ioredis');
const eventIn = require('../../nodes/asset-event-in.js');
const redisNode = require('../../nodes/asset-redis.js');
const { SCRIPTS, YIELD_EVERY } = require('../../dist/events');
const { tempDir, rmDir, waitFor } = require('../reliability/lib/support');
const { installed, startRedis } = require('../reliability/lib/servers');

helper.init(require.resolve('node-red'));

function entry(assetId, rrn = 1) {
  return { assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action: 'added' };
}
const payload = (entries) => ({ success: true, data: { entry: entries }, id: 'sub-confirm-0001' });
const many = (base, n) => Array.from({ length: n }, (_, i) => entry(base + i));

describe('asset-event-in with the Redis filter: closed during, unanswered or lapsed confirmation (test helper, real redis-server)', function () {
  this.timeout(60000);
  let work, server, direct, app, received;
  const realEval = Redis.prototype.eval;
  /** Called with the script's arguments as the node asks the real client to run a confirmation. */
  let onConfirm;

  before(async function () {
    if (!installed('redis-server')) { if (process.env.CI) throw new Error('redis-server is not installed'); this.skip(); }
    work = tempDir('dam-event-in-confirm-');
    server = await startRedis(path.join(work, 'redis'));
    direct = new Redis(server.url, { maxRetriesPerRequest: 0 });
    direct.on('error', () => undefined);
    Redis.prototype.eval = function (script, ...args) {
      if (script === SCRIPTS.confirm && onConfirm) onConfirm(args);
      return realEval.call(this, script, ...args);
    };
    await helper.startServer();
  });
  after(async function () {
    Redis.prototype.eval = realEval;
    await helper.stopServer();
    if (direct) direct.disconnect();
    if (server) { server.resume(); await server.stop(); }
    rmDir(work);
  });
  afterEach(async () => {
    onConfirm = undefined;
    if (server.running) server.resume();
    await helper.unload();
  });
  beforeEach(async () => {
    if (!server.running) await server.start();
    await waitFor('Redis answering', () => direct.ping().then(() => true, () => false), 20000);
    await direct.flushall();
  });

  /** Loads the flow; the helper node can work synchronously on a message (work(msg) -> ms). */
  async function load(redisProps = {}, work = () => 0) {
    const flow = [
      { id: 'r1', type: 'asset-redis', name: 'shared', url: server.url, timeout: 300, lease: 5, ...redisProps },
      { id: 'n1', type: 'asset-event-in', name: 'events', path: '/dam/confirm', redis: 'r1', wires: [['h1']] },
      { id: 'h1', type: 'helper' }
    ];
    await helper.load([redisNode, (RED) => { app = RED.httpNode; return eventIn(RED); }], flow);
    received = received || [];
    helper.getNode('h1').on('input', (msg) => {
      received.push(msg.payload.assetId);
      const until = Date.now() + work(msg);
      while (Date.now() < until) { /* the flow holds the event loop */ }
    });
    return helper.getNode('n1');
  }
  const post = (body) => request(app).post('/dam/confirm').set('Content-Type', 'application/json').send(body);
  const lastStatus = (node) => (node.status.lastCall ? node.status.lastCall.args[0] : {});
  const markerStates = async () => {
    const keys = await direct.keys('dam:dedup:{n1}:b:*');
    return (await Promise.all(keys.map((k) => direct.get(k)))).sort();
  };
  const counts = (ids) => ids.reduce((m, id) => m.set(id, (m.get(id) || 0) + 1), new Map());

  beforeEach(() => { received = []; });

  it('closed (redeploy) while the confirmation is awaited: 503, nothing emitted, the claim let go; the retry on the new node emits it once', async function () {
    const node = await load({ timeout: 5000, lease: 600 });
    (await post(payload([entry(1)]))).status.should.equal(200); // connected
    let asked = false;
    onConfirm = () => { asked = true; server.pause(); }; // the claim was answered; its confirmation meets a stopped Redis
    const answer = post(payload([entry(2)])).then((r) => r); // supertest sends once asked for the answer
    await waitFor('the confirmation sent', () => asked, 20000, 5);
    onConfirm = undefined;
    await node.close(false); // a redeploy of this node only
    server.resume();
    const res = await answer;
    res.status.should.equal(503);
    res.body.should.eql({ success: false, error: 'endpoint is closing' });
    received.should.eql([1]);
    (await markerStates()).should.eql(['d'], 'the first callback\'s; the second\'s confirmation landed, then was undone');
    await helper.unload();
    await load({ timeout: 5000, lease: 600 });
    (await post(payload([entry(2)]))).body.should.eql({ success: true, received: 1, emitted: 1 });
    received.should.eql([1, 2]);
  });

  it(`closed while the second chunk's confirmation is awaited (${YIELD_EVERY * 2 + 200} entries): the first chunk stays emitted, the retry emits the rest once`, async function () {
    const node = await load({ timeout: 5000, lease: 600 });
    const entries = many(1000, YIELD_EVERY * 2 + 200);
    let confirmations = 0;
    onConfirm = () => { if (++confirmations === 2) server.pause(); };
    const answer = post(payload(entries)).then((r) => r);
    await waitFor('the second confirmation sent', () => confirmations === 2, 20000, 5);
    onConfirm = undefined;
    received.length.should.equal(YIELD_EVERY, 'the first chunk was handed on after its confirmation');
    await node.close(false);
    server.resume();
    (await answer).status.should.equal(503);
    received.length.should.equal(YIELD_EVERY, 'the second chunk was not handed on');
    await helper.unload();
    await load({ timeout: 5000, lease: 600 });
    const retry = await post(payload(entries));
    retry.body.should.eql({ success: true, received: entries.length, emitted: entries.length - YIELD_EVERY });
    const seen = counts(received);
    entries.filter((e) => seen.get(e.assetId) !== 1).length.should.equal(0, 'each entry once');
  });

  it('a confirmation without an answer (Redis stopped between claim and confirmation): handed on anyway, success, red status; the late confirmation makes a resend a duplicate', async function () {
    const node = await load();
    (await post(payload([entry(1)]))).status.should.equal(200);
    onConfirm = () => { onConfirm = undefined; server.pause(); };
    const res = await post(payload([entry(2), entry(3)]));
    res.body.should.eql({ success: true, received: 2, emitted: 2 });
    received.should.eql([1, 2, 3]);
    lastStatus(node).should.match({ fill: 'red', shape: 'ring', text: /did not answer within 300 ms/ });
    server.resume();
    await waitFor('the late confirmation landed', async () => (await markerStates()).join() === 'd,d', 20000);
    (await post(payload([entry(2), entry(3)]))).body.should.eql({ success: true, received: 2, emitted: 0 });
    received.should.eql([1, 2, 3]);
    lastStatus(node).should.not.have.property('fill', 'red');
  });

  it('a confirmation without an answer (Redis SIGKILLed between claim and confirmation): handed on anyway, success, red status until Redis answers again', async function () {
    const node = await load({ lease: 1 });
    (await post(payload([entry(1)]))).status.should.equal(200);
    onConfirm = () => { onConfirm = undefined; server.kill(); };
    const res = await post(payload([entry(2)]));
    res.body.should.eql({ success: true, received: 1, emitted: 1 });
    received.should.eql([1, 2]);
    lastStatus(node).should.match({ fill: 'red', shape: 'ring' });
    await server.start();
    let answer;
    await waitFor('a callback answered 200 again', async () => (answer = await post(payload([entry(3)]))).status === 200, 30000, 100);
    answer.body.should.eql({ success: true, received: 1, emitted: 1 });
    received.should.eql([1, 2, 3]);
    lastStatus(node).should.not.have.property('fill', 'red');
  });

  it(`a claim that lapsed before its confirmation (the flow held the event loop past the lease): 503, the chunks handed on stay emitted, the retry emits the rest once`, async function () {
    const node = await load({ lease: 1 }, (msg) => (msg.parts.index === YIELD_EVERY - 1 ? 1500 : 0));
    const entries = many(5000, YIELD_EVERY + 100);
    const res = await post(payload(entries));
    res.status.should.equal(503);
    received.length.should.equal(YIELD_EVERY, 'the second chunk\'s claim had lapsed: not handed on');
    lastStatus(node).should.match({ fill: 'red', text: /lapsed/ });
    let retry;
    await waitFor('the retry answered 200', async () => (retry = await post(payload(entries))).status === 200, 30000, 100);
    retry.body.should.eql({ success: true, received: entries.length, emitted: 100 });
    const seen = counts(received);
    entries.filter((e) => seen.get(e.assetId) !== 1).length.should.equal(0, 'each entry once');
  });
});
