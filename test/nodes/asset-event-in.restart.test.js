'use strict';
// asset-event-in across a REAL Node-RED restart (the embedded runtime in its own process): the
// flow file is changed while Node-RED is stopped, as a git pull or a hand edit would, and on
// the next start the subscription the node no longer owns is deleted on the server.
require('should');
const fs = require('fs');
const path = require('path');
const { fork } = require('child_process');
const s = require('./nodes-support');

const root = path.join(__dirname, '..', '..');
const MODULE = require(path.join(root, 'package.json')).name;
const NODE_ID = 'a1b2c3d4e5f60718';

describe('asset-event-in across a real Node-RED restart', function () {
  this.timeout(180000);
  let emulator;
  let tmp;
  let userDir;
  let child;

  async function startNodeRed() {
    child = fork(path.join(__dirname, 'fixtures', 'embedded-node-red.js'), [userDir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const started = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`Node-RED exited with ${code}`)));
    });
    if (started.error) throw new Error(started.error);
    return `http://127.0.0.1:${started.port}`;
  }

  async function stopNodeRed() {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send('stop');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000); // a forced kill would skip the close the test checks
    await exited;
    clearTimeout(timer);
  }

  async function registered(id) {
    const res = await fetch(`${emulator.url}/review/api/events/assets/subscribe/${id}`, { headers: { cookie: s.COOKIE } });
    return (await res.json()).success === true;
  }

  /** Waits for a state; the cap only ends a run that would hang (a busy machine's registration took over 10 s). */
  async function until(check, timeoutMs = 45000) {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await s.delay(50);
    }
  }

  /** Rewrites flows.json while Node-RED is stopped. */
  function editFlowFile(change) {
    const file = path.join(userDir, 'flows.json');
    fs.writeFileSync(file, JSON.stringify(change(JSON.parse(fs.readFileSync(file, 'utf8')))));
  }

  before(async function () {
    emulator = await s.startTestEmulator();
    tmp = s.tempDir('dam-event-in-restart-');
    userDir = tmp.dir;
    const scopeDir = path.join(userDir, 'node_modules', path.dirname(MODULE));
    fs.mkdirSync(scopeDir, { recursive: true });
    fs.symlinkSync(root, path.join(userDir, 'node_modules', MODULE), 'dir');
  });

  after(async function () {
    await stopNodeRed();
    for (const id of ['restart-sub-0001', 'restart-sub-0002']) {
      await fetch(`${emulator.url}/review/api/events/assets/subscribe/${id}`, { method: 'DELETE', headers: { cookie: s.COOKIE } });
    }
    if (emulator) await emulator.close();
    if (tmp) tmp.cleanup();
  });

  it('deletes the old subscription after the id was changed, then after the node was removed, while stopped', async function () {
    const base = await startNodeRed();
    const flows = [
      { id: 'tab1', type: 'tab', label: 'events' },
      { id: 'srv', type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 10, rejectUnauthorized: true, tls: '',
        publicBaseUrl: 'http://127.0.0.1:9', credentials: { cookie: s.COOKIE } },
      { id: NODE_ID, type: 'asset-event-in', z: 'tab1', x: 120, y: 40, path: '/dam/events', manage: true, server: 'srv',
        subscriptionId: 'restart-sub-0001', watchPath: ['* /inbox'], wires: [[]] }
    ];
    const deploy = await fetch(`${base}/flows`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v1', 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify(flows)
    });
    deploy.status.should.equal(204);
    await until(() => registered('restart-sub-0001'));
    await stopNodeRed();
    (await registered('restart-sub-0001')).should.be.true(); // a stop keeps it

    editFlowFile((nodes) => nodes.map((n) => (n.id === NODE_ID ? { ...n, subscriptionId: 'restart-sub-0002' } : n)));
    await startNodeRed();
    await until(() => registered('restart-sub-0002'));
    await until(async () => !(await registered('restart-sub-0001')));
    await stopNodeRed();
    const remembered = JSON.parse(fs.readFileSync(path.join(userDir, 'dam-assets-subscriptions.json'), 'utf8'));
    remembered.nodes.should.eql({ [NODE_ID]: { server: 'srv', baseUrl: emulator.url, id: 'restart-sub-0002' } });
    JSON.stringify(remembered).should.not.containEql('local-dev');

    editFlowFile((nodes) => nodes.filter((n) => n.id !== NODE_ID));
    await startNodeRed();
    await until(async () => !(await registered('restart-sub-0002')));
    await stopNodeRed();
    JSON.parse(fs.readFileSync(path.join(userDir, 'dam-assets-subscriptions.json'), 'utf8')).should.eql({ nodes: {}, orphans: [] });
  });
});
