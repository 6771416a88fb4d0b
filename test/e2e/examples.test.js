'use strict';
// Every example flow, end to end, installed the way a user installs the package:
// a fresh copy of the sources (as a clone has them: no dist/) -> `npm pack` (its prepack
// script builds) -> `npm install <tarball>` into a fresh Node-RED user dir, as the palette
// manager does -> a real Node-RED process (node-red/red.js) -> the emulator, started from the
// installed package with `npx dam-emulator` as the examples' comments say. Each example is read back through Node-RED's
// own Import > Examples API, deployed through the admin API and checked against what its
// comment node promises.
//
// The only change made to an example before deploying it is the one every comment asks the
// user to make: the cookie typed into the server configuration (plus, for the test's free ports
// and temp folder, the addresses 127.0.0.1:8873 / 127.0.0.1:1880 and the folder
// /tmp/dam-examples). Nothing else is prepared (issue 23 #6): no environment variable
// (Node-RED starts without DAM_COOKIE), no folder or file made beforehand, no restart; each
// example is deployed alone (a full deploy: the flows hold that example only), and what its
// comment promises is observed. Debug nodes are swapped for reporters that POST the msg to
// this test.
require('should');
const { execFile, spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { promisify } = require('util');
const { startNodeRed } = require('../../dist/demo/node-red');
const { freePort, waitFor, sleep, startCollector, lineCollector, exitOf } = require('./support');

const PROJECT_DIR = path.resolve(__dirname, '..', '..');
const MODULE = '@dam-assets/node-red';
const COOKIE = 'local-dev';
const EXAMPLE_DIR = '/tmp/dam-examples';
const NODE_TYPES = Object.keys(require('../../package.json')['node-red'].nodes);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = promisify(execFile);

/**
 * Packs the package as from a fresh clone: the files git knows (tracked, or new and not ignored)
 * copied with their current content, so no dist/; the installed node_modules are linked in
 * instead of a second `npm ci`. `npm pack` then has to build (prepack). Returns the tarball's path.
 */
async function packFromFreshCopy(work) {
  const source = path.join(work, 'source');
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: PROJECT_DIR, maxBuffer: 16 * 1024 * 1024 });
  for (const file of stdout.split('\0').filter(Boolean)) {
    if (!fs.existsSync(path.join(PROJECT_DIR, file))) continue; // deleted, not yet committed
    fs.mkdirSync(path.dirname(path.join(source, file)), { recursive: true });
    fs.copyFileSync(path.join(PROJECT_DIR, file), path.join(source, file));
  }
  fs.existsSync(path.join(source, 'dist')).should.be.false();
  fs.symlinkSync(path.join(PROJECT_DIR, 'node_modules'), path.join(source, 'node_modules'));
  const packed = await run(npm, ['pack', '--pack-destination', work, '--json'], { cwd: source, maxBuffer: 16 * 1024 * 1024 });
  // (the prepack script's output comes first on stdout)
  const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m)));
  const shipped = files.map((f) => f.path);
  shipped.should.containEql('dist/index.js');
  shipped.filter((f) => f.endsWith('.map')).should.eql([], 'no source maps: they would point at src/, which is not shipped');
  shipped.filter((f) => /^(src|test)\/|^dist\/demo\//.test(f)).should.eql([]);
  return path.join(work, filename);
}

/** `npx dam-emulator` in the user dir, as the examples' comments tell; resolves once it listens. */
async function startInstalledEmulator(userDir, dataDir) {
  const child = spawn('npx', ['--no', '--', 'dam-emulator', '--port', '0', '--data', dataDir, '--retry-delay', '1s', '--quiet'],
    { cwd: userDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output = lineCollector(child);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid, 'SIGTERM'); // npx and the emulator it started
    await exitOf(child, 20000).catch(() => { process.kill(-child.pid, 'SIGKILL'); });
  };
  try {
    const [, url] = await output.waitForLine(/^dam-emulator listening on (http:\/\/\S+)$/, 60000);
    return { url, close: stop };
  } catch (err) {
    await stop();
    throw err;
  }
}


