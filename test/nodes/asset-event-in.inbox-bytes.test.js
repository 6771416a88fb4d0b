'use strict';
// asset-event-in "at least once": the inbox is bounded in bytes (Inbox size, MB) as well as in
// entries. A real Node-RED runtime (test helper), its httpNode served on 127.0.0.1 over real HTTP,
// the real journal file. Before the bound, every callback of big entries was answered 200 until
// the journal passed 2 GiB and could no longer be opened (every callback 503 for ever).
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const helper = require('node-red-node-test-helper');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const { parseJournal } = require('../../dist/events/inbox');
const { inboxFile } = require('../../dist/nodes/asset-event-in/delivery');

helper.init(require.resolve('node-red'));

const until = async (check, what) => {
  for (let i = 0; i < 1000; i++) { if (check()) return; await new Promise((r) => setTimeout(r, 10)); }
  throw new Error(`timed out waiting for ${what}`);
};
/** One callback of one entry carrying `size` characters. */
const callback = (assetId, size) => JSON.stringify({ success: true, data: { entry: [{ assetId, rrn: 1, blob: 'x'.repeat(size) }] } });

describe('asset-event-in "at least once": Inbox size (bytes) bound', function () {
  this.timeout(60000);
  let userDir;
  let server;
  let base;
  let seen;

  before(() => helper.startServer());
  after(() => helper.stopServer());
  beforeEach(() => {
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-bytes-'));
    helper.settings({ userDir });
  });
  afterEach(async () => {
    if (server) await new Promise((r) => server.close(r));
    server = undefined;
    await helper.unload();
    helper.settings({});
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  // event-in (n1) -> helper w1 (nothing acknowledges unless the test sends a msg to a1); parked -> p1.
  const flow = (props) => [
    { id: 'f1', type: 'tab' },
    { id: 'n1', z: 'f1', type: 'asset-event-in', path: '/dam/bytes', delivery: 'atLeastOnce', outputs: 2, wires: [['w1'], ['p1']], x: 1, y: 1, ...props },
    { id: 'w1', z: 'f1', type: 'helper', x: 1, y: 1 },
    { id: 'a1', z: 'f1', type: 'asset-event-ack', action: 'ack', wires: [], x: 1, y: 1 },
    { id: 'p1', z: 'f1', type: 'helper', x: 1, y: 1 }
  ];
  function wire() {
    seen = [];
    helper.getNode('w1').on('input', (msg) => seen.push(msg));
  }
  async function load(props) {
    let app;
    await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck], flow(props));
    server = http.createServer(app);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${server.address().port}`;
    wire();
  }
  const post = async (body) => {
    const res = await fetch(`${base}/dam/bytes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  };
  const stored = () => parseJournal(fs.readFileSync(inboxFile(userDir, 'n1'))).records.filter((r) => r.c !== undefined).map((r) => r.k[0]);

  it('a callback that would pass Inbox size is answered 503 (status, warning); earlier entries are kept, delivered after a redeploy, and the callback is taken once acknowledgements make room', async function () {
    await load({ inboxMaxMB: 3 }); // three records of 1 MB entries pass 3,000,000 bytes; two do not
    (await post(callback(1, 1e6))).status.should.equal(200);
    (await post(callback(2, 1e6))).status.should.equal(200);
    const refused = await post(callback(3, 1e6));
    refused.status.should.equal(503); // before the bound: 200, and the journal grew without end
    refused.body.error.should.match(/inbox full \(3 MB\)/);
    const n1 = helper.getNode('n1');
    await until(() => n1.status.args.some((a) => /inbox full \(3 MB\)/.test(a[0].text || '') && a[0].fill === 'red'), 'a red "inbox full" status');
    n1.warn.args.some((a) => /inbox full \(3 MB\)/.test(String(a[0]))).should.be.true();
    // Nothing dropped: the two stored entries are on disk and delivered; the refused one is not stored.
    stored().should.eql([1, 2]);
    fs.statSync(inboxFile(userDir, 'n1')).size.should.be.below(3e6);
    await until(() => seen.length === 2, 'two deliveries');
    seen.map((m) => m.payload.assetId).should.eql([1, 2]);
    // The bound is on bytes: a small callback still fits.
    (await post(callback(4, 10))).status.should.equal(200);
    stored().should.eql([1, 2, 4]);
    await until(() => seen.length === 3, 'three deliveries');

    // A redeploy (a new node on the same inbox): the entries come again, the bound still holds.
    await helper.setFlows(flow({ inboxMaxMB: 3 }), 'full');
    wire();
    await until(() => seen.length === 3, 'the three entries delivered again');
    seen.every((m) => m.redelivered === 1).should.be.true();
    (await post(callback(3, 1e6))).status.should.equal(503);
    // One acknowledged: room for the server's retry.
    helper.getNode('a1').receive(seen[0]);
    await until(() => !parseJournal(fs.readFileSync(inboxFile(userDir, 'n1'))).records.every((r) => !r.a || r.a.length === 0), 'the acknowledgement on disk');
    const retried = await post(callback(3, 1e6));
    retried.status.should.equal(200);
    await until(() => seen.length === 4, 'the retried entry');
    seen[3].payload.assetId.should.equal(3);
    const n1Again = helper.getNode('n1');
    await until(() => !/inbox full/.test(n1Again.status.lastCall.args[0].text || ''), 'the status cleared');
  });

  it('an empty inbox takes a callback larger than Inbox size (never refused for ever); flows saved before the setting get 1024 MB', async function () {
    await load({ inboxMaxMB: 1 });
    (await post(callback(1, 2e6))).status.should.equal(200);
    (await post(callback(2, 10))).status.should.equal(503);
    await helper.unload();
    await new Promise((r) => server.close(r));
    server = undefined;
    fs.rmSync(path.join(userDir, 'dam-assets-inbox'), { recursive: true, force: true });
    await load({}); // no inboxMaxMB: the default
    for (let i = 1; i <= 3; i++) (await post(callback(i, 5e6))).status.should.equal(200);
    stored().should.eql([1, 2, 3]);
  });

  it('Inbox size is checked at deploy: an error naming the field and the rule', async function () {
    for (const value of ['0', '-1', 'abc', '0.0000001']) {
      await load({ inboxMaxMB: value });
      const n1 = helper.getNode('n1');
      await until(() => n1.error.called, 'a configuration error');
      String(n1.error.firstCall.args[0]).should.equal('configuration: inboxMaxMB: must be a number of MB, 0.001 (1 kB) or more');
      await new Promise((r) => server.close(r));
      server = undefined;
      await helper.unload();
    }
  });
});
