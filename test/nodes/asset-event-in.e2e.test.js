'use strict';
// End to end: the emulator and a real Node-RED process (not the test helper) on real ports.
// An asset-event-in owns a subscription on `* /inbox`; uploads and a metadata change on the
// emulator become messages, which a core function + http request pair posts to a collector here.
require('should');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const { startNodeRed } = require('../../dist/demo/node-red');
const { freePort, waitFor } = require('../e2e/support');

const ROOT = path.resolve(__dirname, '..', '..');
const COOKIE = 'local-dev';
const SECRET = 'e2e-webhook-s3cret-value';
const EVENT_NODE = 'a1b2c3d4e5f60718';
const SUBSCRIPTION_ID = `nr-${EVENT_NODE}`; // derived from the node id

describe('asset-event-in end to end (emulator + real Node-RED)', function () {
  this.timeout(60000);
  let emulator;
  let nodeRed;
  let userDir;
  let collector;
  const records = [];
  const nodeRedLines = [];

  before(async function () {
    emulator = await startEmulator({ port: 0, retryDelayMs: 300 });
    collector = http.createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c) => { text += c; });
      req.on('end', () => { records.push(JSON.parse(text)); res.end('ok'); });
    });
    await new Promise((r) => collector.listen(0, '127.0.0.1', r));
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-event-in-e2e-'));
    nodeRed = await startNodeRed({
      userDir, port: await freePort(), credentialSecret: 'e2e-credential-key', nodesDir: [ROOT], logLevel: 'info',
      onLine: (line) => nodeRedLines.push(line)
    });
  });

  after(async function () {
    if (process.env.E2E_DEBUG) console.log(nodeRedLines.join('\n'));
    if (nodeRed) await nodeRed.stop();
    if (emulator) await emulator.close();
    if (collector) { collector.closeAllConnections(); await new Promise((r) => collector.close(r)); }
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  });

  function flows({ withEventNode }) {
    const tab = { id: 'e2e0000000000001', type: 'tab', label: 'event-in e2e' };
    const server = {
      id: 'e2e0000000000002', type: 'asset-server', name: 'emulator', baseUrl: emulator.url,
      publicBaseUrl: nodeRed.url, timeout: 10, credentials: { cookie: COOKIE }
    };
    const record = {
      id: 'e2e0000000000003', type: 'function', z: tab.id, name: 'record', outputs: 1,
      func: [
        'msg.payload = { payload: msg.payload, topic: msg.topic, subscriptionId: msg.subscriptionId,',
        '  parts: msg.parts, receivedAt: msg.receivedAt };',
        'delete msg.parts;',
        'msg.headers = { "content-type": "application/json" };',
        'return msg;'
      ].join('\n'),
      wires: [['e2e0000000000004']]
    };
    const post = {
      id: 'e2e0000000000004', type: 'http request', z: tab.id, name: 'to collector', method: 'POST', ret: 'txt',
      paytoqs: 'ignore', url: `http://127.0.0.1:${collector.address().port}/`, wires: [[]]
    };
    const eventIn = {
      id: EVENT_NODE, type: 'asset-event-in', z: tab.id, name: 'inbox changes', method: 'post', path: '/dam/inbox-changes',
      manage: true, server: server.id, watchPath: ['* /inbox'], watchMetadata: [], retryCount: '5',
      credentials: { secret: SECRET }, wires: [[record.id]]
    };
    return withEventNode ? [tab, server, eventIn, record, post] : [tab, server, record, post];
  }

  async function emulatorJson(pathname, init = {}) {
    const res = await fetch(emulator.url + pathname, { ...init, headers: { cookie: `JSESSIONID=${COOKIE}`, ...(init.headers || {}) } });
    return res.json();
  }

  async function upload(name, text) {
    const form = new FormData();
    form.append('destination', '/inbox');
    form.append('wait', 'true');
    form.append('file', new Blob([text]), name);
    const result = await emulatorJson('/review/api/asset/upload', { method: 'POST', body: form });
    result.success.should.equal(true);
    return { fuid: result.data.fuids[0], rrn: result.data.rrn };
  }

  it('owns a subscription, turns two uploads and a metadata change into messages, deletes it when removed', async function () {
    await nodeRed.deploy(flows({ withEventNode: true }));

    // Registered by the node, with a callback URL that reaches it.
    const details = await waitFor('the subscription on the emulator', async () => {
      const d = await emulatorJson(`/review/api/events/assets/subscribe/${SUBSCRIPTION_ID}`);
      return d.success && d;
    }, 10000);
    details.subscription.callback.should.equal(`${nodeRed.url}/dam/inbox-changes`);
    details.subscription.method.should.equal('POST');
    details.subscription.watchPath.should.eql(['* /inbox']);

    const a = await upload('first.txt', 'first file');
    const b = await upload('second.txt', 'second file');
    const added = await waitFor('two added messages', () => {
      const list = records.filter((r) => r.topic === 'added');
      return list.length >= 2 && list;
    }, 15000);
    added.should.have.length(2);
    const byFuid = new Map(added.map((r) => [r.payload.assetId, r]));
    byFuid.get(a.fuid).payload.should.containEql({ assetId: a.fuid, rrn: a.rrn, path: '/inbox/first.txt', action: 'added' });
    byFuid.get(b.fuid).payload.should.containEql({ assetId: b.fuid, rrn: b.rrn, path: '/inbox/second.txt', action: 'added' });
    added.forEach((r) => {
      r.subscriptionId.should.equal(SUBSCRIPTION_ID);
      r.parts.should.have.properties(['id', 'index', 'count']);
      Date.parse(r.receivedAt).should.be.above(0);
    });

    // A metadata change on the first asset: a modified message with the new revision.
    const changed = await emulatorJson(`/emulator/assets/${a.fuid}/metadata`, {
      method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ City: 'SFO' })
    });
    changed.success.should.equal(true);
    const modified = await waitFor('a modified message', () => records.find((r) => r.topic === 'modified'), 15000);
    modified.payload.should.containEql({ assetId: a.fuid, rrn: changed.rrn, path: '/inbox/first.txt', action: 'modified' });
    modified.payload.rrn.should.not.equal(a.rrn);
    records.filter((r) => r.topic === 'added').should.have.length(2); // no duplicate of the earlier entries
    records.should.have.length(3);

    // Every delivery succeeded: the node answered the success code.
    const { deliveries } = await emulatorJson(`/emulator/deliveries?subscription=${SUBSCRIPTION_ID}`);
    deliveries.length.should.be.above(0);
    deliveries.forEach((d) => d.state.should.equal('succeeded'));

    // Removing the node from the flow deletes the subscription.
    await nodeRed.deploy(flows({ withEventNode: false }));
    await waitFor('the subscription to be deleted', async () => {
      const d = await emulatorJson(`/review/api/events/assets/subscribe/${SUBSCRIPTION_ID}`);
      return d.success === false;
    }, 10000);
  });

  it('kept the secret and the cookie out of the flows file and the log', function () {
    const flowsFile = fs.readFileSync(path.join(userDir, 'flows.json'), 'utf8');
    flowsFile.should.not.containEql(SECRET);
    flowsFile.should.not.containEql(`"${COOKIE}"`);
    const credFile = fs.readFileSync(path.join(userDir, 'flows_cred.json'), 'utf8');
    credFile.should.not.containEql(SECRET); // encrypted
    nodeRedLines.join('\n').should.not.containEql(SECRET);
  });
});
