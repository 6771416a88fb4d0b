'use strict';
// asset-event-in "at least once" holds a callback while its flow is far behind (pacing.ts), in a
// real Node-RED runtime (test helper) over real HTTP: the answer waits until the flow takes
// entries, or until the hold's limit; a node that closes answers what it holds 503. And the
// pacer's rules on their own (order, limit, release).
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const helper = require('node-red-node-test-helper');
const http = require('http');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const { runningDelivery } = require('../../dist/nodes/asset-event-in/delivery');
const { CallbackPacer, paceAbove, PACE_ABOVE_MIN } = require('../../dist/nodes/asset-event-in/pacing');
const { DELIVERY_DEFAULTS } = require('../../dist/nodes/asset-event-in/delivery');

const HOLD_MAX_MS = DELIVERY_DEFAULTS.holdMaxS * 1000;
// Tests of a release by the flow hold up to 20 s: far from any release by the limit, also on a loaded machine.
const LONG_HOLD = { holdMax: 20 };
const LONG_HOLD_MS = 20000;

helper.init(require.resolve('node-red'));

const entry = (assetId) => ({ assetId, rrn: 10, path: `/inbox/file-${assetId}.txt`, action: 'modified' });
const payload = (ids) => ({ success: true, data: { entry: ids.map(entry) }, id: 'sub-pace-0001' });
const until = async (check, what) => {
  for (let i = 0; i < 2000; i++) { if (check()) return; await new Promise((r) => setTimeout(r, 10)); }
  throw new Error(`timed out waiting for ${what}`);
};
const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('asset-event-in "at least once": callbacks held while the flow is behind (pacing)', function () {
  this.timeout(60000);
  let app;
  let userDir;
  let held; // msgs the work node holds (not acknowledged yet)
  let acked;

  before(() => helper.startServer());
  after(() => helper.stopServer());
  beforeEach(() => {
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-pace-test-'));
    helper.settings({ userDir });
  });
  afterEach(async () => {
    await helper.unload();
    helper.settings({});
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  // inboxMax 10: callbacks are held while more than 5 entries wait (paceAbove); one entry in flight at a time.
  async function load(maxInFlight = 1, props = {}) {
    const flow = [
      { id: 'f1', type: 'tab' },
      { id: 'n1', z: 'f1', type: 'asset-event-in', path: '/dam/paced', delivery: 'atLeastOnce', inboxMax: 10, maxInFlight, outputs: 2, wires: [['w1'], []], ...props },
      { id: 'w1', z: 'f1', type: 'helper', wires: [['a1']] },
      { id: 'a1', z: 'f1', type: 'asset-event-ack', action: 'ack', wires: [['done1']] },
      { id: 'done1', z: 'f1', type: 'helper' }
    ].map((n) => (n.type === 'tab' ? n : { x: 100, y: 100, ...n }));
    await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck], flow);
    held = []; acked = [];
    helper.getNode('w1').on('input', (msg) => held.push(msg));
    helper.getNode('done1').on('input', (msg) => acked.push(msg));
  }
  const ackNext = () => helper.getNode('a1').receive(held.shift());
  /** Stores entries 1..last (answered 200) and waits until the flow has the first `inFlight` of them: the rest wait. */
  async function fallBehind(last, inFlight = 1) {
    (await request(app).post('/dam/paced').send(payload(range(1, last)))).status.should.equal(200);
    await until(() => held.length === inFlight, 'the first deliveries');
  }
  const oneHeld = () => until(() => runningDelivery('n1')?.holding === 1, 'a callback held');
  /** A callback whose answer is collected, not awaited. */
  function post(ids) {
    const call = { res: undefined };
    call.done = request(app).post('/dam/paced').send(payload(ids)).then((res) => { call.res = res; return res; });
    return call;
  }

  it('holds a callback while more entries wait than the mark, answers it once the flow takes some; order kept', async function () {
    paceAbove(1, 10).should.equal(5);
    await load(1, LONG_HOLD);
    await fallBehind(8); // 1 in flight, 7 waiting
    const second = post([9]);
    await oneHeld();
    const n1 = helper.getNode('n1');
    await until(() => n1.status.args.some((a) => /flow behind: 1 held/.test(a[0].text || '')), 'the hold in the status');
    // 6 waiting after the next take: still held. The answer has not come (it waits for the flow, not for a time).
    ackNext();
    await until(() => held.length === 1 && acked.length === 1, 'the second delivery');
    (second.res === undefined).should.be.true();
    runningDelivery('n1').holding.should.equal(1);
    const acknowledged = Date.now();
    ackNext(); // 5 wait now: the mark, no more than it
    const res = await second.done;
    res.status.should.equal(200);
    (Date.now() - acknowledged).should.be.below(LONG_HOLD_MS / 2); // let go by the flow, not by the limit
    res.body.should.eql({ success: true, received: 1, stored: 1 });
    helper.getNode('w1').on('input', () => ackNext()); // the flow catches up: each entry acknowledged as it comes
    while (held.length) ackNext();
    await until(() => acked.length === 9, 'every acknowledgement');
    acked.map((m) => m.payload.assetId).should.eql(range(1, 9));
  });

  it('lets a held callback go once acknowledgements are written, with no delivery after them', async function () {
    // 3 in flight, 6 waiting: held. The 3 are acknowledged and the next 3 taken before those
    // acknowledgements are on disk (they still count as stored then); nothing is taken after the write.
    await load(3, LONG_HOLD);
    await fallBehind(9, 3);
    const second = post([10]);
    await oneHeld();
    const started = Date.now();
    ackNext(); ackNext(); ackNext();
    const res = await second.done;
    res.status.should.equal(200);
    // Long before the hold's limit (the commit before this test waited for it: 5 s of 5); the margin is for a loaded machine.
    (Date.now() - started).should.be.below(LONG_HOLD_MS / 2);
    await until(() => held.length === 3, 'the next three deliveries'); // and nothing else was acknowledged
    await until(() => acked.length === 3, 'their acknowledgements');
  });

  it('answers after the hold\'s limit when the flow stays behind: stored, not refused', async function () {
    await load();
    await fallBehind(7);
    const started = Date.now();
    const res = await request(app).post('/dam/paced').send(payload([8]));
    const waited = Date.now() - started;
    res.status.should.equal(200);
    res.body.should.eql({ success: true, received: 1, stored: 1 });
    waited.should.be.aboveOrEqual(HOLD_MAX_MS - 50); // a timer never fires early; the margin is the clock's rounding
    runningDelivery('n1').counts().stored.should.equal(8);
    held.length.should.equal(1); // the flow did nothing meanwhile
  });

  it('Hold up to: the node\'s limit (1 s), and 0 never holds', async function () {
    await load(1, { holdMax: 1 });
    await fallBehind(7);
    const started = Date.now();
    (await request(app).post('/dam/paced').send(payload([8]))).status.should.equal(200);
    (Date.now() - started).should.be.aboveOrEqual(950).and.below(HOLD_MAX_MS);
    await helper.unload();
    await load(1, { holdMax: 0 });
    // The inbox is the same file: 7 entries wait behind the one in flight; nothing is held.
    await until(() => held.length === 1, 'the first delivery again');
    const again = Date.now();
    (await request(app).post('/dam/paced').send(payload([9]))).status.should.equal(200);
    (Date.now() - again).should.be.below(HOLD_MAX_MS / 2); // not held (a hold of the default would take 5 s)
    runningDelivery('n1').holding.should.equal(0);
    runningDelivery('n1').counts().stored.should.equal(9);
  });

  it('refuses a Hold up to that is not 0 to 25 seconds, naming the field', async function () {
    await load(1, { holdMax: 30 });
    String(helper.getNode('n1').error.firstCall.args[0]).should.match(/holdMax: must be a number of seconds from 0 to 25/);
  });

  it('a callback whose caller went away during the hold is not stored (the server sends it again)', async function () {
    await load(1, { holdMax: 1 });
    await fallBehind(7);
    // A server of its own for the route (as supertest makes one), so that the test can cut the connection.
    const server = http.createServer(app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address();
    const body = JSON.stringify(payload([8]));
    const gone = http.request({ host: '127.0.0.1', port, path: '/dam/paced', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    gone.on('error', () => undefined);
    gone.end(body);
    await oneHeld();
    gone.destroy();
    await until(() => runningDelivery('n1').holding === 0, 'the hold over');
    // The next callback, held as long, is stored after it: only its entry counts.
    (await request(app).post('/dam/paced').send(payload([9]))).status.should.equal(200);
    runningDelivery('n1').counts().stored.should.equal(8);
    server.close();
  });

  it('a node that closes answers the callbacks it holds 503 (the server sends them again), and stores none of them', async function () {
    await load(1, LONG_HOLD);
    await fallBehind(7);
    const second = post([8]);
    await oneHeld();
    const delivery = runningDelivery('n1');
    await helper.unload();
    const res = await second.done;
    res.status.should.equal(503);
    delivery.counts().stored.should.equal(7);
  });
});

describe('CallbackPacer', function () {
  const tick = () => new Promise((r) => setImmediate(r));

  it('lets a callback through at once unless the flow is behind', async function () {
    let behind = false;
    const pacer = new CallbackPacer(() => behind, 60000);
    await pacer.wait();
    behind = true;
    let through = false;
    pacer.wait().then(() => { through = true; });
    await tick();
    through.should.be.false();
    pacer.holding.should.equal(1);
    pacer.release(); // still behind
    await tick();
    through.should.be.false();
    behind = false;
    pacer.release();
    await tick();
    through.should.be.true();
    pacer.holding.should.equal(0);
  });

  it('never lets a callback overtake one held before it, and releases them in arrival order', async function () {
    let behind = true;
    const pacer = new CallbackPacer(() => behind, 60000);
    const order = [];
    pacer.wait().then(() => order.push('a'));
    behind = false; // caught up, but "a" is still held: "b" queues behind it
    pacer.wait().then(() => order.push('b'));
    await tick();
    order.should.eql([]);
    pacer.release();
    await tick();
    order.should.eql(['a', 'b']);
  });

  it('lets a held callback go after the hold\'s limit, and all of them on release(all)', async function () {
    const pacer = new CallbackPacer(() => true, 30);
    const started = Date.now();
    await pacer.wait();
    (Date.now() - started).should.be.aboveOrEqual(25);
    const long = new CallbackPacer(() => true, 60000);
    const going = [long.wait(), long.wait()];
    long.release(true);
    await Promise.all(going);
    long.holding.should.equal(0);
  });

  it('marks: twice the in-flight bound, at least PACE_ABOVE_MIN, at most half the inbox', function () {
    paceAbove(10, 10000).should.equal(PACE_ABOVE_MIN);
    paceAbove(2000, 100000).should.equal(4000);
    paceAbove(10, 600).should.equal(300);
    paceAbove(1, 1).should.equal(1);
  });
});
