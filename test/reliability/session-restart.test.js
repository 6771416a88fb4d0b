'use strict';
// Where a cookie set at run time is kept (README "Sessions"): in memory only. In a real Node-RED
// process that is stopped and started again (same user dir): before the restart every request of the
// server uses the cookie an asset-session node set; after it, the configured cookie again; the
// run-time cookie was never written to the flows or credentials file. Counted at the emulator.
require('should');
const fs = require('fs');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const { launchNodeRed, tempDir, rmDir } = require('./lib/rig');
const r = require('./lib/support');

const CONFIGURED = 'configured-session-3c7a';
const RUNTIME = 'runtime-session-8e2b41f0';

describe('reliability 2c: a run-time cookie across a Node-RED restart', function () {
  this.timeout(r.pick(60000, 120000));
  let work;
  let emulator;
  let rig;

  before(async function () {
    this.timeout(90000);
    work = tempDir('dam-session-restart-');
    emulator = await startEmulator({
      port: 0, dataDir: path.join(work, 'emulator'),
      sessions: [{ value: CONFIGURED, permissions: ['events', 'add'] }, { value: RUNTIME, permissions: ['events', 'add'] }]
    });
    rig = await launchNodeRed({ env: { DAM_NEW_COOKIE: `JSESSIONID=${RUNTIME}` } });
  });

  after(async function () {
    this.timeout(30000);
    if (rig) await rig.close();
    if (emulator) await emulator.close();
    rmDir(work);
  });

  const Z = 'rst0000000000001';
  const flows = () => [
    { id: Z, type: 'tab', label: 'restart' },
    { id: 'rst0000000000002', type: 'asset-server', name: 'dam', baseUrl: emulator.url, timeout: 10, credentials: { cookie: CONFIGURED } },
    { id: 'rst0000000000003', type: 'inject', z: Z, props: [], repeat: '', once: false, x: 0, y: 0, wires: [['rst0000000000004']] },
    { id: 'rst0000000000004', type: 'asset-session', z: Z, server: 'rst0000000000002', cookie: 'DAM_NEW_COOKIE', cookieType: 'env', x: 0, y: 0, wires: [['rst0000000000006']] },
    { id: 'rst0000000000005', type: 'inject', z: Z, props: [], repeat: '', once: false, x: 0, y: 0, wires: [['rst0000000000006']] },
    { id: 'rst0000000000006', type: 'asset-subscribe', z: Z, server: 'rst0000000000002', action: 'register', subscriptionId: 'restart-sub-0001',
      subscriptionIdType: 'str', callback: 'http://127.0.0.1:9/x', callbackType: 'str', x: 0, y: 0, wires: [[]] }
  ];

  async function inject(id) {
    const res = await fetch(`${rig.url}/inject/${id}`, { method: 'POST' });
    res.status.should.equal(200);
  }

  /** Clicks `injectId` (default "register") and waits until the emulator counted one more request with `cookie`. */
  async function registerWith(cookie, injectId = 'rst0000000000005') {
    const before = { configured: emulator.requestsWith(CONFIGURED), runtime: emulator.requestsWith(RUNTIME) };
    await inject(injectId);
    await r.waitFor(`a request with the ${cookie === RUNTIME ? 'run-time' : 'configured'} cookie`,
      () => emulator.requestsWith(cookie) === before[cookie === RUNTIME ? 'runtime' : 'configured'] + 1, 10000, 25);
    const other = cookie === RUNTIME ? CONFIGURED : RUNTIME;
    emulator.requestsWith(other).should.equal(before[cookie === RUNTIME ? 'configured' : 'runtime'], 'no request with the other cookie');
  }

  it('kept in memory until the restart; then the configured cookie again; never in the flows or credentials file', async function () {
    await rig.deploy(flows());
    await registerWith(CONFIGURED);
    // The session node sets the cookie from $DAM_NEW_COOKIE, then passes the msg on to "register".
    await registerWith(RUNTIME, 'rst0000000000003');
    await registerWith(RUNTIME);

    await rig.stop();
    await rig.start();
    await registerWith(CONFIGURED);

    const files = ['flows.json', 'flows_cred.json'].map((f) => fs.readFileSync(path.join(rig.userDir, f), 'utf8')).join('\n');
    files.should.not.containEql(RUNTIME);
    rig.lines.join('\n').should.not.containEql(RUNTIME);
  });
});
