'use strict';
// asset-event-in "at least once" through a DAM outage, with real parts: the emulator (stopped and
// started again on its port, its data kept), asset-download, a core Catch and change node, the ack
// nodes, in the test helper's Node-RED runtime. The flow is the example's: download each change to
// a mirror, acknowledge; a Catch rejects a failed download. An outage longer than Deliveries
// allows must park nothing, and every change reaches the mirror once the server is back.
require('should');
const fs = require('fs');
const path = require('path');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const s = require('./nodes-support');
const { AssetClient } = require('../../dist/api/client');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const coreNodes = ['function/15-change.js', 'common/25-catch.js'].map((f) => require(`@node-red/nodes/core/${f}`));
const { waitFor } = require('../e2e/support');

helper.init(require.resolve('node-red'));

describe('asset-event-in "at least once" through a DAM outage (emulator stopped and started, asset-download, Catch)', function () {
  this.timeout(60000);
  let emulator;
  let dataDir;
  let mirror;
  let userDir;
  const assets = [];

  before(async function () {
    await helper.startServer();
    dataDir = s.tempDir().dir;
    emulator = await s.startTestEmulator({ dataDir });
    const client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE });
    try {
      for (const name of ['a.txt', 'b.txt', 'c.txt']) {
        const up = await client.upload({ file: { buffer: Buffer.from(`content of ${name}`) }, name, destination: '/away', wait: true });
        assets.push({ assetId: up.fuids[0], rrn: up.rrn, name });
      }
    } finally {
      client.close();
    }
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    mirror = s.tempDir().dir;
    userDir = s.tempDir().dir;
    helper.settings({ userDir });
  });
  afterEach(async () => {
    await helper.unload();
    helper.settings({});
    fs.rmSync(mirror, { recursive: true, force: true });
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  function flow(baseUrl) {
    return [
      { id: 'f1', type: 'tab' },
      { id: 'server', type: 'asset-server', name: 'dam', baseUrl, timeout: 5 },
      {
        id: 'n1', z: 'f1', type: 'asset-event-in', x: 100, y: 40, path: '/dam/away', delivery: 'atLeastOnce',
        maxDeliveries: 2, rejectBackoff: 0.1, outputs: 2, wires: [['c1', 'delivered'], ['parked']]
      },
      {
        id: 'c1', z: 'f1', type: 'change', x: 200, y: 40, wires: [['dl']], rules: [
          { t: 'set', p: 'fuid', pt: 'msg', to: 'payload.assetId', tot: 'msg' },
          { t: 'set', p: 'filename', pt: 'msg', to: `"${mirror}/" & $string(payload.assetId) & ".txt"`, tot: 'jsonata' }
        ]
      },
      { id: 'dl', z: 'f1', type: 'asset-download', x: 300, y: 40, server: 'server', fuid: 'fuid', fuidType: 'msg', output: 'file', filename: 'filename', filenameType: 'msg', retries: 0, wires: [['a1']] },
      { id: 'a1', z: 'f1', type: 'asset-event-ack', x: 400, y: 40, action: 'ack', wires: [['acked']] },
      { id: 'catch1', z: 'f1', type: 'catch', x: 100, y: 100, scope: ['dl'], uncaught: false, wires: [['r1', 'caught']] },
      { id: 'r1', z: 'f1', type: 'asset-event-ack', x: 300, y: 100, action: 'reject', wires: [] },
      { id: 'delivered', z: 'f1', type: 'helper', x: 200, y: 0 },
      { id: 'acked', z: 'f1', type: 'helper', x: 500, y: 40 },
      { id: 'caught', z: 'f1', type: 'helper', x: 500, y: 100 },
      { id: 'parked', z: 'f1', type: 'helper', x: 200, y: 160 }
    ];
  }

  /** Loads flow(baseUrl); the msgs its Catch, ack and parked-output helpers get, and httpNode's app. */
  async function loadFlow(baseUrl) {
    let app;
    await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck, ...coreNodes, ...Object.values(s.nodes)], flow(baseUrl), s.credentials());
    const seen = { app, caught: [], acked: [], parked: [] };
    for (const name of ['caught', 'acked', 'parked']) helper.getNode(name).on('input', (msg) => seen[name].push(msg));
    return seen;
  }

  it('the server stopped for longer than Deliveries allow: nothing parked, one probe at a time; all mirrored once it is back', async function () {
    const port = Number(new URL(emulator.url).port);
    const baseUrl = emulator.url;
    await emulator.close(); // connection refused until it listens again
    emulator = undefined;
    const { app, caught, acked, parked } = await loadFlow(baseUrl);
    // Deliveries while the server is away, and how many were out at once then.
    let delivered = 0;
    let mostOut = 0;
    helper.getNode('delivered').on('input', () => {
      delivered++;
      if (caught.length >= 3 && !emulator) mostOut = Math.max(mostOut, delivered - caught.length - acked.length);
    });
    const entries = assets.map(({ assetId, rrn, name }) => ({ assetId, rrn, path: `/away/${name}`, action: 'modified' }));
    await request(app).post('/dam/away').send({ success: true, id: 'sub-away', data: { entry: entries } }).expect(200);

    // With Deliveries 2, three entries counted would all be parked after six failed downloads.
    await waitFor('eight failed downloads', () => caught.length >= 8, 30000);
    caught.forEach((m) => m.assetError.should.containEql({ kind: 'network' }));
    // Only the failure that started the hold counted: every entry is at its first or second delivery.
    caught.forEach((m) => m.redelivered.should.be.belowOrEqual(1));
    parked.should.eql([]);
    mostOut.should.equal(1, 'one probe at a time');
    fs.readdirSync(mirror).should.eql([]);
    const n1 = helper.getNode('n1');
    n1.warn.args.filter((a) => /DAM server unavailable/.test(String(a[0]))).should.have.length(1);
    n1.status.args.map((a) => a[0]).filter((st) => /^server unavailable \(network: connection refused\): [0-3] waiting/.test(st.text || '')).should.not.be.empty();
    (await overview()).inboxHeldFor.should.equal('network: connection refused', 'the DAM tab told');

    emulator = await s.startTestEmulator({ port, dataDir });
    await waitFor('all three acknowledged after the outage', () => acked.length === 3, 30000);
    for (const { assetId, name } of assets) fs.readFileSync(path.join(mirror, `${assetId}.txt`), 'utf8').should.equal(`content of ${name}`);
    parked.should.eql([]);
    n1.log.args.some((a) => /DAM server available again/.test(String(a[0]))).should.be.true();
    (await overview()).should.not.have.property('inboxHeldFor');
  });

  it('a download that breaks off after the server began to answer is the entry\'s own failure: counted, parked alone, no hold', async function () {
    // Fails before answerBegun: the cut download was taken for the server away, the lone entry
    // given back and probed until a download worked, never parked.
    const { assetId, rrn, name } = assets[0];
    emulator.injectCut({ count: 2, afterBytes: 5, pathContains: '/asset/download' });
    const { app, caught, acked, parked } = await loadFlow(emulator.url);
    await request(app).post('/dam/away').send({ success: true, id: 'sub-away', data: { entry: [{ assetId, rrn, path: `/away/${name}`, action: 'modified' }] } }).expect(200);

    await waitFor('the entry parked', () => parked.length === 1, 30000);
    caught.should.have.length(2);
    caught.forEach((m) => m.assetError.should.containEql({ kind: 'network', answerBegun: true }));
    caught.map((m) => m.redelivered).should.eql([0, 1], 'each delivery counted');
    parked[0].parked.deliveries.should.equal(2);
    emulator.cutAnswers().should.equal(2);
    acked.should.eql([]);
    const n1 = helper.getNode('n1');
    n1.warn.args.filter((a) => /DAM server unavailable/.test(String(a[0]))).should.eql([]);
  });

  /** The DAM tab's overview entry of n1 (the plugin's route, its handler called as express would). */
  async function overview() {
    const registerSidebar = require('../../dist/plugin/dam-sidebar').default;
    const routes = {};
    registerSidebar({
      plugins: { registerPlugin() {} },
      nodes: { getNode: (id) => helper.getNode(id), eachNode: (cb) => [{ id: 'n1', type: 'asset-event-in', path: '/dam/away', name: '' }].forEach(cb), getCredentials: () => undefined },
      auth: { needsPermission: () => (_req, _res, next) => next() },
      comms: { publish() {} },
      httpAdmin: { get: (p, _guard, handler) => { routes[`GET ${p}`] = handler; }, post() {}, delete() {} },
      settings: {},
      log: { warn() {} }
    });
    const body = await new Promise((resolve) => routes['GET /dam-assets/overview']({}, { json: resolve }));
    return JSON.parse(JSON.stringify(body.eventIns[0])); // as the editor gets it: undefined left out
  }
});
