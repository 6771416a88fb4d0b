'use strict';
// asset-event-in owning its subscription, in the test helper, against the emulator (real HTTP).
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const express = require('express');
const request = require('supertest');
const helper = require('node-red-node-test-helper');
const { startEmulator } = require('../../dist/emulator');
const eventIn = require('../../nodes/asset-event-in.js');
const assetServer = require('../../nodes/asset-server.js');

helper.init(require.resolve('node-red'));

const COOKIE = 'local-dev';
const SECRET = 'owned-sub-s3cret-value';
const NODE_ID = '0123456789abcdef';
const DERIVED_ID = 'nr-0123456789abcdef';

describe('asset-event-in owning its subscription (test helper + emulator)', function () {
  let emulator;
  const emulatorLog = [];
  let app; // the helper's httpNode, served below under /hooks
  let hookServer;
  let publicBaseUrl;

  before(async () => {
    await helper.startServer();
    emulator = await startEmulator({ port: 0, retryDelayMs: 200, log: (line) => emulatorLog.push(line) });
    const outer = express();
    outer.use('/hooks', (req, res, next) => (app ? app(req, res, next) : next()));
    hookServer = http.createServer(outer);
    await new Promise((r) => hookServer.listen(0, '127.0.0.1', r));
    publicBaseUrl = `http://127.0.0.1:${hookServer.address().port}/`;
  });
  after(async () => {
    await helper.stopServer();
    await emulator.close();
    hookServer.closeAllConnections();
    await new Promise((r) => hookServer.close(r));
  });
  beforeEach(() => { userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-event-in-')); });
  afterEach(async () => {
    await helper.unload(); // a stop, not a removal: the subscription stays, as on a Node-RED restart
    helper.settings({});
    fs.rmSync(userDir, { recursive: true, force: true });
    for (const id of [DERIVED_ID, 'fixed-sub-0001', 'fixed-sub-0002']) {
      await fetch(`${emulator.url}/review/api/events/assets/subscribe/${id}`, { method: 'DELETE', headers: { cookie: `JSESSIONID=${COOKIE}` } });
    }
  });

  function flow(eventProps = {}, serverProps = {}) {
    return [
      Object.assign({
        id: NODE_ID, type: 'asset-event-in', path: '/dam/events', manage: true, server: 'srv',
        watchPath: ['* /inbox'], watchMetadata: ['City==SFO'], logicalOperand: 'AND', retryCount: '2', wires: [['h1']]
      }, eventProps),
      Object.assign({ id: 'srv', type: 'asset-server', baseUrl: emulator.url, publicBaseUrl, timeout: 5 }, serverProps),
      { id: 'h1', type: 'helper' }
    ];
  }
  const credentials = (cookie = COOKIE) => ({ [NODE_ID]: { secret: SECRET }, srv: { cookie } });

  let userDir; // Node-RED's user directory, where the node remembers what it registered
  async function load(nodes, creds = credentials()) {
    helper.settings({ httpNodeRoot: '/hooks', userDir });
    await helper.load([assetServer, (RED) => { app = RED.httpNode; return eventIn(RED); }], nodes, creds);
    return helper.getNode(NODE_ID);
  }

  async function getSubscription(id) {
    const res = await fetch(`${emulator.url}/review/api/events/assets/subscribe/${id}`, { headers: { cookie: `JSESSIONID=${COOKIE}` } });
    return res.json();
  }

  async function until(check, timeoutMs = 3000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  function statusTexts(node) {
    return node.status.args.map((a) => a[0] && a[0].text).filter(Boolean);
  }

  it('registers on deploy: derived id, callback under httpNodeRoot, POST, secret header, editor lists', async function () {
    const node = await load(flow());
    const details = await until(async () => { const d = await getSubscription(DERIVED_ID); return d.success && d; });
    details.subscription.should.containEql({
      callback: `${publicBaseUrl}hooks/dam/events`,
      method: 'POST',
      successCode: 200,
      retryCount: 2,
      logicalOperand: 'AND'
    });
    details.subscription.header.should.eql([`X-DAM-Secret: ${SECRET}`]);
    details.subscription.watchPath.should.eql(['* /inbox']);
    details.subscription.watchMetadata.should.eql(['City==SFO']);
    await until(() => node.status.lastCall && node.status.lastCall.args[0].fill === 'green');
    node.status.lastCall.args[0].text.should.equal(DERIVED_ID);
    // The callback URL it registered really reaches the node.
    const res = await fetch(details.subscription.callback, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-dam-secret': SECRET },
      body: JSON.stringify({ success: true, id: DERIVED_ID, data: { entry: [{ assetId: 1, rrn: 2, path: '/inbox/a', owner: 'o', action: 'added' }] } })
    });
    res.status.should.equal(200);
  });

  it('uses a fixed id when given and answers 400 to callbacks for another id', async function () {
    await load(flow({ subscriptionId: 'fixed-sub-0001' }));
    await until(async () => (await getSubscription('fixed-sub-0001')).success);
    (await getSubscription(DERIVED_ID)).success.should.be.false();
    await request(app).post('/dam/events').set('X-DAM-Secret', SECRET)
      .send({ success: true, id: 'someone-else', data: { entry: [{ assetId: 1, rrn: 1, action: 'added' }] } }).expect(400);
  });

  it('keeps the subscription when Node-RED stops (a restart registers it again)', async function () {
    await load(flow());
    await until(async () => (await getSubscription(DERIVED_ID)).success);
    await helper.unload();
    (await getSubscription(DERIVED_ID)).success.should.be.true();
  });

  it('deletes the subscription when the node is removed, and keeps it on a redeploy that changes the node', async function () {
    await load(flow());
    await until(async () => (await getSubscription(DERIVED_ID)).success);
    // Changed node (not removed): registered again with the new settings.
    await helper.setFlows(flow({ watchPath: ['* /other'] }), 'full', credentials());
    await until(async () => {
      const d = await getSubscription(DERIVED_ID);
      return d.success && d.subscription.watchPath[0] === '* /other';
    });
    // Removed: deleted on the server.
    await helper.setFlows(flow().filter((n) => n.id !== NODE_ID), 'full', credentials());
    await until(async () => (await getSubscription(DERIVED_ID)).success === false);
  });

  it('two nodes managing one subscription id: one keeps it (the one the registry records, else the first in the flows), the other is refused naming it; removing that one leaves the subscription', async function () {
    const second = { id: 'second-node-01', type: 'asset-event-in', name: 'copy', path: '/dam/copy', manage: true, server: 'srv',
      subscriptionId: 'fixed-sub-0001', watchPath: ['* /inbox'], wires: [['h1']] };
    const both = [...flow({ subscriptionId: 'fixed-sub-0001', name: 'original' }), second];
    await load(both, { ...credentials(), 'second-node-01': { secret: SECRET } });
    // The owner is the one the registry records (the test helper shares its status and error spies between nodes).
    const file = path.join(userDir, 'dam-assets-subscriptions.json');
    await until(async () => fs.existsSync(file) && (await getSubscription('fixed-sub-0001')).success);
    const owners = Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).nodes);
    owners.length.should.equal(1);
    const owner = helper.getNode(owners[0]);
    const refused = helper.getNode(owners[0] === NODE_ID ? 'second-node-01' : NODE_ID);
    // (The test helper shares one error spy between the nodes.)
    const errors = owner.error.args.map((a) => String(a[0]));
    errors.filter((e) => /managed by another asset-event-in/.test(e)).should.eql([
      `cannot manage the subscription: subscriptionId: fixed-sub-0001 on this server is managed by another asset-event-in ("${owner.name}", ${owner.id}): give one of them another Id`]);
    (await getSubscription('fixed-sub-0001')).subscription.callback.should.endWith(owner.id === NODE_ID ? '/dam/events' : '/dam/copy');
    // The same nodes in another order (a full deploy): the one that has it keeps it; the registry lists one owner.
    await helper.setFlows([...both].reverse(), 'full', { ...credentials(), 'second-node-01': { secret: SECRET } });
    await until(async () => (await getSubscription('fixed-sub-0001')).success);
    Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).nodes).should.eql([owner.id]);
    (await getSubscription('fixed-sub-0001')).subscription.callback.should.endWith(owner.id === NODE_ID ? '/dam/events' : '/dam/copy');
    const deletesBefore = emulatorLog.filter((line) => /^DELETE .*fixed-sub-0001/.test(line)).length;
    await helper.setFlows(both.filter((n) => n.id !== refused.id), 'full', { ...credentials(), 'second-node-01': { secret: SECRET } });
    await helper.getNode('srv').getClient().getSubscription('fixed-sub-0001');
    emulatorLog.filter((line) => /^DELETE .*fixed-sub-0001/.test(line)).length.should.equal(deletesBefore, 'the refused node deleted nothing');
    (await getSubscription('fixed-sub-0001')).success.should.be.true();
  });

  it('a registry from before that lists two nodes with one subscription id: the first of them in the flows keeps it, the other is refused and forgotten', async function () {
    const second = { id: 'second-node-01', type: 'asset-event-in', name: 'copy', path: '/dam/copy', manage: true, server: 'srv',
      subscriptionId: 'fixed-sub-0001', watchPath: ['* /inbox'], wires: [['h1']] };
    const file = path.join(userDir, 'dam-assets-subscriptions.json');
    const recorded = { server: 'srv', baseUrl: emulator.url, id: 'fixed-sub-0001' };
    fs.writeFileSync(file, JSON.stringify({ nodes: { 'second-node-01': recorded, [NODE_ID]: recorded }, orphans: [] }));
    // The copy is first in the flows.
    await load([second, ...flow({ subscriptionId: 'fixed-sub-0001', name: 'original' })], { ...credentials(), 'second-node-01': { secret: SECRET } });
    await until(async () => Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).nodes).length === 1 && (await getSubscription('fixed-sub-0001')).success);
    Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).nodes).should.eql(['second-node-01']);
    (await getSubscription('fixed-sub-0001')).subscription.callback.should.endWith('/dam/copy');
  });

  describe('never leaves a subscription it stopped owning', function () {
    const registered = async (id) => (await getSubscription(id)).success;
    const recorded = () => JSON.parse(fs.readFileSync(path.join(userDir, 'dam-assets-subscriptions.json'), 'utf8'));

    it('a redeploy with a new subscription id deletes the old one', async function () {
      await load(flow());
      await until(() => registered(DERIVED_ID));
      await helper.setFlows(flow({ subscriptionId: 'fixed-sub-0001' }), 'full', credentials());
      await until(() => registered('fixed-sub-0001'));
      await until(async () => !(await registered(DERIVED_ID)));
      recorded().nodes.should.eql({ [NODE_ID]: { server: 'srv', baseUrl: emulator.url, id: 'fixed-sub-0001' } });
    });

    it('a redeploy with "manage" unchecked deletes the one it registered', async function () {
      await load(flow({ subscriptionId: 'fixed-sub-0001' }));
      await until(() => registered('fixed-sub-0001'));
      await helper.setFlows(flow({ subscriptionId: 'fixed-sub-0001', manage: false }), 'full', credentials());
      await until(async () => !(await registered('fixed-sub-0001')));
      recorded().nodes.should.eql({});
    });

    it('across a restart: id changed, "manage" unchecked, or the node removed while Node-RED was stopped', async function () {
      await load(flow());
      await until(() => registered(DERIVED_ID));
      await helper.unload(); // Node-RED stops: the subscription stays
      (await registered(DERIVED_ID)).should.be.true();
      // Started again with another id: the old one goes, the new one comes.
      await load(flow({ subscriptionId: 'fixed-sub-0001' }));
      await until(() => registered('fixed-sub-0001'));
      await until(async () => !(await registered(DERIVED_ID)));
      await helper.unload();
      // Started again with "manage" unchecked.
      await load(flow({ subscriptionId: 'fixed-sub-0001', manage: false }));
      await until(async () => !(await registered('fixed-sub-0001')));
      await helper.unload();
      // Registered again, then started without the node at all.
      await load(flow({ subscriptionId: 'fixed-sub-0002' }));
      await until(() => registered('fixed-sub-0002'));
      await helper.unload();
      await load(flow().filter((n) => n.id !== NODE_ID));
      await until(async () => !(await registered('fixed-sub-0002')));
      recorded().should.eql({ nodes: {}, orphans: [] });
    });

    it('a deletion the server refuses now (expired cookie) is tried again on the next start', async function () {
      await load(flow({ subscriptionId: 'fixed-sub-0001' }));
      await until(() => registered('fixed-sub-0001'));
      emulator.revokeSession(COOKIE);
      try {
        await helper.setFlows(flow().filter((n) => n.id !== NODE_ID), 'full', credentials());
        // Failed twice: on removal, and in the retry as the flows start again.
        const failures = () => helper.log().args.filter((a) => /deleting subscription fixed-sub-0001 failed.*tried again on the next start/.test(String(a[0] && a[0].msg))).length;
        await until(() => failures() >= 2);
        recorded().orphans.should.eql([{ server: 'srv', baseUrl: emulator.url, id: 'fixed-sub-0001' }]);
        recorded().nodes.should.eql({});
      } finally {
        emulator.addSession({ value: COOKIE, permissions: ['events', 'add'] });
      }
      (await registered('fixed-sub-0001')).should.be.true();
      await helper.unload();
      await load(flow().filter((n) => n.id !== NODE_ID));
      await until(async () => !(await registered('fixed-sub-0001')));
      await until(() => recorded().orphans.length === 0);
    });
  });

  it('deletes the subscription also when its server config node is removed in the same deploy', async function () {
    await load(flow());
    await until(async () => (await getSubscription(DERIVED_ID)).success);
    await helper.setFlows([{ id: 'h1', type: 'helper' }], 'full', {});
    await until(async () => (await getSubscription(DERIVED_ID)).success === false);
  });

  it('on a registration failure: red status, error logged without secret or cookie, route up, retried until it works', async function () {
    this.timeout(20000);
    const lateCookie = 'late-session-cookie-value';
    const node = await load(flow(), credentials(lateCookie));
    await until(() => node.error.called);
    const logged = node.error.args.map((a) => String(a[0])).join('\n');
    logged.should.match(/registering subscription nr-0123456789abcdef failed \(auth\)/);
    logged.should.match(/retry in 5 s/);
    node.status.lastCall.args[0].should.containEql({ fill: 'red', shape: 'ring' });
    node.status.lastCall.args[0].text.should.containEql('auth: cookie rejected'); // reason first
    // The route is up meanwhile.
    await request(app).post('/dam/events').set('X-DAM-Secret', SECRET)
      .send({ success: true, id: DERIVED_ID, data: { entry: [{ assetId: 9, rrn: 9, action: 'added' }] } }).expect(200);
    // The session becomes valid: the retry (after 5 s) registers.
    emulator.addSession({ value: lateCookie, permissions: ['events', 'add'] });
    await until(async () => (await getSubscription(DERIVED_ID)).success, 8000);
    await until(() => node.status.lastCall.args[0].fill === 'green');
    const seen = JSON.stringify([node.status.args, node.error.args, node.warn.args, node.log.args]);
    seen.should.not.containEql(SECRET);
    seen.should.not.containEql(lateCookie);
    emulator.revokeSession(lateCookie);
  });

  it('stops retrying once closed (the retry timer does not outlive the node)', async function () {
    this.timeout(20000);
    const lateCookie = 'closed-node-cookie-value';
    const node = await load(flow(), credentials(lateCookie));
    await until(() => node.error.called);
    await helper.unload();
    emulator.addSession({ value: lateCookie, permissions: ['events', 'add'] });
    await new Promise((r) => setTimeout(r, 6000)); // past the first retry delay (5 s)
    (await getSubscription(DERIVED_ID)).success.should.be.false();
    emulator.revokeSession(lateCookie);
  });

  it('a failed registration: the sidebar gets the whole error, the status under the node its short text', async function () {
    const { eventInStats } = require('../../dist/nodes/shared/event-in-stats');
    const node = await load(flow({ watchPath: ['? /inbox'] }));
    await until(() => node.error.called);
    const owned = eventInStats.get(node.id).view().owned;
    owned.state.should.equal('failed');
    const logged = String(node.error.lastCall.args[0]);
    owned.error.should.startWith('invalid-input: ');
    logged.should.containEql(owned.error.slice('invalid-input: '.length)); // the whole message, as logged
    owned.error.length.should.be.above(40); // longer than a status text may be
    eventInStats.get(node.id).view().counters.lastError.message.should.equal(owned.error);
    const status = node.status.lastCall.args[0].text;
    status.should.endWith('…'); // the status has the short text, cut to fit under the node
    status.should.not.containEql(owned.error);
  });

  it('does not retry what its own settings break, and says which field', async function () {
    const node = await load(flow({ watchPath: ['? /inbox'] }));
    await until(() => node.error.called);
    node.error.lastCall.args[0].should.match(/\(invalid-input\).*watchPath/);
    node.error.lastCall.args[0].should.not.match(/retry in/);
    node.status.lastCall.args[0].should.containEql({ fill: 'red' });
  });

  it('without a public base URL: no registration, a clear error, the route still up', async function () {
    const node = await load(flow({}, { publicBaseUrl: '' }));
    node.error.args.map((a) => String(a[0])).join('\n').should.match(/public base URL/);
    // The status is cut to fit under the node, with an ellipsis (issue 23 #10); the log has it whole.
    statusTexts(node).pop().should.match(/^nr-0123456789abcdef · server: the asset-server node has no.*…$/);
    await request(app).post('/dam/events').set('X-DAM-Secret', SECRET)
      .send({ success: true, id: DERIVED_ID, data: { entry: [] } }).expect(200);
    (await getSubscription(DERIVED_ID)).success.should.be.false();
  });

  // The public URL goes into the callback URL the server stores and calls: the base URL's rule.
  for (const bad of ['http://127.0.0.1:1/?x=1', 'http://127.0.0.1:1/#', 'http://user:pw@127.0.0.1:1/']) {
    it(`a public base URL such as ${bad}: no registration, an error naming the Public URL setting`, async function () {
      const node = await load(flow({}, { publicBaseUrl: bad }));
      node.error.args.map((a) => String(a[0])).join('\n').should.match(/Public URL: must/);
      node.error.args.map((a) => String(a[0])).join('\n').should.not.match(/pw@/);
      (await getSubscription(DERIVED_ID)).success.should.be.false();
    });
  }

  it('without a server selected: a clear error naming the field', async function () {
    const node = await load(flow({ server: '' }).filter((n) => n.id !== 'srv'), { [NODE_ID]: { secret: SECRET } });
    node.error.args.map((a) => String(a[0])).join('\n').should.match(/server: select an asset-server/);
  });

  // What the node remembers (dam-assets-subscriptions.json) must never delete a subscription a
  // running node owns now: the same base URL and id, whoever recorded it.
  it('a recorded orphan with the id a running node now owns is dropped, not deleted (an undone removal, a pasted copy)', async function () {
    fs.writeFileSync(path.join(userDir, 'dam-assets-subscriptions.json'),
      JSON.stringify({ nodes: {}, orphans: [{ server: 'srv', baseUrl: emulator.url, id: 'fixed-sub-0002' }] }));
    const deletesBefore = emulatorLog.filter((line) => /^DELETE .*fixed-sub-0002/.test(line)).length;
    const node = await load(flow({ subscriptionId: 'fixed-sub-0002' }));
    await until(() => node.status.lastCall && node.status.lastCall.args[0].fill === 'green');
    await until(() => JSON.parse(fs.readFileSync(path.join(userDir, 'dam-assets-subscriptions.json'), 'utf8')).orphans.length === 0);
    // A request after the sweep, through the same client: a DELETE the sweep sent is in by then.
    await helper.getNode('srv').getClient().getSubscription('fixed-sub-0002');
    emulatorLog.filter((line) => /^DELETE .*fixed-sub-0002/.test(line)).length.should.equal(deletesBefore);
    (await getSubscription('fixed-sub-0002')).success.should.be.true('the running node keeps its subscription');
  });

  it('moved to another config node for the same server: its subscription is not deleted', async function () {
    await load(flow({ subscriptionId: 'fixed-sub-0002' }));
    await until(async () => (await getSubscription('fixed-sub-0002')).success);
    const moved = flow({ subscriptionId: 'fixed-sub-0002', server: 'srv2' });
    moved.push({ id: 'srv2', type: 'asset-server', baseUrl: emulator.url, publicBaseUrl, timeout: 5 });
    const deletesBefore = emulatorLog.filter((line) => /^DELETE .*fixed-sub-0002/.test(line)).length;
    await helper.setFlows(moved, 'full', { ...credentials(), srv2: { cookie: COOKIE } });
    const node = helper.getNode(NODE_ID);
    await until(() => node.status.lastCall && node.status.lastCall.args[0].fill === 'green');
    await helper.getNode('srv2').getClient().getSubscription('fixed-sub-0002');
    emulatorLog.filter((line) => /^DELETE .*fixed-sub-0002/.test(line)).length.should.equal(deletesBefore);
    (await getSubscription('fixed-sub-0002')).success.should.be.true();
  });
});
