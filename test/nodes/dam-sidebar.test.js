'use strict';
// The DAM sidebar's runtime pieces without a browser: the connection check against the
// emulator (and a web server that is not the API), and the live counters an asset-event-in
// reports (test helper, callbacks through its real route). The tab itself, its routes and
// permissions: test/e2e/browser-dam-sidebar.test.js.
const should = require('should');
const http = require('http');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const { AssetClient } = require('../../dist/api/client');
const { startEmulator } = require('../../dist/emulator');
const { checkConnection, PROBE_ID } = require('../../dist/nodes/asset-server/connection-check');
const { eventInStats } = require('../../dist/nodes/shared/event-in-stats');
const eventIn = require('../../nodes/asset-event-in.js');
const { freePort } = require('../e2e/support');

helper.init(require.resolve('node-red'));

const COOKIE = 'check-good';
const NO_EVENTS = 'check-no-events';

describe('DAM sidebar: connection check', function () {
  let emulator, htmlServer;
  const clients = [];
  function client(baseUrl, cookie = COOKIE) {
    const c = new AssetClient({ baseUrl, cookie, timeout: 5000 });
    clients.push(c);
    return c;
  }

  before(async () => {
    emulator = await startEmulator({ port: 0, sessions: [{ value: COOKIE, permissions: ['events', 'add'] }, { value: NO_EVENTS, permissions: ['add'] }] });
    // A web server that is not the API: every path answers an HTML page with 200.
    htmlServer = http.createServer((req, res) => { res.setHeader('Content-Type', 'text/html'); res.end('<html>welcome</html>'); });
    await new Promise((r) => htmlServer.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    clients.forEach((c) => c.close());
    await emulator.close();
    await new Promise((r) => htmlServer.close(r));
  });

  it('ok: reached, cookie accepted, events permission (the probe id is unknown: success false)', async () => {
    const report = await checkConnection(client(emulator.url));
    report.result.should.equal('ok');
    report.message.should.match(/cookie accepted/);
  });

  it('ok also when someone registered the probe id', async () => {
    const c = client(emulator.url);
    await c.registerSubscription(PROBE_ID, { callback: 'http://127.0.0.1:9/x', watchPath: ['* /none'] });
    try {
      (await checkConnection(c)).result.should.equal('ok');
    } finally {
      await c.deleteSubscription(PROBE_ID);
    }
  });

  it('auth: HTTP 401, names the cookie and never shows it', async () => {
    const report = await checkConnection(client(emulator.url, 'JSESSIONID=wrong-cookie-value'));
    report.should.containEql({ result: 'auth', part: 'cookie', status: 401 });
    JSON.stringify(report).should.not.containEql('wrong-cookie-value');
  });

  it('permission: a valid cookie without the events permission', async () => {
    const report = await checkConnection(client(emulator.url, NO_EVENTS));
    report.should.containEql({ result: 'permission', part: 'permission' });
    report.message.should.match(/no permission for events/); // our own words, not the server's (issue 22)
  });

  it('path: the base URL has a wrong path prefix (HTTP 404)', async () => {
    const report = await checkConnection(client(`${emulator.url}/prefix`));
    report.should.containEql({ result: 'path', part: 'path', status: 404 });
  });

  it('network: nothing listens at the base URL', async () => {
    const report = await checkConnection(client(`http://127.0.0.1:${await freePort()}`));
    report.should.containEql({ result: 'network', part: 'baseUrl' });
    report.message.should.match(/connection refused/);
  });

  it('http: a web server that is not the API (HTML answer)', async () => {
    const report = await checkConnection(client(`http://127.0.0.1:${htmlServer.address().port}`));
    report.result.should.equal('http');
    report.message.should.match(/not a JSON object/);
  });
});

describe('DAM sidebar: live counters of asset-event-in', function () {
  let app;
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  async function load(props = {}, credentials = {}) {
    const flow = [Object.assign({ id: 'n1', type: 'asset-event-in', path: '/dam/stats', wires: [[]] }, props)];
    await helper.load((RED) => { app = RED.httpNode; return eventIn(RED); }, flow, { n1: credentials });
    return helper.getNode('n1');
  }

  const entry = (assetId, rrn) => ({ assetId, rrn, path: `/inbox/${assetId}.txt`, action: 'added' });
  const callback = (entries) => ({ success: true, data: { entry: entries }, id: 'stats-sub-0001' });

  it('counts callbacks, entries emitted, duplicates and empties, rejections by reason, and tells listeners', async () => {
    await load({}, { secret: 'stats-secret' });
    const stats = eventInStats.get('n1');
    should.exist(stats, 'a running node has an entry');
    const seen = [];
    const stop = eventInStats.onChange((s) => { if (s.nodeId === 'n1') seen.push(s.counters.callbacks); });
    try {
      const send = (body, secret = 'stats-secret') => request(app).post('/dam/stats').set('X-DAM-Secret', secret).send(body);
      (await send(callback([entry(1, 10), entry(2, 11), {}]))).status.should.equal(200);
      (await send(callback([entry(1, 10), entry(3, 12)]))).status.should.equal(200);
      (await send(callback([entry(4, 13)]), 'wrong')).status.should.equal(401);
      (await send({ nonsense: true })).status.should.equal(400);
      const c = stats.counters;
      c.should.containEql({ callbacks: 2, entriesEmitted: 3, duplicatesDropped: 1, emptiesDropped: 1 });
      c.rejected.should.eql({ 'secret': 1, 'too-large': 0, 'wrong-id': 0, 'bad-payload': 1 });
      Date.parse(c.lastCallbackAt).should.be.within(Date.now() - 10000, Date.now());
      c.lastError.message.should.match(/^400: /);
      JSON.stringify(stats.view()).should.not.containEql('stats-secret');
      seen.should.containEql(2);
    } finally {
      stop();
    }
  });

  it('drops the entry when the node stops; a redeployed node starts from zero', async () => {
    await load();
    await request(app).post('/dam/stats').send(callback([entry(1, 10)]));
    eventInStats.get('n1').counters.callbacks.should.equal(1);
    await helper.unload();
    should.not.exist(eventInStats.get('n1'));
    await load();
    eventInStats.get('n1').counters.callbacks.should.equal(0);
  });
});

describe('DAM sidebar: editor half', function () {
  it('never hands RED.notify a string (it renders strings as HTML, and messages come from the DAM server)', () => {
    const html = require('fs').readFileSync(require('path').join(__dirname, '../../plugins/dam-sidebar.html'), 'utf8');
    const calls = html.match(/RED\.notify\(([^,)]*)/g) || [];
    calls.length.should.be.above(0);
    // Allowed first arguments: a jQuery element built with .text() (the confirmation, notifyText's <p>).
    calls.filter((call) => !/RED\.notify\((\$\(|question)/.test(call)).should.eql([]);
  });
});
