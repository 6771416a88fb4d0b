'use strict';
// asset-event-in with Delivery "at least once" and asset-event-ack, in a real Node-RED runtime
// (test helper): stored before the answer, the handle through change/function/link nodes, order
// per asset, rejection, parking on the second output, bound, redeploy, removal, switch back.
const should = require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const coreNodes = ['function/15-change.js', 'function/10-function.js', 'common/60-link.js'].map((f) => require(`@node-red/nodes/core/${f}`));
const { parseJournal } = require('../../dist/events/inbox');
const { inboxFile, runningDelivery } = require('../../dist/nodes/asset-event-in/delivery');
// What a DAM node does when its call succeeds (shared/input.ts): the work node here stands in for one.
const { noteOutcome, callsOf } = require('../../dist/nodes/shared/server-answers');

helper.init(require.resolve('node-red'));

function entry(assetId, rrn, action = 'modified') {
  return { assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action };
}
function payload(entries, id = 'sub-inbox-0001') {
  return { success: true, data: { entry: entries }, id };
}
const until = async (check, what) => {
  for (let i = 0; i < 1000; i++) { if (check()) return; await new Promise((r) => setTimeout(r, 10)); }
  throw new Error(`timed out waiting for ${what}`);
};

describe('asset-event-in "at least once" + asset-event-ack (test helper)', function () {
  this.timeout(30000);
  let app;
  let userDir;
  let seen; // msgs that reached the work node (before the ack)
  let acked; // msgs after the ack node
  let parked; // msgs on asset-event-in's second output
  let holdWork; // assetIds whose msgs the work node holds (not passed to the ack yet)
  let held;

  before(() => helper.startServer());
  after(() => helper.stopServer());
  beforeEach(() => {
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-ack-test-'));
    helper.settings({ userDir });
  });
  afterEach(async () => {
    await helper.unload();
    helper.settings({});
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  /**
   * event-in (n1) -> change (keeps the msg, sets msg.step) -> function (returns a clone) -> link out
   * -> link in -> hold/work (helper w1, which the test drives) ; the test sends the work's msgs into
   * the ack node (a1) by calling w1's send: ack -> helper done1. n1's second output -> helper p1.
   */
  function flow(props = {}, ackProps = {}) {
    // x and y: Node-RED takes a node without them for a config node.
    return addXY([
      { id: 'f1', type: 'tab' },
      { id: 'n1', z: 'f1', type: 'asset-event-in', path: '/dam/inbox', delivery: 'atLeastOnce', maxInFlight: 10, outputs: 2, wires: [['c1'], ['p1']], ...props },
      { id: 'c1', z: 'f1', type: 'change', rules: [{ t: 'set', p: 'step', pt: 'msg', to: 'changed', tot: 'str' }], wires: [['fn1']] },
      { id: 'fn1', z: 'f1', type: 'function', func: 'return RED.util.cloneMessage(msg);', outputs: 1, wires: [['lo1']] },
      { id: 'lo1', z: 'f1', type: 'link out', links: ['li1'], wires: [] },
      { id: 'li1', z: 'f1', type: 'link in', links: ['lo1'], wires: [['w1']] },
      { id: 'w1', z: 'f1', type: 'helper', wires: [['a1']] },
      { id: 'a1', z: 'f1', type: 'asset-event-ack', action: 'ack', wires: [['done1']], ...ackProps },
      { id: 'r1', z: 'f1', type: 'asset-event-ack', action: 'reject', wires: [['done1']] },
      { id: 'done1', z: 'f1', type: 'helper' },
      { id: 'p1', z: 'f1', type: 'helper' }
    ]);
  }
  const addXY = (nodes) => nodes.map((n) => (n.type === 'tab' ? n : { x: 100, y: 100, ...n }));

  async function load(props, ackProps) {
    await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck, ...coreNodes], flow(props, ackProps));
    wireHelpers();
  }
  function wireHelpers() {
    seen = []; acked = []; parked = []; held = [];
    holdWork = holdWork || new Set();
    helper.getNode('w1').on('input', (msg) => {
      seen.push(msg);
      if (holdWork.has(msg.payload.assetId)) held.push(msg);
      else helper.getNode('a1').receive(msg);
    });
    helper.getNode('done1').on('input', (msg) => acked.push(msg));
    helper.getNode('p1').on('input', (msg) => parked.push(msg));
  }
  beforeEach(() => { holdWork = new Set(); });

  const journal = () => parseJournal(fs.readFileSync(inboxFile(userDir, 'n1'))).records;

  it('stores before it answers; the handle survives change, function and link nodes; ack empties the inbox', async function () {
    await load();
    holdWork.add(1).add(2);
    const res = await request(app).post('/dam/inbox').send(payload([entry(1, 10), entry(2, 20)]));
    res.status.should.equal(200);
    res.body.should.eql({ success: true, received: 2, stored: 2 });
    // On disk when the answer came.
    const stores = journal().filter((r) => r.c !== undefined);
    stores.length.should.equal(1); // one record per callback: the callback as it was sent
    stores[0].k.should.eql([1, 2]);
    stores[0].b.should.eql(payload([entry(1, 10), entry(2, 20)]));
    await until(() => held.length === 2, 'two deliveries');
    held.forEach((m) => {
      m.step.should.equal('changed');
      m.redelivered.should.equal(0);
      m._inbox.should.have.properties({ node: 'n1', delivery: 1 });
      m.subscriptionId.should.equal('sub-inbox-0001');
      m.topic.should.equal('modified');
      (m.parts === undefined).should.be.true();
    });
    held.forEach((m) => helper.getNode('a1').receive(m));
    await until(() => acked.length === 2, 'two acknowledgements');
    helper.getNode('n1').status.lastCall; // status is throttled; the journal is the truth
    const records = journal();
    records.filter((r) => r.a !== undefined).length.should.equal(2);
  });

  it('an older re-send of an rrn beyond 2^53 is left out, as one of a smaller rrn is (before, it had no revision to compare)', async function () {
    await load();
    const post = (rrn) => request(app).post('/dam/inbox').set('content-type', 'application/json')
      .send(`{"success":true,"data":{"entry":[{"assetId":5,"rrn":${rrn},"path":"/inbox/a.txt"}]},"id":"sub-inbox-0001"}`);
    (await post('9007199254741001').expect(200)).body.should.eql({ success: true, received: 1, stored: 1 });
    (await post('9007199254740993').expect(200)).body.should.eql({ success: true, received: 1, stored: 0 }); // older: a re-send
    (await post('9007199254741003').expect(200)).body.should.eql({ success: true, received: 1, stored: 1 }); // newer
    await until(() => seen.length === 2, 'the two stored entries');
    seen.map((m) => m.payload.rrn).should.eql(['9007199254741001', '9007199254741003']);
  });

  it('the record keeps the callback\'s text: after a restart its entries are what at most once emits (64-bit rrn exact, duplicates left out, any layout)', async function () {
    // Pretty-printed (line breaks between tokens, an escaped one in a string), an rrn beyond 2^53,
    // numbers as text, and a vendor field; the second copy of asset 3 is a duplicate in the callback.
    const text = '{\n  "success": "true",\n  "data": { "entry": [\n'
      + '    { "assetId": 1, "rrn": 12345678901234567890, "path": "/a/x.txt", "note": "line\\nbreak" },\n'
      + '    { "assetId": 3, "rrn": 8 },\n    { "assetId": 3, "rrn": 8 },\n'
      + '    { "assetId": "2", "rrn": "7", "action": "added", "vendor": { "tags": [1, "two", null] } }\n  ] },\n  "id": "sub-inbox-0001"\n}';
    const post = () => request(app).post('/dam/inbox').set('content-type', 'application/json').send(text);
    // What "at most once" emits for the same text.
    await load({ delivery: 'atMostOnce', outputs: 1, dedup: true });
    await post().expect(200);
    await until(() => seen.length === 3, 'at most once');
    const expected = seen.map((m) => m.payload);
    expected[0].rrn.should.equal('12345678901234567890');
    expected[2].should.have.properties({ assetId: 2, rrn: 7 });
    await helper.unload();
    await load({ dedup: true });
    holdWork.add(1).add(2).add(3);
    const res = await post().expect(200);
    res.body.should.eql({ success: true, received: 4, stored: 3 });
    await until(() => held.length === 3, 'three deliveries');
    held.map((m) => m.payload).should.eql(expected);
    const lines = fs.readFileSync(inboxFile(userDir, 'n1'), 'utf8').split('\n').filter(Boolean);
    const stores = journal().filter((r) => r.c !== undefined);
    stores.length.should.equal(1);
    lines.length.should.equal(journal().length); // the callback's line breaks did not split its record
    stores[0].should.not.have.property('e');
    stores[0].x.should.eql([0, 1, 3]); // the places of the entries stored in the callback's list
    // A restart (all nodes) reads the entries back from the record.
    await helper.setFlows(flow({ dedup: true }), 'full');
    wireHelpers();
    await until(() => held.length === 3, 'delivered again after the restart');
    held.map((m) => m.payload).should.eql(expected);
    held.forEach((m) => m.redelivered.should.equal(1));
  });

  it('keeps per-asset order: the next entry of an asset leaves only after the acknowledgement', async function () {
    await load();
    holdWork.add(7);
    await request(app).post('/dam/inbox').send(payload([entry(7, 1), entry(7, 2), entry(8, 1), entry(7, 3)])).expect(200);
    await until(() => seen.length === 2, 'the first of each asset');
    seen.map((m) => `${m.payload.assetId}/${m.payload.rrn}`).should.eql(['7/1', '8/1']);
    await new Promise((r) => setTimeout(r, 100));
    seen.length.should.equal(2);
    holdWork.delete(7);
    helper.getNode('a1').receive(held.shift());
    await until(() => seen.length === 4, 'the rest of asset 7');
    seen.map((m) => `${m.payload.assetId}/${m.payload.rrn}`).should.eql(['7/1', '8/1', '7/2', '7/3']);
  });

  it('reject: delivered again with msg.redelivered; parked on the second output after the last delivery, with a warning and the status', async function () {
    await load({ maxDeliveries: 2, rejectBackoff: 0 });
    holdWork.add(5);
    await request(app).post('/dam/inbox').send(payload([entry(5, 1), entry(5, 2)])).expect(200);
    await until(() => held.length === 1, 'first delivery');
    helper.getNode('r1').receive(Object.assign(held.shift(), { error: { message: 'mirror disk full' } }));
    await until(() => held.length === 1, 'second delivery');
    held[0].redelivered.should.equal(1);
    held[0].payload.rrn.should.equal(1);
    helper.getNode('r1').receive(Object.assign(held.shift(), { error: { message: 'mirror disk full' } }));
    await until(() => parked.length === 1 && held.length === 1, 'parked, and the next entry of the asset');
    parked[0].payload.should.eql(entry(5, 1));
    parked[0].parked.should.have.properties({ deliveries: 2, reason: 'mirror disk full' });
    held[0].payload.rrn.should.equal(2);
    const n1 = helper.getNode('n1');
    n1.warn.args.map((a) => String(a[0])).join('\n').should.match(/parked after 2 deliveries \(asset 5\): mirror disk full/);
    await until(() => n1.status.args.some((a) => /1 parked/.test(a[0].text || '')), 'the parked count in the status');
    // Parked entries want someone's attention: yellow, as a node that still runs (dot).
    n1.status.args.filter((a) => /1 parked/.test(a[0].text || '')).every((a) => a[0].fill === 'yellow' && a[0].shape === 'dot').should.be.true();
  });

  it('a rejection reason of megabytes is kept to 1000 characters (in the inbox, the warning, the parked msg)', async function () {
    await load({ maxDeliveries: 1, rejectBackoff: 0 });
    holdWork.add(6);
    await request(app).post('/dam/inbox').send(payload([entry(6, 1)])).expect(200);
    await until(() => held.length === 1, 'the delivery');
    helper.getNode('r1').receive(Object.assign(held.shift(), { error: { message: 'x'.repeat(2e6) } }));
    await until(() => parked.length === 1, 'parked');
    parked[0].parked.reason.should.equal('x'.repeat(999) + '…');
    const warning = helper.getNode('n1').warn.args.map((a) => String(a[0])).find((w) => /parked after 1 deliveries/.test(w));
    warning.length.should.be.below(1100);
    fs.statSync(inboxFile(userDir, 'n1')).size.should.be.below(10000);
  });

  describe('rejections that say the DAM server is away (msg.assetError)', function () {
    const refused = { kind: 'network', code: 'ECONNREFUSED', operation: 'download' };
    const reject = (msg, assetError, message = 'connect ECONNREFUSED') => helper.getNode('r1').receive(Object.assign(msg, { error: { message }, assetError }));
    /** The deliveries held by the work node, checking that at most `most` are out at once. */
    async function next(count, what, most = count) {
      await until(() => held.length >= count, what);
      held.length.should.be.belowOrEqual(most, `at most ${most} out: ${what}`);
      return held.splice(0);
    }

    const delivery = () => runningDelivery('n1');
    /** Waits until the ack nodes are through with `msg` (they pass it on to done1 then). */
    const through = (msg, what) => until(() => acked.includes(msg), what);

    it('hold deliveries: one probe at a time, only the failure that started it counted, nothing parked; the probe\'s acknowledgement resumes them all', async function () {
      await load({ maxDeliveries: 2, rejectBackoff: 0.05 });
      holdWork.add(1).add(2).add(3);
      await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1), entry(3, 1)])).expect(200);
      const first = await next(3, 'three deliveries');
      const n1 = helper.getNode('n1');
      first.forEach((m) => reject(m, refused));
      await until(() => n1.warn.args.some((a) => /DAM server unavailable \(connect ECONNREFUSED\): deliveries held/.test(String(a[0]))), 'the hold\'s warning');
      await until(() => n1.status.args.some((a) => /server unavailable \(network: connection refused\): \d+ waiting/.test(a[0].text || '') && a[0].fill === 'yellow'), 'the status');
      // Six probes, one at a time: each entry goes at least twice (Deliveries: 2), none is parked.
      let probe;
      const redelivered = { 1: 0, 2: 0, 3: 0 };
      for (let i = 0; i < 6; i++) {
        [probe] = await next(1, `probe ${i + 1}`, 1);
        redelivered[probe.payload.assetId] = Math.max(redelivered[probe.payload.assetId], probe.redelivered);
        if (i < 5) reject(probe, { kind: 'http', status: 503, operation: 'download', retryAfterMs: 0 }, '503 busy');
      }
      Object.values(redelivered).sort().should.eql([0, 0, 1], 'only the rejection that started the hold counted');
      parked.should.eql([]);
      noteOutcome('server-a'); // the probe's download worked (its failed node is not known here: any server counts)
      helper.getNode('a1').receive(probe);
      const rest = await next(2, 'the other two at once');
      rest.map((m) => m.payload.assetId).sort().should.eql([1, 2, 3].filter((a) => a !== probe.payload.assetId));
      await until(() => n1.log.args.some((a) => /DAM server available again/.test(String(a[0]))), 'the log line');
      rest.forEach((m) => helper.getNode('a1').receive(m));
      await until(() => acked.filter((m) => !m.error).length === 3, 'all acknowledged'); // done1 gets the rejected msgs too
      parked.should.eql([]);
    });

    it('the flow\'s own failure (no msg.assetError, or a core node\'s error) counts and keeps the hold; the server\'s own answer to a probe ends it and counts', async function () {
      await load({ maxDeliveries: 4, rejectBackoff: 0.05 });
      holdWork.add(1).add(2);
      await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1)]));
      const first = await next(2, 'two deliveries');
      first.forEach((m) => reject(m, { kind: 'http', status: 502, operation: 'download' }, '502 bad gateway'));
      await through(first[1], 'both rejected');
      delivery().heldFor.should.match(/502/);
      let [probe] = await next(1, 'a probe', 1);
      reject(probe, undefined, 'mirror disk full');
      await through(probe, 'the probe rejected for its own failure');
      should(delivery().heldFor).not.be.undefined();
      [probe] = await next(1, 'the next probe', 1);
      // A core node failed after a DAM node's failure: msg.assetError is the earlier one's.
      helper.getNode('r1').receive(Object.assign(probe, { error: { message: 'file write failed', source: { id: 'x', type: 'file' } }, assetError: refused }));
      await through(probe, 'the probe rejected for a core node\'s failure');
      should(delivery().heldFor).not.be.undefined();
      [probe] = await next(1, 'the third probe', 1);
      reject(probe, { kind: 'http', status: 404, operation: 'download' }, '404 not found');
      await through(probe, 'the probe rejected with the server\'s answer');
      should(delivery().heldFor).be.undefined();
      const again = await next(2, 'both again, no longer held');
      // Counted: the 502 that started the hold, the three probes' failures.
      again.map((m) => m.redelivered).reduce((a, b) => a + b).should.equal(4);
      parked.should.eql([]);
    });

    it('ends only once the failed node\'s server answered a DAM call: not on a probe acknowledged without asking it, nor on another server\'s answers', async function () {
      await load({ maxDeliveries: 2, rejectBackoff: 0.05 });
      const forget = callsOf('dl-a', 'server-a'); // a download node of server A, as shared/input.ts registers it
      try {
        holdWork.add(1).add(2).add(3).add(4);
        await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1), entry(3, 1), entry(4, 1)]));
        const first = await next(4, 'four deliveries');
        const source = { id: 'dl-a', type: 'asset-download' };
        first.forEach((m) => helper.getNode('r1').receive(Object.assign(m, { error: { message: 'connect ECONNREFUSED', source }, assetError: refused })));
        await through(first[3], 'all four rejected');
        let [probe] = await next(1, 'a probe', 1);
        const acknowledgedProbe = probe;
        noteOutcome('server-b'); // another server's calls work
        helper.getNode('a1').receive(probe); // acknowledged without asking server A (a delete)
        await through(probe, 'the probe acknowledged');
        should(delivery().heldFor).not.be.undefined();
        [probe] = await next(1, 'the next probe, at once', 1);
        // Server B's own 404 to a node of B (counted for B where it failed, as shared/input.ts does).
        const forgetB = callsOf('dl-b', 'server-b');
        const notFound = { kind: 'http', status: 404, operation: 'download' };
        helper.getNode('r1').receive(Object.assign(probe, { error: { message: '404', source: { id: 'dl-b', type: 'asset-download' } }, assetError: notFound }));
        await through(probe, 'the probe rejected with server B\'s answer');
        forgetB();
        should(delivery().heldFor).not.be.undefined();
        [probe] = await next(1, 'the third probe', 1);
        noteOutcome('server-a'); // its download from server A worked, then the flow's own step failed
        reject(probe, undefined, 'mirror disk full');
        await through(probe, 'the second probe rejected for its own failure');
        should(delivery().heldFor).be.undefined();
        // All three left: the one whose rejection started the hold, and the two probes rejected since
        // (their backoffs end about together: waiting for two of them raced the third).
        const rest = await next(3, 'the others, no longer held');
        rest.map((m) => m.payload.assetId).sort().should.eql([1, 2, 3, 4].filter((a) => a !== acknowledgedProbe.payload.assetId));
        rest.forEach((m) => helper.getNode('a1').receive(m));
        await until(() => acked.filter((m) => !m.error).length === 4, 'the three acknowledged'); // and the first probe
        parked.should.eql([]);
      } finally {
        forget();
      }
    });

    it('a deploy that moved the DAM nodes to another asset-server node: that one\'s answers end the hold', async function () {
      await load({ maxDeliveries: 2, rejectBackoff: 0.05 });
      holdWork.add(1).add(2);
      let forget = callsOf('dl-a', 'server-a');
      try {
        await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1)]));
        const first = await next(2, 'two deliveries');
        const source = { id: 'dl-a', type: 'asset-download' };
        first.forEach((m) => helper.getNode('r1').receive(Object.assign(m, { error: { message: 'connect ECONNREFUSED', source }, assetError: refused })));
        await through(first[1], 'both rejected');
        forget();
        forget = callsOf('dl-a', 'server-a2'); // redeployed with a new asset-server node: no node calls server-a
        const [probe] = await next(1, 'a probe', 1);
        noteOutcome('server-a2');
        helper.getNode('a1').receive(probe);
        await through(probe, 'the probe acknowledged');
        should(delivery().heldFor).be.undefined();
      } finally {
        forget();
      }
    });

    it('no timer loop while held with nothing due: a probe rejected for its own failure waits out its backoff', async function () {
      await load({ maxDeliveries: 5, rejectBackoff: 0.3 });
      holdWork.add(1);
      await request(app).post('/dam/inbox').send(payload([entry(1, 1)]));
      const [m] = await next(1, 'the delivery');
      reject(m, refused);
      const [probe] = await next(1, 'the probe');
      const inbox = delivery().inbox;
      let takes = 0;
      const take = inbox.take;
      inbox.take = function (...args) { takes++; return take.apply(this, args); };
      reject(probe, undefined, 'mirror disk full'); // due again in 0.6 s: nothing to take until then
      const [again] = await next(1, 'the entry after its backoff');
      takes.should.be.below(20);
      again.redelivered.should.equal(2);
    });

    it('a login the server refused (wrong password) is not the server away: counted and parked', async function () {
      await load({ maxDeliveries: 1, rejectBackoff: 0.05 });
      holdWork.add(4);
      await request(app).post('/dam/inbox').send(payload([entry(4, 1)]));
      const [m] = await next(1, 'the delivery');
      reject(m, { kind: 'auth', status: 401, code: 'LOGIN_FAILED', credentialsRefused: true, operation: 'download' }, 'login failed');
      await until(() => parked.length === 1, 'parked at once');
    });
  });

  it('a change node that changes msg.payload in place does not change the stored entry: delivered again as the server sent it', async function () {
    // c2 gets the msg itself (first wire) and changes its payload; h0 gets Node-RED's copy made at
    // send time: what the inbox handed out. The work (w2) rejects the first delivery, acks the second.
    const deliveries = [];
    await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck, ...coreNodes], addXY([
      { id: 'f1', type: 'tab' },
      { id: 'n1', z: 'f1', type: 'asset-event-in', path: '/dam/inbox', delivery: 'atLeastOnce', rejectBackoff: 0, outputs: 2, wires: [['c2', 'h0'], []] },
      { id: 'c2', z: 'f1', type: 'change', rules: [{ t: 'set', p: 'payload.rrn', pt: 'msg', to: 'changed', tot: 'str' }], wires: [['w2']] },
      { id: 'h0', z: 'f1', type: 'helper' },
      { id: 'w2', z: 'f1', type: 'helper' },
      { id: 'a1', z: 'f1', type: 'asset-event-ack', action: 'ack', wires: [] },
      { id: 'r1', z: 'f1', type: 'asset-event-ack', action: 'reject', wires: [] }
    ]));
    helper.getNode('h0').on('input', (msg) => deliveries.push(msg.payload));
    helper.getNode('w2').on('input', (msg) => helper.getNode(msg.redelivered ? 'a1' : 'r1').receive(msg));
    await request(app).post('/dam/inbox').send(payload([entry(7, 3)])).expect(200);
    await until(() => deliveries.length === 2, 'a delivery, and the one after the rejection');
    deliveries.should.eql([entry(7, 3), entry(7, 3)]);
  });

  it('a msg without the handle, or whose node is gone, ends in an error naming msg._inbox', async function () {
    await load();
    const a1 = helper.getNode('a1');
    a1.receive({ payload: 1 });
    await until(() => a1.error.called, 'an error');
    // The text as DAM nodes report it (no "Error: " before it), msg.assetError set (new-user audit).
    a1.error.firstCall.args[0].should.match(/^msg\._inbox: missing/);
    a1.error.firstCall.args[1].assetError.should.containEql({ kind: 'invalid-input', field: 'msg._inbox' });
    a1.receive({ payload: 1, _inbox: { node: 'nope', id: '1', delivery: 1 } });
    await until(() => a1.error.callCount === 2, 'a second error');
    a1.error.secondCall.args[0].should.match(/^msg\._inbox: asset-event-in nope is not running/);
  });

  it('full: answers 503, says so in the status, drops nothing; the same callback is taken once there is room', async function () {
    await load({ inboxMax: 2 });
    holdWork.add(1).add(2).add(3);
    await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1)])).expect(200);
    const refused = await request(app).post('/dam/inbox').send(payload([entry(3, 1)]));
    refused.status.should.equal(503);
    refused.body.error.should.match(/inbox full \(2\)/);
    const n1 = helper.getNode('n1');
    await until(() => n1.status.args.some((a) => /inbox full/.test(a[0].text || '') && a[0].fill === 'red'), 'red status');
    await until(() => held.length === 2, 'two deliveries');
    helper.getNode('a1').receive(held.shift());
    await until(() => acked.length === 1, 'ack');
    // The server's retry: not dropped by the duplicate filter, since it was never stored.
    await request(app).post('/dam/inbox').send(payload([entry(3, 1)])).expect(200);
    await until(() => held.length === 2, 'the retried entry');
    held[1].payload.assetId.should.equal(3);
  });

  it('a callback stored, then sent again after a restart, does not bring an older revision after a newer one', async function () {
    // A restart (here a full redeploy: a new node, an empty duplicate filter, the same inbox) after
    // the entries were stored and processed but before the server saw the answer: it sends the same callback again.
    await load({ dedup: true });
    const callback = payload([entry(1, 1), entry(2, 1), entry(1, 2)]);
    await request(app).post('/dam/inbox').send(callback).expect(200);
    await until(() => acked.length === 3, 'the first copy processed');
    await helper.setFlows(flow({ dedup: true }), 'full');
    const before = seen;
    wireHelpers();
    const res = await request(app).post('/dam/inbox').send(callback).expect(200);
    await until(() => acked.length === res.body.stored, 'the retry processed');
    await new Promise((r) => setTimeout(r, 100));
    const order = [...before, ...seen].map((m) => `${m.payload.assetId}/${m.payload.rrn}`);
    // Asset 1 never goes back from revision 2 to 1; the repeats of the newest revisions are allowed.
    order.filter((k) => k.startsWith('1/')).should.eql(['1/1', '1/2', '1/2']);
    res.body.should.eql({ success: true, received: 3, stored: 2 });
  });

  it('a redeploy that keeps the node keeps its inbox (delivered again); removing it removes the inbox with a warning', async function () {
    await load();
    holdWork.add(1);
    await request(app).post('/dam/inbox').send(payload([entry(1, 1)])).expect(200);
    await until(() => held.length === 1, 'delivery');
    // Redeploy the same flows (all nodes restarted): the entry comes again as delivery 2.
    await helper.setFlows(flow(), 'full');
    wireHelpers();
    await until(() => held.length === 1, 'delivery after the redeploy');
    held[0].redelivered.should.equal(1);
    // Disabled, and its flow disabled: Node-RED says "removed", but the node is still in the flows: the inbox stays.
    await helper.setFlows(flow().map((n) => (n.id === 'n1' ? { ...n, d: true } : n)), 'nodes');
    fs.existsSync(inboxFile(userDir, 'n1')).should.be.true('kept while the node is disabled');
    await helper.setFlows(flow().map((n) => (n.type === 'tab' ? { ...n, disabled: true } : n)), 'flows');
    fs.existsSync(inboxFile(userDir, 'n1')).should.be.true('kept while its flow is disabled');
    await helper.setFlows(flow(), 'full');
    wireHelpers();
    await until(() => held.length === 1, 'delivery once enabled again');
    held[0].payload.should.eql(entry(1, 1));
    // Remove the asset-event-in: its inbox goes, and the warning names the entries it held.
    const logged = [];
    const log = helper.log();
    const before = log.args.length;
    await helper.setFlows(flow().filter((n) => n.id !== 'n1'), 'full');
    fs.existsSync(inboxFile(userDir, 'n1')).should.be.false();
    const warnings = log.args.slice(before).map((a) => a[0]).filter((m) => m && m.level === 30).map((m) => m.msg);
    logged.push(...warnings);
    logged.join('\n').should.match(/inbox went with 1 entries not acknowledged/);
  });

  it('switched back to "at most once": what the inbox holds is sent once, then the inbox goes', async function () {
    await load();
    holdWork.add(1).add(2);
    await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1), entry(1, 2)])).expect(200);
    await until(() => held.length === 2, 'deliveries');
    await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1 }), 'full');
    wireHelpers();
    await until(() => seen.length === 3, 'the three entries once');
    seen.map((m) => `${m.payload.assetId}/${m.payload.rrn}`).should.eql(['1/1', '2/1', '1/2']);
    seen.forEach((m) => (m._inbox === undefined).should.be.true());
    await until(() => !fs.existsSync(inboxFile(userDir, 'n1')), 'the inbox file removed');
  });

  it('switched to "at most once" and back at once: the leftovers of the first switch do not remove the new inbox', async function () {
    await load();
    holdWork.add(1).add(2);
    await request(app).post('/dam/inbox').send(payload([entry(1, 1), entry(2, 1)])).expect(200);
    await until(() => held.length === 2, 'deliveries');
    await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1 }), 'full'); // its leftovers start
    await helper.setFlows(flow(), 'full'); // at once back to at least once: a new inbox on the same file
    wireHelpers();
    holdWork.add(3);
    await request(app).post('/dam/inbox').send(payload([entry(3, 1)])).expect(200);
    await until(() => held.length >= 1 && held.some((m) => m.payload.assetId === 3), 'the new entry delivered');
    fs.existsSync(inboxFile(userDir, 'n1')).should.be.true('the inbox file is there');
    journal().filter((r) => r.c !== undefined).flatMap((r) => r.k).should.containEql(3);
  });

  it('switched to "at most once" and removed at once: the inbox file goes, with the removal\'s warning', async function () {
    await load();
    holdWork.add(1);
    await request(app).post('/dam/inbox').send(payload([entry(1, 1)])).expect(200);
    await until(() => held.length === 1, 'the delivery');
    await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1 }), 'full'); // its leftovers start
    const n1 = helper.getNode('n1');
    await helper.setFlows(flow().filter((n) => n.id !== 'n1'), 'full'); // removed while they are sent
    fs.existsSync(inboxFile(userDir, 'n1')).should.be.false('the inbox file is gone');
    n1.warn.args.map((a) => String(a[0])).join('\n').should.match(/inbox/);
  });

  it('refuses "at least once" with GET or one msg per callback, naming the field', async function () {
    await load({ method: 'get' });
    const n1 = helper.getNode('n1');
    String(n1.error.firstCall.args[0]).should.match(/delivery: "at least once" needs method POST/);
    await helper.unload();
    await load({ output: 'callback' });
    String(helper.getNode('n1').error.firstCall.args[0]).should.match(/delivery: "at least once" acknowledges each entry/);
  });
});
