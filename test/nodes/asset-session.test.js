'use strict';
// Sessions in a real Node-RED runtime (test helper) against the emulator (real HTTP):
// - an asset-session node sets a new cookie at run time and the next request of every node on that
//   server uses it (counted at the emulator), with no redeploy; where it is kept across redeploys;
// - automatic login in the asset-server node, its failure status (backoff), and the login action;
// - asset-event-in registers its owned subscription again after a login that followed a 401.
require('should');
const http = require('http');
const express = require('express');
const s = require('./nodes-support');
const sessionNode = require('../../nodes/asset-session.js');
const eventIn = require('../../nodes/asset-event-in.js');

const { helper } = s;
const OLD = 'old-session-4e1f0a7c2b9d';
const NEW = 'new-session-9b3c5d7e1f2a';
const THIRD = 'third-session-77aa31bc';
const USER = { name: 'flow-robot', password: 'Node-Pass-3f9e2d1c8b', permissions: ['events', 'add'] };

describe('asset-session and automatic login (test helper + emulator)', function () {
  this.timeout(30000);
  let emulator;
  const log = [];
  let tmp;
  let app;
  let hookServer;
  let publicBaseUrl;

  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator({ users: [USER], log: (line) => log.push(line) });
    tmp = s.tempDir();
    const outer = express();
    outer.use('/hooks', (req, res, next) => (app ? app(req, res, next) : next()));
    hookServer = http.createServer(outer);
    await new Promise((r) => hookServer.listen(0, '127.0.0.1', r));
    publicBaseUrl = `http://127.0.0.1:${hookServer.address().port}/`;
  });
  after(async function () {
    await helper.stopServer();
    await emulator.close();
    tmp.cleanup();
    hookServer.closeAllConnections();
    await new Promise((r) => hookServer.close(r));
  });
  afterEach(async function () {
    await helper.unload();
    helper.settings({});
  });

  function load(flowNodes, creds) {
    helper.settings({ httpNodeRoot: '/hooks' });
    return helper.load([...Object.values(s.nodes), s.tlsNode, sessionNode, (RED) => { app = RED.httpNode; return eventIn(RED); }], flowNodes, creds);
  }

  function flow(serverProps = {}, serverId = 'server') {
    const z = 'f1';
    const node = (id, type, props) => ({ id, type, z, server: serverId, wires: [['out']], ...props });
    return [
      { id: z, type: 'tab', label: 'sessions' },
      { id: serverId, type: 'asset-server', name: 'dam', baseUrl: emulator.url, timeout: 10, ...serverProps },
      node('ss1', 'asset-session', { cookie: 'payload', cookieType: 'msg' }),
      node('login1', 'asset-session', { action: 'login' }),
      node('up1', 'asset-upload', { destination: '/sessions', destinationType: 'str', wait: 'true', waitType: 'bool' }),
      node('sb1', 'asset-subscribe', { action: 'register', subscriptionId: 'session-sub-0001', subscriptionIdType: 'str',
        callback: 'http://127.0.0.1:9/callback', callbackType: 'str', watchPath: ['* /sessions'] }),
      node('ex1', 'asset-export', { fuid: '', fuidType: 'num' }),
      node('dl1', 'asset-download', { fuid: '', fuidType: 'num' }),
      { id: 'out', type: 'helper', z, wires: [] },
      { id: 'catch1', type: 'catch', z, scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper', z, wires: [] }
    ];
  }

  async function send(id, msg) {
    const result = s.outcome(15000);
    helper.getNode(id).receive(msg);
    const r = await result;
    if (r.caught) throw new Error(`${id} failed: ${r.caught.error.message}`);
    return r.out;
  }
  async function sendFailing(id, msg) {
    const result = s.outcome(15000);
    helper.getNode(id).receive(msg);
    const r = await result;
    if (r.out) throw new Error(`${id}: expected an error, got output`);
    return r.caught;
  }

  /** Each node on the server, with a msg that makes it send one request. */
  function requests(fuid) {
    return [['up1', { payload: Buffer.from('x'), filename: undefined, name: 'every-node.txt' }], ['sb1', {}], ['ex1', { fuid }], ['dl1', { fuid }]];
  }

  it('a flow sets a new cookie at run time: the next request of every node uses it (counted at the emulator), no redeploy', async function () {
    emulator.addSession({ value: OLD, permissions: ['events', 'add'] });
    await load(flow(), { server: { cookie: OLD } });
    const server = helper.getNode('server');
    const first = await send('up1', { payload: Buffer.from('before'), name: 'before.txt' });
    const fuid = first.fuid ?? first.payload.data.fuids[0];

    emulator.revokeSession(OLD);
    emulator.addSession({ value: NEW, permissions: ['events', 'add'] });
    const statuses = s.recordStatus(helper.getNode('ss1'));
    const setMsg = await send('ss1', { payload: `JSESSIONID=${NEW}`, topic: 'renew' });
    setMsg.should.not.have.property('payload');
    setMsg.topic.should.equal('renew');
    statuses[statuses.length - 1].text.should.match(/^cookie set /);
    // Just after midnight the status says 00:..., not 24:... (only Date faked: the rest runs as always).
    const sinon = require('sinon');
    const clock = sinon.useFakeTimers({ now: new Date(2026, 10, 30, 0, 8, 34), toFake: ['Date'] });
    try {
      await send('ss1', { payload: `JSESSIONID=${NEW}` });
    } finally {
      clock.restore();
    }
    statuses[statuses.length - 1].text.should.equal('cookie set 00:08:34');

    for (const [id, msg] of requests(fuid)) {
      const before = emulator.requestsWith(NEW);
      await send(id, msg);
      emulator.requestsWith(NEW).should.equal(before + 1, `${id} used the new cookie`);
    }
    helper.getNode('server').should.equal(server, 'same config node: no redeploy');
    const everything = s.loggedText() + s.serialise(statuses) + s.serialise(setMsg) + log.join('\n');
    everything.should.not.containEql(NEW);
    everything.should.not.containEql(OLD);
  });

  it('kept across a redeploy while the server is unchanged; a new configured cookie wins', async function () {
    emulator.addSession({ value: OLD, permissions: ['events', 'add'] });
    emulator.addSession({ value: NEW, permissions: ['events', 'add'] });
    emulator.addSession({ value: THIRD, permissions: ['events', 'add'] });
    const withCookie = (cookie) => flow().map((n) => (n.id === 'server' ? { ...n, credentials: { cookie } } : n));
    await load(flow(), { server: { cookie: OLD } });
    await send('ss1', { payload: NEW });
    // A full deploy re-creates every node, the asset-server included, with the same settings.
    await helper.setFlows(flow(), 'full');
    let before = emulator.requestsWith(NEW);
    await send('sb1', {});
    emulator.requestsWith(NEW).should.equal(before + 1, 'the run-time cookie survived the full redeploy');
    // The user types a new cookie into the asset-server node: what they configured is used.
    await helper.setFlows(withCookie(THIRD), 'nodes');
    before = emulator.requestsWith(THIRD);
    await send('sb1', {});
    emulator.requestsWith(THIRD).should.equal(before + 1, 'the newly configured cookie wins');
  });

  it('a missing cookie is invalid-input naming the field; the msg property is removed anyway', async function () {
    emulator.addSession({ value: OLD, permissions: ['events', 'add'] });
    await load(flow(), { server: { cookie: OLD } });
    const caught = await sendFailing('ss1', { payload: '' });
    caught.assetError.kind.should.equal('invalid-input');
    caught.assetError.field.should.equal('cookie');
  });

  it('a cookie too long for any server (200,000 characters) is invalid-input naming the field; the cookie before it stays in use', async function () {
    emulator.addSession({ value: OLD, permissions: ['events', 'add'] });
    await load(flow(), { server: { cookie: OLD } });
    const caught = await sendFailing('ss1', { payload: 'A'.repeat(200000) });
    caught.assetError.kind.should.equal('invalid-input');
    caught.assetError.field.should.equal('cookie');
    caught.error.message.should.match(/at most 7168 characters \(got 200000\)/);
    const before = emulator.requestsWith(OLD);
    await send('sb1', {});
    emulator.requestsWith(OLD).should.equal(before + 1, 'the old cookie is still sent');
  });

  it('no cookie configured and no login: no error at deploy; a request before a flow set one is invalid-input naming the cookie; then the set one is used', async function () {
    emulator.addSession({ value: NEW, permissions: ['events', 'add'] });
    await load(flow(), { server: { cookie: ' ' } });
    helper.getNode('server').error.called.should.be.false('a blank cookie is no configuration error: a flow may set one');
    const early = await sendFailing('sb1', {});
    early.assetError.kind.should.equal('invalid-input');
    early.assetError.field.should.equal('cookie');
    early.error.message.should.match(/asset-session node/);
    const before = emulator.requestsWith(NEW);
    await send('ss1', { payload: NEW });
    await send('sb1', {});
    emulator.requestsWith(NEW).should.equal(before + 1, 'the cookie the flow set');
  });

  it('no server selected: invalid-input naming server, and the cookie is already gone from the msg the Catch node gets', async function () {
    emulator.addSession({ value: OLD, permissions: ['events', 'add'] });
    await load(flow().map((n) => (n.id === 'ss1' ? { ...n, server: '' } : n)), { server: { cookie: OLD } });
    const caught = await sendFailing('ss1', { payload: 'JSESSIONID=never-on-a-catch-msg' });
    caught.assetError.field.should.equal('server');
    caught.should.not.have.property('payload');
    s.serialise(caught).should.not.containEql('never-on-a-catch-msg');
  });

  it('warns when automatic login would send the password in a plain http:// query string (the utility preset on an http base URL)', async function () {
    await load(flow({ loginEnabled: true, loginPreset: 'utility' }), { server: { username: USER.name, password: USER.password } });
    const warned = helper.getNode('server').warn.args.map((a) => String(a[0])).join('\n');
    warned.should.match(/password in the query string of http:\/\/127\.0\.0\.1:\d+\/command over plain http/);
    warned.should.not.containEql(USER.password);
    await helper.unload();
    await load(flow({ loginEnabled: true, loginPreset: 'form' }), { server: { username: USER.name, password: USER.password } });
    helper.getNode('server').warn.called.should.be.false('a form login sends the password in the body');
  });

  it('automatic login: no cookie configured, the nodes log in on the first 401; the login action logs in now', async function () {
    const logins = emulator.sessionStats().logins;
    await load(flow({ loginEnabled: true, loginPreset: 'form' }), { server: { username: USER.name, password: USER.password } });
    await send('sb1', {});
    emulator.sessionStats().logins.should.equal(logins + 1);
    await send('login1', {});
    emulator.sessionStats().logins.should.equal(logins + 2);
    (s.loggedText()).should.not.containEql(USER.password);
  });

  it('a failed automatic login: auth at the Catch node naming the step, status says when the next try is, no retry loop', async function () {
    const failed = emulator.sessionStats().failedLogins;
    await load(flow({ loginEnabled: true, loginPreset: 'utility' }), { server: { username: USER.name, password: 'Wrong-Node-Pass-11' } });
    const statuses = s.recordStatus(helper.getNode('sb1'));
    const caught = await sendFailing('sb1', {});
    caught.assetError.kind.should.equal('auth');
    caught.error.message.should.match(/login failed, next try in 5 s: login request: .*HTTP 401.*Automatic login: check/);
    statuses[statuses.length - 1].text.should.match(/^auth: login failed, next try in 5 s/);
    const again = await sendFailing('sb1', {});
    again.error.message.should.match(/next try in \d s/);
    emulator.sessionStats().failedLogins.should.equal(failed + 1);
    (s.loggedText() + s.serialise(caught) + s.serialise(statuses)).should.not.containEql('Wrong-Node-Pass-11');
  });

  it('asset-event-in registers its owned subscription again after a login that followed a 401', async function () {
    const nodes = flow({ loginEnabled: true, loginPreset: 'utility', publicBaseUrl });
    nodes.push({ id: '00aa11bb22cc33dd', type: 'asset-event-in', z: 'f1', path: '/dam/session-events', manage: true, server: 'server',
      watchPath: ['* /sessions'], wires: [[]] });
    await load(nodes, { server: { username: USER.name, password: USER.password } });
    const registrations = () => log.filter((l) => /^POST \/review\/api\/events\/assets\/subscribe\/nr-00aa11bb22cc33dd 200/.test(l)).length;
    const until = async (check) => { const end = Date.now() + 5000; while (!check()) { if (Date.now() > end) throw new Error('timed out'); await s.delay(20); } };
    await until(() => registrations() === 1);
    // The session expires; the next request of another node meets a 401 and logs in.
    const current = helper.getNode('server').client.sessionCookie.split('=')[1];
    emulator.revokeSession(current);
    await send('sb1', {});
    await until(() => registrations() === 2);
  });

  it('asset-event-in with no cookie configured registers its owned subscription once a flow sets one, with no error logged', async function () {
    emulator.addSession({ value: THIRD, permissions: ['events', 'add'] });
    const nodes = flow({ publicBaseUrl }, 'server-later'); // its own id: no cookie kept from an earlier test
    nodes.push({ id: '00aa11bb22cc33ee', type: 'asset-event-in', z: 'f1', path: '/dam/later-events', manage: true, server: 'server-later',
      watchPath: ['* /sessions'], wires: [[]] });
    await load(nodes, { 'server-later': { cookie: '' } });
    const eventInNode = helper.getNode('00aa11bb22cc33ee');
    const attempts = () => log.filter((l) => /^POST \/review\/api\/events\/assets\/subscribe\/nr-00aa11bb22cc33ee /.test(l));
    const registrations = () => attempts().filter((l) => / 200/.test(l)).length;
    await send('ex1', {}).catch(() => undefined); // a round trip: the deploy's start is over
    attempts().should.eql([], 'nothing sent without a session');
    await send('ss1', { payload: THIRD });
    const end = Date.now() + 5000;
    while (registrations() === 0) { if (Date.now() > end) throw new Error('not registered after the cookie was set'); await s.delay(20); }
    // (the helper's error spy is shared by every node: the export's own error is in it)
    eventInNode.error.args.map((a) => String(a[0])).filter((m) => /subscription|cookie/.test(m)).should.eql([]);
    attempts().length.should.equal(1, 'one registration, with the cookie set');
  });

  it('asset-event-in removed before any cookie was set: no DELETE sent without a session; kept to delete on the next start', async function () {
    // A server id of its own: a cookie set in an earlier test is kept per server id across deploys.
    const nodes = flow({ publicBaseUrl }, 'server-never-set');
    const eventInNode = { id: '00aa11bb22cc33ff', type: 'asset-event-in', z: 'f1', path: '/dam/never-events', manage: true, server: 'server-never-set', watchPath: ['* /sessions'], wires: [[]] };
    await load([...nodes, eventInNode], { 'server-never-set': { cookie: '' } });
    const errors = [];
    const spy = helper.getNode('00aa11bb22cc33ff').error;
    await helper.setFlows(nodes, 'full');
    spy.args.forEach((a) => errors.push(String(a[0])));
    log.filter((l) => /subscribe\/nr-00aa11bb22cc33ff/.test(l)).should.eql([], 'nothing sent for it');
    errors.join('\n').should.match(/deleting subscription nr-00aa11bb22cc33ff failed: cookie: is required.*\(tried again on the next start\)/);
  });
});
