'use strict';
// `npm start` end to end: runs the real `node dist/demo/start.js` (emulator + a real Node-RED
// child process) on free ports with its own demo folder, drops files into the hot folder and
// checks the mirror, then stops it the way a user does.
require('should');
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { freePort, listening, waitFor, processAlive, lineCollector, exitOf } = require('./support');

const PROJECT_DIR = path.resolve(__dirname, '..', '..');
const START = path.join(PROJECT_DIR, 'dist', 'demo', 'start.js');
const COOKIE = 'JSESSIONID=local-dev';

describe('npm start sandbox (dist/demo/start.js)', function () {
  this.timeout(60000);
  let demoDir;
  let ports;
  const children = [];

  before(async () => {
    demoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-demo-test-'));
    ports = { nodeRed: await freePort(), emulator: await freePort() };
  });

  // A failed test must not leave the launcher or its Node-RED running (they hold the ports).
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
        await exitOf(child, 5000).catch(() => {});
      }
    }
  });

  after(() => {
    fs.rmSync(demoDir, { recursive: true, force: true });
  });

  /** Starts the demo in its own process group (as a terminal would) and waits for its banner. */
  async function startDemo() {
    const child = spawn(process.execPath, [START], {
      cwd: PROJECT_DIR,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORT: String(ports.nodeRed), DAM_EMULATOR_PORT: String(ports.emulator), DAM_DEMO_DIR: demoDir }
    });
    children.push(child);
    const output = lineCollector(child);
    const pid = Number((await output.waitForLine(/Node-RED started \(pid (\d+)\)/, 40000))[1]);
    await output.waitForLine(/DAM demo is running/, 20000);
    return { child, output, nodeRedPid: pid };
  }

  /** Drops a file the way `cp` does (written in place, in several chunks) and waits for its mirror. */
  async function dropAndExpectMirror(name, bytes) {
    const dropped = Date.now();
    const handle = fs.openSync(path.join(demoDir, 'inbox', name), 'w');
    for (let i = 0; i < bytes.length; i += 64 * 1024) fs.writeSync(handle, bytes.subarray(i, i + 64 * 1024));
    fs.closeSync(handle);

    const mirrored = path.join(demoDir, 'mirror', 'inbox', name);
    const metadata = await waitFor(`${name} and its metadata in the mirror`, () => {
      const got = fs.readFileSync(mirrored);
      if (!got.equals(bytes)) return false;
      return JSON.parse(fs.readFileSync(mirrored + '.metadata.json', 'utf8'));
    }, 10000);
    const elapsed = Date.now() - dropped;
    elapsed.should.be.below(10000);
    // The ingest side moved the original out of the inbox.
    fs.existsSync(path.join(demoDir, 'inbox', name)).should.be.false();
    fs.readFileSync(path.join(demoDir, 'inbox', 'done', name)).equals(bytes).should.be.true();
    return { metadata, elapsed };
  }

  async function emulatorGet(url) {
    const res = await fetch(`http://127.0.0.1:${ports.emulator}${url}`, { headers: { Cookie: COOKIE } });
    return { status: res.status, body: await res.json() };
  }

  it('mirrors a dropped file (same bytes, metadata beside it) within 10 s; Ctrl-C stops both processes', async () => {
    const demo = await startDemo();
    demo.output.text().should.match(new RegExp(`Node-RED editor: +http://127\\.0\\.0\\.1:${ports.nodeRed}/`));
    demo.output.text().should.match(new RegExp(`Emulator: +http://127\\.0\\.0\\.1:${ports.emulator}`));
    demo.output.text().should.match(/Demo flow deployed/);
    demo.output.text().should.not.match(/\[error\]/);

    const bytes = crypto.randomBytes(300 * 1024);
    const { metadata } = await dropAndExpectMirror('photo one.bin', bytes);
    JSON.stringify(metadata).should.match(/photo one\.bin/);

    // The subscription the demo's asset-event-in owns is on the emulator.
    const sub = await emulatorGet('/review/api/events/assets/subscribe/dam-demo-mirror');
    sub.body.success.should.be.true();
    sub.body.subscription.watchPath.should.eql(['* /inbox']);
    sub.body.subscription.callback.should.startWith(`http://127.0.0.1:${ports.nodeRed}/`);

    // Ctrl-C in a terminal: SIGINT to the whole process group.
    process.kill(-demo.child.pid, 'SIGINT');
    (await exitOf(demo.child, 20000)).should.equal(0);
    processAlive(demo.nodeRedPid).should.be.false();
    (await listening(ports.nodeRed)).should.be.false();
    (await listening(ports.emulator)).should.be.false();
    demo.output.text().should.match(/Stopped\./);
    // The webhook's shared secret never shows up in either process's output (the cookie does,
    // on purpose: the banner tells the user the emulator's well-known local-dev cookie).
    demo.output.text().should.not.match(/demo-webhook-secret/);
  });

  it('a second start reuses the data, keeps an edited flow, and SIGINT to the launcher alone stops both', async () => {
    // The user edits the flow in the editor (here: renames a node in the flows file).
    const flowsFile = path.join(demoDir, 'node-red', 'flows.json');
    const flows = JSON.parse(fs.readFileSync(flowsFile, 'utf8'));
    const debug = flows.find((n) => n.type === 'debug' && n.name === 'ingested');
    debug.name = 'ingested (renamed by the user)';
    const edited = JSON.stringify(flows, null, 4);
    fs.writeFileSync(flowsFile, edited);

    const demo = await startDemo();
    demo.output.text().should.match(/Keeping your edited flows/);
    demo.output.text().should.not.match(/Demo flow deployed/);
    fs.readFileSync(flowsFile, 'utf8').should.equal(edited);

    // What the first run stored is all still there: the asset, its mirror, the subscription...
    fs.existsSync(path.join(demoDir, 'mirror', 'inbox', 'photo one.bin')).should.be.true();
    (await emulatorGet('/review/api/events/assets/subscribe/dam-demo-mirror')).body.success.should.be.true();
    // ...and the flow still works: the credentials file was read back with the fixed secret.
    const second = crypto.randomBytes(20 * 1024);
    await dropAndExpectMirror('second.txt', second);

    // SIGINT to the launcher only (e.g. a process manager): it stops Node-RED itself.
    demo.child.kill('SIGINT');
    (await exitOf(demo.child, 20000)).should.equal(0);
    processAlive(demo.nodeRedPid).should.be.false();
    (await listening(ports.nodeRed)).should.be.false();
    (await listening(ports.emulator)).should.be.false();
  });
});
