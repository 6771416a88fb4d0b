'use strict';
// Issue 22 items 1 and 2 in the test helper: a callback's entries are capped (413 naming the
// setting) and emitted a few hundred at a time, so the event loop keeps running meanwhile.
require('should');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');

helper.init(require.resolve('node-red'));

function entry(i) {
  return { assetId: 1000 + i, rrn: 5000 + i, path: `/bulk/file-${i}.txt`, owner: 'alice', action: 'added' };
}
function payload(entries) {
  return { success: true, data: { entry: entries }, id: 'sub-test-0001' };
}

describe('asset-event-in: one callback cannot hold Node-RED (issue 22)', function () {
  let app;
  let received;

  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  async function load(props = {}) {
    const flow = [
      Object.assign({ id: 'n1', type: 'asset-event-in', name: 'events', path: '/dam/events', wires: [['h1']] }, props),
      { id: 'h1', type: 'helper' }
    ];
    await helper.load((RED) => { app = RED.httpNode; return eventIn(RED); }, flow);
    received = [];
    helper.getNode('h1').on('input', (msg) => received.push(msg));
    return helper.getNode('n1');
  }

  it('refuses a callback with more entries than Max entries: 413 naming the setting, nothing emitted', async function () {
    await load({ maxEntries: 50 });
    const res = await request(app).post('/dam/events').send(payload(Array.from({ length: 51 }, (_, i) => entry(i))));
    res.status.should.equal(413);
    res.body.success.should.be.false();
    res.body.error.should.match(/more than 50 entries/).and.match(/Max entries/).and.match(/maxEntries/);
    const ok = await request(app).post('/dam/events').send(payload(Array.from({ length: 50 }, (_, i) => entry(i))));
    ok.status.should.equal(200);
    ok.body.emitted.should.equal(50);
    received.length.should.equal(50);
  });

  it('the default cap is 100000 entries', async function () {
    await load({ dedup: false });
    const tiny = '{"a":1}';
    const text = `{"success":true,"data":{"entry":[${Array(100001).fill(tiny).join(',')}]}}`;
    const res = await request(app).post('/dam/events').set('Content-Type', 'application/json').send(text);
    res.status.should.equal(413);
    res.body.error.should.match(/more than 100000 entries/);
    received.length.should.equal(0);
  });

  it('a bad Max entries is a configuration error naming the field', async function () {
    const node = await load({ maxEntries: 'lots' });
    node.error.lastCall.args[0].should.match(/maxEntries: must be a whole number, 1 or more/);
  });

  // A timer set when the first message arrives runs only when the event loop gets a turn: with one
  // synchronous loop over 20,000 entries, that is after all of them were sent.
  for (const dedup of [true, false]) {
    it(`lets timers run while a 20,000-entry callback is emitted (duplicate filter ${dedup ? 'on' : 'off'})`, async function () {
      await load({ dedup });
      const total = 20000;
      let seenByTimer;
      helper.getNode('h1').once('input', () => setTimeout(() => { seenByTimer = received.length; }, 0));
      const res = await request(app).post('/dam/events').send(payload(Array.from({ length: total }, (_, i) => entry(i))));
      res.status.should.equal(200);
      res.body.emitted.should.equal(total);
      received.length.should.equal(total); // the answer came once every message was handed on
      seenByTimer.should.be.below(total);
      received.map((m) => m.parts.index).every((v, i) => v === i).should.be.true();
    });
  }

  it('a node closed while a large callback is emitted answers 503 and sends no more', async function () {
    await load({ dedup: false });
    const total = 20000;
    helper.getNode('h1').once('input', () => setTimeout(() => { helper.getNode('n1').close(false); }, 0));
    const res = await request(app).post('/dam/events').send(payload(Array.from({ length: total }, (_, i) => entry(i))));
    res.status.should.equal(503);
    received.length.should.be.below(total);
  });
});