describe('example flows, packed and installed into a real Node-RED', function () {
  this.timeout(30000);
  let work;
  let exampleDir;
  let userDir;
  let emulator;
  let nodeRed;
  let collector;
  const log = [];

  before(async function () {
    this.timeout(100000);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-examples-e2e-'));
    exampleDir = path.join(work, 'dam-examples');
    userDir = path.join(work, 'node-red');
    fs.mkdirSync(userDir, { recursive: true });

    // Pack and install as a user would (offline-safe: the dependencies are in npm's cache).
    const tarball = await packFromFreshCopy(work);
    // The palette manager's command (@node-red/registry installer), run in the user dir.
    await run(npm, ['install', '--prefix', userDir, '--no-audit', '--no-update-notifier', '--no-fund', '--save', '--save-prefix=~',
      '--omit=dev', '--engine-strict', '--prefer-offline', tarball], { cwd: userDir });
    fs.lstatSync(path.join(userDir, 'node_modules', MODULE)).isSymbolicLink().should.be.false();

    emulator = await startInstalledEmulator(userDir, path.join(work, 'emulator'));
    collector = await startCollector({ key: 'debug' });
    nodeRed = await startNodeRed({
      userDir, port: await freePort(), credentialSecret: 'examples-e2e', logLevel: 'info',
      onLine: (line) => log.push(line)
    });
    const { version } = await adminGet('/settings');
    console.log(`      (Node-RED ${version} on Node ${process.version}, package installed from ${path.basename(tarball)})`);
  });

  afterEach(function () {
    if (this.currentTest.state === 'failed') console.log(`Node-RED's last lines:\n${log.slice(-40).join('\n')}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nodeRed) await nodeRed.stop();
    if (emulator) await emulator.close();
    if (collector) await collector.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  // ------------------------------------------------------------------ helpers

  async function adminGet(url) {
    const res = await fetch(nodeRed.url + url);
    res.status.should.equal(200, `GET ${url}`);
    return res.json();
  }

  async function emulatorCall(method, url) {
    const res = await fetch(emulator.url + url, { method, headers: { Cookie: `JSESSIONID=${COOKIE}` } });
    const type = res.headers.get('content-type') || '';
    return { status: res.status, body: type.includes('json') ? await res.json() : Buffer.from(await res.arrayBuffer()) };
  }

  const downloadBytes = async (fuid) => (await emulatorCall('GET', `/review/api/asset/download?fuid=${fuid}&rrn=-1`)).body;

  /**
   * Reads an example through Import > Examples, makes the user's edits (see the top of
   * this file), swaps debug nodes for reporters, deploys it alone, and returns helpers.
   */
  async function deployExample(name, { cookie = COOKIE } = {}) {
    const original = await adminGet(`/library/examples/flows/${MODULE}/${name}`);
    const server = original.find((n) => n.type === 'asset-server');
    server.should.containEql({ baseUrl: 'http://127.0.0.1:8873', publicBaseUrl: 'http://127.0.0.1:1880' });
    original.some((n) => n.credentials !== undefined).should.be.false('an example must not carry credentials');
    original.filter((n) => n.type === 'comment').length.should.be.aboveOrEqual(1, 'each example explains itself');

    const text = JSON.stringify(original)
      .split('http://127.0.0.1:8873').join(emulator.url)
      .split('http://127.0.0.1:1880').join(nodeRed.url)
      .split(EXAMPLE_DIR).join(exampleDir);
    const tab = { id: crypto.randomBytes(8).toString('hex'), type: 'tab', label: name };
    const reporter = { id: crypto.randomBytes(8).toString('hex'), type: 'http request', z: tab.id, name: 'to the test',
      method: 'POST', ret: 'txt', paytoqs: 'ignore', url: collector.url, tls: '', persist: false, proxy: '',
      insecureHTTPParser: false, authType: '', senderr: false, headers: [], x: 0, y: 0, wires: [[]] };
    const nodes = JSON.parse(text).map((n) => {
      if (n.type === 'asset-server') return { ...n, credentials: { cookie } };
      const placed = { ...n, z: tab.id };
      if (n.type !== 'debug') return placed;
      return { id: n.id, type: 'function', z: tab.id, name: `report ${n.name}`, outputs: 1, timeout: 0, noerr: 0,
        initialize: '', finalize: '', libs: [], x: n.x, y: n.y, wires: [[reporter.id]],
        func: [
          'const out = {};',
          'for (const key of Object.keys(msg)) {',
          '    const value = msg[key];',
          '    out[key] = Buffer.isBuffer(value) ? { base64: value.toString("base64") } : value;',
          '}',
          `return { payload: { debug: ${JSON.stringify(n.name)}, msg: out }, headers: { "content-type": "application/json" } };`
        ].join('\n') };
    });
    const logFrom = log.length;
    await nodeRed.deploy([tab, reporter, ...nodes]);
    const byName = (type, nodeName) => {
      const node = original.find((n) => n.type === type && n.name === nodeName);
      if (!node) throw new Error(`${name} has no ${type} node named "${nodeName}"`);
      return node;
    };
    return {
      original,
      byName,
      since: collector.reports.length,
      /** Clicks an inject node's button (the editor calls the same admin endpoint). */
      async inject(injectName) {
        const res = await fetch(`${nodeRed.url}/inject/${byName('inject', injectName).id}`, { method: 'POST' });
        res.status.should.equal(200);
      },
      next(debugName, test, timeoutMs) {
        byName('debug', debugName);
        return collector.next(debugName, this.since, timeoutMs, test);
      },
      /** Node-RED logged no error while this example ran. */
      noErrorsLogged(allowed) {
        const errors = log.slice(logFrom).filter((l) => /\[error\]/.test(l) && !(allowed && allowed.test(l)));
        errors.should.eql([], errors.join('\n'));
      },
      /** Nor a warning (issue 23 #6: example 08 warned on every deploy). */
      noWarningsLogged() {
        const warnings = log.slice(logFrom).filter((l) => /\[warn\]/.test(l));
        warnings.should.eql([], warnings.join('\n'));
      }
    };
  }

  // ------------------------------------------------------------------ tests

  it('the package installed from its tarball loads every node type of package.json', async () => {
    const res = await fetch(`${nodeRed.url}/nodes`, { headers: { Accept: 'application/json' } });
    res.status.should.equal(200);
    const sets = (await res.json()).filter((set) => set.module === MODULE);
    sets.map((set) => set.err).filter(Boolean).should.eql([]);
    // enabled, and installed in the user dir (local), not taken from this source tree
    sets.every((set) => set.enabled && set.local).should.be.true(JSON.stringify(sets));
    sets.flatMap((set) => set.types).sort().should.eql([...NODE_TYPES].sort());
    // each type's editor is served too
    const editor = await (await fetch(`${nodeRed.url}/nodes`, { headers: { Accept: 'text/html' } })).text();
    for (const type of NODE_TYPES) editor.should.containEql(`RED.nodes.registerType('${type}'`);
  });

  it('Import > Examples lists every file of examples/ under the package', async () => {
    const listed = (await adminGet(`/library/examples/flows/${MODULE}`)).map((e) => e.fn).sort();
    const files = fs.readdirSync(path.join(PROJECT_DIR, 'examples')).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, '')).sort();
    listed.should.eql(files);
    files.length.should.be.aboveOrEqual(7);
    // At least one example per node of the package.
    const types = new Set();
    for (const name of files) for (const n of await adminGet(`/library/examples/flows/${MODULE}/${name}`)) types.add(n.type);
    for (const type of ['asset-server', 'asset-subscribe', 'asset-event-in', 'asset-event-ack', 'asset-upload', 'asset-download', 'asset-export', 'catch']) {
      types.has(type).should.be.true(`no example uses ${type}`);
    }
  });

  it('01 subscribe/get/delete: registers, reads back and deletes the subscription', async () => {
    const ex = await deployExample('01-subscribe-get-delete');
    await ex.inject('register');
    const registered = await ex.next('subscription result', (m) => m.action === 'register');
    registered.payload.should.containEql({ id: 'example-subscription', success: true });
    const stored = (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-subscription')).body;
    stored.success.should.be.true();
    stored.subscription.should.containEql({ callback: `${nodeRed.url}/dam/example-callback`, method: 'POST' });
    stored.subscription.watchPath.should.eql(['* /examples']);
    stored.subscription.header.should.eql(['Content-Type: application/json']);

    await ex.inject('get');
    const got = await ex.next('subscription result', (m) => m.action === 'get');
    got.payload.subscription.callback.should.equal(`${nodeRed.url}/dam/example-callback`);

    await ex.inject('delete');
    (await ex.next('subscription result', (m) => m.action === 'delete')).payload.success.should.be.true();
    (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-subscription')).body.success.should.be.false();

    // The cookie typed into the config node is only in the encrypted credentials file.
    // (The comment nodes mention it, as the text the user types; no other node holds it.)
    const saved = JSON.parse(fs.readFileSync(path.join(userDir, 'flows.json'), 'utf8')).filter((n) => n.type !== 'comment');
    JSON.stringify(saved).should.not.containEql(COOKIE);
    fs.readFileSync(path.join(userDir, 'flows_cred.json'), 'utf8').should.not.containEql(COOKIE);
    ex.noErrorsLogged();
  });

  it('02 upload: uploads text from msg.payload and a file from disk into /examples', async () => {
    fs.existsSync(path.join(exampleDir, 'to-upload.txt')).should.be.false('nothing prepared');
    const ex = await deployExample('02-upload-a-file');

    await ex.inject('upload text');
    const text = await ex.next('upload result');
    text.payload.success.should.be.true();
    text.fuid.should.be.a.Number();
    (await downloadBytes(text.fuid)).toString().should.equal('Hello from Node-RED');
    JSON.stringify((await emulatorCall('GET', `/emulator/assets/${text.fuid}`)).body).should.match(/\/examples\/hello\.txt/);

    // As imported: the sample file is written on first use, then streamed from disk.
    await ex.inject('upload a file from disk');
    const disk = await ex.next('upload result', (m) => m.fuid !== text.fuid);
    const sample = fs.readFileSync(path.join(exampleDir, 'to-upload.txt'));
    (await downloadBytes(disk.fuid)).equals(sample).should.be.true();
    JSON.stringify((await emulatorCall('GET', `/emulator/assets/${disk.fuid}`)).body).should.match(/\/examples\/to-upload\.txt/);

    // A file of the user's at that path is sent as it is, never overwritten.
    const fromDisk = crypto.randomBytes(100 * 1024);
    fs.writeFileSync(path.join(exampleDir, 'to-upload.txt'), fromDisk);
    await ex.inject('upload a file from disk');
    const mine = await ex.next('upload result', (m) => m.fuid === disk.fuid && m.rrn !== disk.rrn);
    (await downloadBytes(mine.fuid)).equals(fromDisk).should.be.true();
    fs.readFileSync(path.join(exampleDir, 'to-upload.txt')).equals(fromDisk).should.be.true();
    ex.noErrorsLogged();
    ex.noWarningsLogged();
  });

  it('03 hot folder: uploads a dropped file once it is complete, moves it to .done/, skips temporary files', async () => {
    const hot = path.join(exampleDir, 'hot-folder');
    fs.existsSync(hot).should.be.false('nothing prepared');
    const ex = await deployExample('03-hot-folder-ingest');
    await waitFor('the hot folder node to make its folder (Create it when it is missing)', () => fs.existsSync(hot), 10000);

    fs.writeFileSync(path.join(hot, 'still-copying.part'), 'partial');
    const bytes = crypto.randomBytes(256 * 1024);
    const handle = fs.openSync(path.join(hot, 'scan 001.tif'), 'w');
    for (let i = 0; i < bytes.length; i += 32 * 1024) {
      fs.writeSync(handle, bytes.subarray(i, i + 32 * 1024));
      await sleep(20); // a slow copy
    }
    fs.closeSync(handle);

    const ingested = await ex.next('ingested', undefined, 60000);
    ingested.relativePath.should.equal('scan 001.tif');
    ingested.size.should.equal(bytes.length);
    (await downloadBytes(ingested.fuid)).equals(bytes).should.be.true();
    ingested.filename.should.equal(path.join(hot, '.done', 'scan 001.tif'));
    fs.existsSync(path.join(hot, 'scan 001.tif')).should.be.false();
    fs.readFileSync(path.join(hot, '.done', 'scan 001.tif')).equals(bytes).should.be.true();

    // A rescan finds nothing new: the file was uploaded once, the temporary file is left alone.
    await ex.inject('rescan');
    await sleep(1000);
    collector.reports.slice(ex.since).filter((r) => r.debug === 'ingested').length.should.equal(1, 'uploaded once');
    fs.existsSync(path.join(hot, 'still-copying.part')).should.be.true();
    // The node makes its folder: no "does not exist" at the first deploy (a new-user audit found one).
    ex.noErrorsLogged();
    ex.noWarningsLogged();
  });

  it('04 react to changes: owns its subscription, reports added and deleted, deletes it with the node', async () => {
    const ex = await deployExample('04-react-to-changes');
    await waitFor('the owned subscription', async () =>
      (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-changes')).body.success === true, 10000);
    const stored = (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-changes')).body.subscription;
    stored.callback.should.equal(`${nodeRed.url}/dam/example-changes`);
    stored.watchPath.should.eql(['* /examples']);

    await ex.inject('upload a test file');
    const added = await ex.next('added or modified', (m) => m.payload.path === '/examples/change-me.txt');
    added.topic.should.equal('added');
    added.payload.action.should.equal('added');
    (await downloadBytes(added.payload.assetId)).toString().should.equal('A change the server reports back');

    (await emulatorCall('DELETE', `/emulator/assets/${added.payload.assetId}`)).status.should.equal(200);
    const deleted = await ex.next('deleted');
    deleted.payload.should.containEql({ assetId: added.payload.assetId, action: 'deleted' });

    // "when you delete the node and deploy, the subscription is deleted too"
    await nodeRed.deploy([{ id: 'e2e0000000000004', type: 'tab', label: 'empty' }]);
    await waitFor('the subscription to be deleted', async () =>
      (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-changes')).body.success === false, 10000);
    ex.noErrorsLogged();
  });

  it('05 download latest revision: two uploads make two revisions; the file on disk holds the second', async () => {
    const ex = await deployExample('05-download-latest-revision');
    await ex.inject('upload revision 1');
    const first = await ex.next('uploaded');
    await ex.inject('upload revision 2');
    const second = await ex.next('uploaded', (m) => m.rrn !== first.rrn);
    second.fuid.should.equal(first.fuid); // same asset, new revision

    await ex.inject('download latest');
    const downloaded = await ex.next('downloaded');
    const target = path.join(exampleDir, 'downloads', 'revisions.txt');
    downloaded.filename.should.equal(target);
    fs.readFileSync(target, 'utf8').should.equal('revision 2');
    ex.noErrorsLogged();
  });

  it('06 export metadata: uploads, exports the metadata as JSON and saves it as <asset id>.json', async () => {
    const ex = await deployExample('06-export-metadata');
    await ex.inject('upload and export');
    const exported = await ex.next('metadata');
    JSON.stringify(exported.payload).should.match(/with-metadata\.txt/);
    // Real metadata, not {} (issue 23 #11).
    exported.payload.metadata.should.eql({ Title: 'Quarterly report', City: 'SFO', Status: 'approved' });
    const saved = path.join(exampleDir, 'metadata', `${exported.fuid}.json`);
    const onDisk = await waitFor('the saved metadata', () => JSON.parse(fs.readFileSync(saved, 'utf8')), 5000);
    onDisk.should.eql(exported.payload);
    ex.noErrorsLogged();
  });

  it('07 handle errors: the Catch node gets each failure, routed by msg.assetError.kind, with no cookie in it', async () => {
    const ex = await deployExample('07-handle-errors');
    await ex.inject('unknown asset');
    const unknown = await ex.next('refused by the server', (m) => m.fuid === 999999999);
    unknown.assetError.kind.should.equal('rejected');
    unknown.error.source.name.should.equal('download');
    unknown.error.message.should.be.a.String().and.not.be.empty();

    await ex.inject('invalid asset id');
    const invalid = await ex.next('invalid input: fix the msg', (m) => m.fuid === 'abc');
    invalid.assetError.kind.should.equal('invalid-input');
    invalid.error.message.should.match(/Asset fuid \(msg\.fuid\)/);
    collector.reports.slice(ex.since).filter((r) => r.debug === 'refused by the server').length.should.equal(1, 'invalid-input is not "refused by the server" (issue 23 #9)');

    collector.reports.slice(ex.since).filter((r) => r.debug === 'downloaded').should.be.empty();
    JSON.stringify(collector.reports.slice(ex.since)).should.not.containEql(COOKIE);
    ex.noErrorsLogged();
  });

  it('08 renew the session: as imported (no DAM_COOKIE, no cookie typed), no warning on deploy; the session set at start replaces an expired configured one', async () => {
    // Nothing typed into the server configuration: the flow's cookie is the only one (a new-user
    // audit found the blank cookie refused at deploy, so the session node could not set one).
    const imported = await deployExample('08-renew-the-session', { cookie: '' });
    (await imported.next('session set')).should.not.have.property('payload');
    await imported.inject('export the root folder');
    (await imported.next('metadata')).payload.path.should.equal('/');
    imported.noErrorsLogged();
    imported.noWarningsLogged();

    // "To see it renew": a cookie the emulator does not know (expired) typed into the configuration.
    const ex = await deployExample('08-renew-the-session', { cookie: 'expired-session-0000' });
    const set = await ex.next('session set');
    set.should.not.have.property('payload');
    await ex.inject('export the root folder');
    (await ex.next('metadata')).payload.path.should.equal('/');
    collector.reports.slice(ex.since).filter((r) => r.debug === 'failed').should.be.empty();
    JSON.stringify(collector.reports.slice(ex.since)).should.not.containEql(COOKIE);
    ex.noErrorsLogged();
    ex.noWarningsLogged();
  });

  it('09 never miss a change: at least once, the change mirrored to disk and acknowledged (the inbox ends empty)', async () => {
    const ex = await deployExample('09-never-miss-a-change');
    await waitFor('the owned subscription', async () =>
      (await emulatorCall('GET', '/review/api/events/assets/subscribe/example-inbox')).body.success === true, 10000);
    await ex.inject('upload a test file');
    const mirrored = await ex.next('mirrored');
    mirrored.redelivered.should.equal(0);
    mirrored._inbox.should.have.properties(['node', 'id', 'delivery']);
    const target = path.join(exampleDir, 'mirror', `${mirrored.payload.assetId || mirrored.fuid}.txt`);
    mirrored.filename.should.equal(target);
    fs.readFileSync(target, 'utf8').should.equal('A change that must reach the mirror');
    const eventIn = ex.byName('asset-event-in', 'changes in /examples-inbox');
    await waitFor('the inbox empty', async () => {
      const res = await fetch(`${nodeRed.url}/dam-assets/event-in/${eventIn.id}/parked`);
      const view = await res.json();
      return view.counts && view.counts.stored === 0;
    }, 10000);
    collector.reports.slice(ex.since).filter((r) => r.debug === 'parked').should.be.empty();
    ex.noErrorsLogged();
  });
});
