'use strict';
// asset-event-in owning its subscription, with automatic login that yields a session the API
// refuses (wrong session source): the node must not log in again in a tight loop. Before the
// fix every login emitted 'session-renewed', the node aborted its own registration to start
// another, the refusal was never counted, and one node made hundreds of logins per second.
require('should');
const http = require('http');
const express = require('express');
const s = require('./nodes-support');
const eventIn = require('../../nodes/asset-event-in.js');

const { helper } = s;
const USER = { name: 'loop-robot', password: 'Loop-Node-Pass-7c2e', permissions: ['events', 'add'] };

describe('asset-event-in with an automatic login the server refuses', function () {
  this.timeout(30000);
  let emulator, app, hookServer, publicBaseUrl;
  const log = [];

  before(async () => {
    await helper.startServer();
    emulator = await s.startTestEmulator({ users: [USER], log: (line) => log.push(line) });
    const outer = express();
    outer.use('/hooks', (req, res, next) => (app ? app(req, res, next) : next()));
    hookServer = http.createServer(outer);
    await new Promise((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
    publicBaseUrl = `http://127.0.0.1:${hookServer.address().port}/`;
  });
  after(async () => {
    await helper.unload();
    await helper.stopServer();
    await emulator.close();
    hookServer.closeAllConnections();
    await new Promise((resolve) => hookServer.close(resolve));
  });

  it('fails the registration with a login error and backs off instead of logging in again at once', async () => {
    helper.settings({ httpNodeRoot: '/hooks' });
    const flows = [
      { id: 'f1', type: 'tab' },
      // The login works, but svr_realm is not a session the API takes.
      { id: 'server', type: 'asset-server', z: 'f1', baseUrl: emulator.url, timeout: 10, publicBaseUrl,
        loginEnabled: true, loginPreset: 'utility', sessionFrom: 'json', sessionName: 'svr_realm' },
      { id: '00aa11bb22cc33dd', type: 'asset-event-in', z: 'f1', path: '/dam/loop', manage: true, server: 'server', watchPath: ['* /x'], wires: [[]] }
    ];
    const logins = emulator.sessionStats().logins;
    await helper.load([...Object.values(s.nodes), s.tlsNode, (RED) => { app = RED.httpNode; return eventIn(RED); }], flows,
      { server: { username: USER.name, password: USER.password } });
    const statuses = s.recordStatus(helper.getNode('00aa11bb22cc33dd'));
    const deadline = Date.now() + 15000;
    while (!statuses.some((st) => st.fill === 'red') && Date.now() < deadline) await s.delay(20);
    const failed = statuses.find((st) => st.fill === 'red');
    (failed !== undefined).should.be.true(`no failed status; ${emulator.sessionStats().logins - logins} logins so far`);
    failed.text.should.match(/auth: session from login refused/);
    (emulator.sessionStats().logins - logins).should.be.belowOrEqual(2, 'logins before the failure');
    log.filter((line) => /^POST \/review\/api\/events\/assets\/subscribe/.test(line)).length.should.be.belowOrEqual(3);
  });
});
