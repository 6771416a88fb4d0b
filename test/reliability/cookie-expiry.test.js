'use strict';
// Suite 2: the session cookie expires mid-run (the emulator revokes the session). The next call
// through a node must reach a Catch node as kind auth with a message saying what to do; once the
// cookie is updated in the asset-server config node and redeployed, work resumes.
// First in the test helper (a "modified nodes" redeploy with new credentials), then in a real
// Node-RED process through its admin API (POST /flows with the new credentials).
require('should');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const s = require('../nodes/nodes-support');
const r = require('./lib/support');
const { startRealNodeRed, startCollector, reporter } = require('./lib/nodered');

const { helper } = s;
const ACTIONABLE = /authentication failed \(HTTP 401\).*cookie.*(missing, wrong or expired).*update it.*asset-server/;
const CYCLES = r.pick(2, 25);

function sessionValue(n) { return `expiry-session-${n}-${(n * 7919).toString(36)}-9f4e`; }

describe('reliability 2: cookie expiry', function () {
  this.timeout(r.pick(30000, 120000));
  let emulator;
  let work;
  let faults;

  before(async function () {
    work = r.tempDir('dam-expiry-');
    emulator = await startEmulator({
      port: 0, dataDir: path.join(work, 'emulator'), retryDelayMs: 60000,
      sessions: [{ value: sessionValue(0), permissions: ['events', 'add'] }]
    });
    faults = r.watchProcessFaults();
  });

  after(async function () {
    if (faults) faults.stop();
    if (emulator) await emulator.close();
    r.rmDir(work);
  });

  afterEach(function () {
    faults.take().should.eql([], 'no unhandled rejection or uncaught exception');
  });

  describe('in the test helper', function () {
    before(() => helper.startServer());
    after(async () => { await helper.unload(); await helper.stopServer(); });

    function flow(cookie) {
      const z = 'f1';
      const server = { id: 'server', type: 'asset-server', name: 'dam', baseUrl: emulator.url, timeout: 10 };
      if (cookie !== undefined) server.credentials = { cookie };
      return [
        { id: z, type: 'tab', label: 'expiry' },
        server,
        { id: 'up1', type: 'asset-upload', z, server: 'server', destination: '/expiry', destinationType: 'str', wait: 'true', waitType: 'bool', wires: [['out']] },
        { id: 'sb1', type: 'asset-subscribe', z, server: 'server', action: 'register', subscriptionId: 'expiry-sub-0001', subscriptionIdType: 'str',
          callback: 'http://127.0.0.1:9/callback', callbackType: 'str', watchPath: ['* /expiry'], wires: [['out']] },
        { id: 'out', type: 'helper', z, wires: [] },
        { id: 'catch1', type: 'catch', z, scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper', z, wires: [] }
      ];
    }

    async function send(id, msg) {
      const result = s.outcome(15000);
      helper.getNode(id).receive(msg);
      return result;
    }

    it(`revoked mid-run: kind auth with an actionable message at the Catch node; a redeploy with a new cookie resumes work (${CYCLES} cycles)`, async function () {
      await s.load(flow(), { server: { cookie: sessionValue(0) } });
      const first = await send('up1', { payload: 'before expiry', name: 'cycle-0.txt' });
      first.out.payload.success.should.be.true();

      for (let n = 1; n <= CYCLES; n++) {
        const old = sessionValue(n - 1);
        emulator.revokeSession(old);
        const statuses = { up1: s.recordStatus(helper.getNode('up1')), sb1: s.recordStatus(helper.getNode('sb1')) };
        for (const [id, msg] of [['up1', { payload: 'after expiry', name: `lost-${n}.txt` }], ['sb1', {}]]) {
          const { caught, out } = await send(id, msg);
          (out === undefined).should.be.true(`${id}: no output once the cookie expired`);
          caught.error.source.id.should.equal(id);
          caught.assetError.kind.should.equal('auth');
          caught.assetError.status.should.equal(401);
          caught.error.message.should.match(ACTIONABLE);
          const last = statuses[id][statuses[id].length - 1];
          last.should.containDeep({ fill: 'red', shape: 'ring' });
          last.text.should.startWith('auth:');
          (s.serialise(caught) + s.serialise(statuses[id]) + s.loggedText()).should.not.containEql(old);
        }

        // The user gets a new session and types it into the config node; the editor deploys the
        // changed config node with its credentials ("modified nodes" deploy).
        emulator.addSession({ value: sessionValue(n), permissions: ['events', 'add'] });
        await helper.setFlows(flow(sessionValue(n)), 'nodes');
        const again = await send('up1', { payload: `cycle ${n}`, name: `cycle-${n}.txt` });
        if (again.caught) throw new Error(`cycle ${n}: still failing after the new cookie was deployed: ${again.caught.error.message}`);
        again.out.payload.success.should.be.true();
        const registered = await send('sb1', {});
        (registered.out && registered.out.payload.success).should.be.true();
      }
      r.figure(`cookie expiry (test helper): ${CYCLES} revoke/redeploy cycle(s), each: kind auth at the Catch node, then work resumed`);
    });
  });

  describe('in a real Node-RED (admin API deploy)', function () {
    let nodeRed;
    let collector;

    before(async function () {
      this.timeout(90000);
      collector = await startCollector();
      nodeRed = await startRealNodeRed();
    });

    after(async function () {
      this.timeout(30000);
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nodeRed.lines.slice(-40).join('\n'));
      if (nodeRed) await nodeRed.stopAndClean();
      if (collector) await collector.close();
    });

    function flows(cookie) {
      const z = 'exp0000000000001';
      const server = { id: 'exp0000000000002', type: 'asset-server', name: 'dam', baseUrl: emulator.url, timeout: 10 };
      if (cookie !== undefined) server.credentials = { cookie };
      return [
        { id: z, type: 'tab', label: 'cookie expiry' },
        server,
        { id: 'exp0000000000003', type: 'inject', z, name: 'go', props: [{ p: 'payload' }], payload: 'expiry test', payloadType: 'str',
          repeat: '', once: false, x: 0, y: 0, wires: [['exp0000000000004']] },
        { id: 'exp0000000000004', type: 'asset-upload', z, server: server.id, destination: '/expiry-nr', destinationType: 'str',
          assetName: 'from-node-red.txt', assetNameType: 'str', wait: 'true', waitType: 'bool', x: 0, y: 0, wires: [['exp-ok']] },
        { id: 'exp0000000000005', type: 'catch', z, scope: null, uncaught: false, x: 0, y: 0, wires: [['exp-caught']] },
        ...reporter('exp-ok', z, 'ok', collector.url),
        ...reporter('exp-caught', z, 'caught', collector.url)
      ];
    }

    it('POST /flows with the new cookie after an expiry: auth at the Catch node, then the upload works again', async function () {
      emulator.addSession({ value: 'nr-session-a-55c1e0', permissions: ['events', 'add'] });
      await nodeRed.deployAs('full', flows('nr-session-a-55c1e0'));
      let since = collector.reports.length;
      await nodeRed.inject('exp0000000000003');
      (await collector.next('ok', since)).payload.success.should.be.true();

      emulator.revokeSession('nr-session-a-55c1e0');
      since = collector.reports.length;
      await nodeRed.inject('exp0000000000003');
      const caught = await collector.next('caught', since);
      caught.assetError.kind.should.equal('auth');
      caught.error.message.should.match(ACTIONABLE);
      caught.error.source.id.should.equal('exp0000000000004');
      collector.reports.slice(since).some((rep) => rep.tag === 'ok').should.be.false();

      // The editor sends the config node's new credentials with a "modified nodes" deploy.
      emulator.addSession({ value: 'nr-session-b-77d2f1', permissions: ['events', 'add'] });
      await nodeRed.deployAs('nodes', flows('nr-session-b-77d2f1'));
      since = collector.reports.length;
      await nodeRed.inject('exp0000000000003');
      (await collector.next('ok', since)).payload.success.should.be.true();
      nodeRed.lines.join('\n').should.not.containEql('nr-session-a-55c1e0');
      nodeRed.lines.join('\n').should.not.containEql('nr-session-b-77d2f1');
    });
  });
});
