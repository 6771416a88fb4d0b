'use strict';
// asset-hot-folder in a real Node-RED (test helper), the real file system and the emulator:
// a slow writer is never uploaded early, atomic drops, empty files, names with spaces and
// non-ASCII, a 1 GiB file, 1,000 small files, the folder removed and created again, the failed
// output, commands and settings. Bytes are compared with what the server stores.
require('should');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const s = require('./nodes-support');
const { helper } = s;

const root = path.join(__dirname, '..', '..');
const hotFolderNode = require(path.join(root, 'nodes', 'asset-hot-folder.js'));

async function waitFor(check, what, ms = 120000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`still waiting for ${what}`);
    await s.delay(25);
  }
}

/** A flow: hot folder n1 -> helper `out` (ingested) and helper `failedOut` (failed). */
function hotFlow(props, serverProps) {
  return [
    { id: 'f1', type: 'tab', label: 'test' },
    { id: 'server', type: 'asset-server', name: 'dam', timeout: 60, ...serverProps },
    { id: 'n1', type: 'asset-hot-folder', z: 'f1', server: 'server', wires: [['out'], ['failedOut']], ...props },
    { id: 'out', type: 'helper', z: 'f1', wires: [] },
    { id: 'failedOut', type: 'helper', z: 'f1', wires: [] },
    { id: 'catch1', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1', wires: [] }
  ];
}

function load(flowNodes, creds = s.credentials()) {
  return helper.load([...Object.values(s.nodes), s.tlsNode, hotFolderNode], flowNodes, creds);
}

/** Collects every message of the helper nodes `out`, `failedOut`, `caught`. */
function collect() {
  const got = { out: [], failedOut: [], caught: [] };
  for (const id of Object.keys(got)) helper.getNode(id).on('input', m => got[id].push(m));
  return got;
}

describe('asset-hot-folder node (real Node-RED, real file system, emulator)', function () {
  this.timeout(120000);
  let emulator;
  let tmp;
  let n = 0;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    tmp = s.tempDir('dam-hot-node-');
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
    tmp.cleanup();
  });
  afterEach(() => helper.unload());

  function newFolder() {
    const folder = path.join(tmp.dir, `in-${++n}`);
    fs.mkdirSync(folder);
    return { folder, dest: `/hot-node-${n}` };
  }
  const fast = { untouchedSeconds: 0.2, rescanSeconds: 0.5, retries: 2 };
  const upload = dest => ({ destination: dest, destinationType: 'str', wait: 'true', waitType: 'bool' });

  async function serverAsset(serverPath) {
    const found = await s.emulatorGet(`${emulator.url}/emulator/assets?path=${encodeURIComponent(serverPath)}`);
    return found.status === 200 && found.body.success ? found.body.asset : undefined;
  }
  async function serverBytes(fuid) {
    const res = await fetch(`${emulator.url}/review/api/asset/download?fuid=${fuid}`, { headers: { Cookie: s.COOKIE } });
    res.status.should.equal(200);
    return Buffer.from(await res.arrayBuffer());
  }

  it('a file written slowly over 10 s is not uploaded before it is complete (default untouched interval, 5 s)', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest) }, { baseUrl: emulator.url }));
    const got = collect();
    const file = path.join(folder, 'slow scan.tif');
    const expected = [];
    const fd = fs.openSync(file, 'w');
    const started = Date.now();
    // 41 pieces, one every 250 ms: about 10 s of writing, never a pause near the 5 s rule.
    for (let i = 0; i <= 40; i++) {
      const piece = crypto.randomBytes(4096 + i);
      fs.writeSync(fd, piece);
      expected.push(piece);
      got.out.length.should.equal(0, `uploaded while still being written (after ${Date.now() - started} ms)`);
      await s.delay(250);
    }
    fs.closeSync(fd);
    const finished = Date.now();
    (finished - started).should.be.aboveOrEqual(10000);
    await waitFor(() => got.out.length === 1, 'the ingested message');
    const msg = got.out[0];
    const all = Buffer.concat(expected);
    msg.size.should.equal(all.length);
    (await serverBytes(msg.fuid)).equals(all).should.be.true();
    msg.filename.should.equal(path.join(folder, '.done', 'slow scan.tif'));
    fs.readFileSync(msg.filename).equals(all).should.be.true();
    msg.relativePath.should.equal('slow scan.tif');
    msg.fuids.should.eql([msg.fuid]);
    msg.should.have.property('rrn');
    msg.durationMs.should.be.a.Number();
    msg.payload.success.should.be.true();
  });

  it('an atomic drop (rename into the folder), empty files and names with spaces and non-ASCII', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest), ...fast }, { baseUrl: emulator.url }));
    const got = collect();
    const statuses = s.recordStatus();
    const staging = path.join(tmp.dir, `staging-${n}`);
    fs.mkdirSync(staging);
    const name = 'Über die Brücke – 東京 report 2026.txt';
    fs.writeFileSync(path.join(staging, name), 'renamed in whole');
    fs.renameSync(path.join(staging, name), path.join(folder, name));
    fs.writeFileSync(path.join(folder, 'empty.txt'), '');
    await waitFor(() => got.out.length === 1, 'the dropped file');
    got.out[0].relativePath.should.equal(name);
    (await serverBytes(got.out[0].fuid)).toString().should.equal('renamed in whole');
    (await serverAsset(`${dest}/${name}`)).fuid.should.equal(got.out[0].fuid);
    await waitFor(() => statuses.some(x => x.text === '0 waiting, 0 uploading, 1 done, 0 failed'), 'the counts');
    // The empty file stays, is never uploaded, and is not counted as waiting.
    fs.existsSync(path.join(folder, 'empty.txt')).should.be.true();
    (await serverAsset(`${dest}/empty.txt`) === undefined).should.be.true();
    fs.writeFileSync(path.join(folder, 'empty.txt'), 'now with content');
    await waitFor(() => got.out.length === 2, 'the filled file');
    (await serverBytes(got.out[1].fuid)).toString().should.equal('now with content');
  });

  it('1,000 small files: every one on the server byte for byte and in done, none left', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest), ...fast, maxParallel: 4 }, { baseUrl: emulator.url }));
    const got = collect();
    const contents = new Map();
    for (let i = 0; i < 1000; i++) {
      const name = `small-${String(i).padStart(4, '0')}.bin`;
      const data = crypto.randomBytes(100 + (i % 900));
      contents.set(name, data);
      fs.writeFileSync(path.join(folder, name), data);
    }
    await waitFor(() => got.out.length + got.failedOut.length >= 1000, '1,000 messages');
    got.failedOut.should.have.length(0);
    fs.readdirSync(folder).filter(x => !x.startsWith('.')).should.eql([]);
    fs.readdirSync(path.join(folder, '.done')).length.should.equal(1000);
    const seen = new Set();
    for (const msg of got.out) {
      seen.add(msg.relativePath);
      (await serverBytes(msg.fuid)).equals(contents.get(msg.relativePath)).should.be.true(msg.relativePath);
      fs.readFileSync(msg.filename).equals(contents.get(msg.relativePath)).should.be.true();
    }
    seen.size.should.equal(1000);
  });

  it('the folder removed and created again: red status naming it, then files are taken again', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest), ...fast }, { baseUrl: emulator.url }));
    const got = collect();
    const statuses = s.recordStatus();
    fs.writeFileSync(path.join(folder, 'first.txt'), 'first');
    await waitFor(() => got.out.length === 1, 'the first file');
    fs.rmSync(folder, { recursive: true });
    await waitFor(() => statuses.some(x => x.fill === 'red' && x.text === 'folder: does not exist'), 'the red status');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'second.txt'), 'second');
    await waitFor(() => got.out.length === 2, 'the second file');
    (await serverBytes(got.out[1].fuid)).toString().should.equal('second');
    statuses[statuses.length - 1].fill.should.not.equal('red');
  });

  it('a permanent failure leaves on output 2 with msg.assetError; the file and its .error.json are in .failed', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest), ...fast }, { baseUrl: emulator.url }), s.credentials(`JSESSIONID=${s.VIEWER}`));
    const got = collect();
    fs.writeFileSync(path.join(folder, 'denied.pdf'), 'no permission');
    await waitFor(() => got.failedOut.length === 1, 'the failed message');
    const msg = got.failedOut[0];
    msg.assetError.kind.should.equal('permission');
    msg.filename.should.equal(path.join(folder, '.failed', 'denied.pdf'));
    msg.errorFile.should.equal(`${msg.filename}.error.json`);
    JSON.parse(fs.readFileSync(msg.errorFile, 'utf8')).kind.should.equal('permission');
    s.serialise(msg).should.not.containEql(s.VIEWER);
    fs.readFileSync(msg.errorFile, 'utf8').should.not.containEql(s.VIEWER);
    got.out.should.have.length(0);

    // The DAM sidebar's overview (the plugin's route, its handler called as express would) lists
    // the hot folder with its counters and the failed file, and no cookie.
    const registerSidebar = require(path.join(root, 'dist', 'plugin', 'dam-sidebar')).default;
    const routes = {};
    registerSidebar({
      plugins: { registerPlugin() {} },
      nodes: { getNode: id => helper.getNode(id), eachNode: cb => [{ id: 'n1', type: 'asset-hot-folder', folder, name: '' }].forEach(cb), getCredentials: () => undefined },
      auth: { needsPermission: () => (_req, _res, next) => next() },
      comms: { publish() {} },
      httpAdmin: { get: (p, _guard, handler) => { routes[`GET ${p}`] = handler; }, post() {}, delete() {} },
      settings: {},
      log: { warn() {} }
    });
    let overview;
    await waitFor(() => {
      routes['GET /dam-assets/overview']({}, { json: body => { overview = body; } });
      return overview.hotFolders[0].counts.failed === 1;
    }, 'the sidebar counters');
    const entry = overview.hotFolders[0];
    entry.should.containDeep({ id: 'n1', running: true, folder, counts: { failed: 1, done: 0 } });
    entry.failedFiles[0].should.containDeep({ file: 'denied.pdf', kind: 'permission', movedTo: msg.filename });
    JSON.stringify(overview).should.not.containEql(s.VIEWER);
  });

  it('the server away: yellow "server unavailable", one warning, the DAM tab told; the file goes once the server is back', async function () {
    const { folder, dest } = newFolder();
    const away = await s.startTestEmulator();
    const port = Number(new URL(away.url).port);
    await away.close(); // connection refused until an emulator listens there again
    let back;
    try {
      await load(hotFlow({ folder, ...upload(dest), ...fast, retries: 1 }, { baseUrl: away.url }));
      const got = collect();
      const statuses = s.recordStatus();
      const warnings = [];
      const logs = [];
      helper.getNode('n1').on('call:warn', call => warnings.push(String(call.args[0])));
      helper.getNode('n1').on('call:log', call => logs.push(String(call.args[0])));
      fs.writeFileSync(path.join(folder, 'scan.pdf'), 'waits out the outage');
      await waitFor(() => statuses.some(x => x.text === 'server unavailable: 1 waiting, 0 uploading, 0 done, 0 failed'), 'the unavailable status');
      statuses.find(x => /^server unavailable/.test(x.text)).should.containEql({ fill: 'yellow', shape: 'ring' });
      warnings.filter(w => /^server unavailable \(network: connection refused\): uploads are held/.test(w)).should.have.length(1);
      got.failedOut.should.have.length(0);
      const { hotFolderStats } = require(path.join(root, 'dist', 'nodes', 'asset-hot-folder', 'stats'));
      await waitFor(() => hotFolderStats.get('n1').serverUnavailable !== undefined, 'the DAM tab told');
      hotFolderStats.get('n1').serverUnavailable.should.equal('network: connection refused');

      back = await s.startTestEmulator({ port });
      await waitFor(() => got.out.length === 1, 'the file after the outage');
      const res = await fetch(`${back.url}/review/api/asset/download?fuid=${got.out[0].fuid}`, { headers: { Cookie: s.COOKIE } });
      (await res.text()).should.equal('waits out the outage');
      got.failedOut.should.have.length(0);
      await waitFor(() => /^0 waiting, 0 uploading, 1 done, 0 failed$/.test(statuses[statuses.length - 1].text), 'the counts again');
      statuses[statuses.length - 1].fill.should.equal('green');
      logs.should.containEql('server available again');
      hotFolderStats.get('n1').should.not.have.property('serverUnavailable');
      warnings.filter(w => /^server unavailable/.test(w)).should.have.length(1);
    } finally {
      if (back) await back.close();
    }
  });

  it('no cookie configured: a file waits (one warning) until a flow sets the cookie, then is uploaded; never failed for it', async function () {
    // A review of the blank-cookie change: a file found before the flow's asset-session set the cookie went to failed/.
    const { folder, dest } = newFolder();
    fs.writeFileSync(path.join(folder, 'early.txt'), 'before the cookie');
    const flowNodes = hotFlow({ folder, ...upload(dest), ...fast }, { baseUrl: emulator.url })
      .map((node) => (node.id === 'server' ? { ...node, id: 'server-no-cookie' } : node.server === 'server' ? { ...node, server: 'server-no-cookie' } : node));
    await load(flowNodes, { 'server-no-cookie': { cookie: '' } });
    const got = collect();
    const hot = helper.getNode('n1');
    await waitFor(() => hot.warn.args.some((a) => /no session cookie yet/.test(String(a[0]))), 'the warning');
    got.out.should.have.length(0);
    got.failedOut.should.have.length(0);
    fs.existsSync(path.join(folder, 'early.txt')).should.be.true();
    helper.getNode('server-no-cookie').setCookie(s.COOKIE);
    await waitFor(() => got.out.length === 1, 'the upload once the cookie is set');
    got.out[0].relativePath.should.equal('early.txt');
    got.failedOut.should.have.length(0);
    hot.warn.args.filter((a) => /no session cookie yet/.test(String(a[0]))).should.have.length(1);
  });

  it('pause, resume and rescan from msg.payload; anything else is an error naming msg.payload', async function () {
    const { folder, dest } = newFolder();
    await load(hotFlow({ folder, ...upload(dest), ...fast, rescanSeconds: 3600, mode: 'polling' }, { baseUrl: emulator.url }));
    const got = collect();
    const statuses = s.recordStatus();
    const hot = helper.getNode('n1');
    hot.receive({ payload: 'pause' });
    await waitFor(() => statuses.some(x => /^paused/.test(x.text)), 'paused');
    fs.writeFileSync(path.join(folder, 'held.txt'), 'held');
    hot.receive({ payload: 'rescan' });
    // Seen (waiting) but not uploaded while paused.
    await waitFor(() => statuses.some(x => x.text === 'paused: 1 waiting, 0 done, 0 failed'), 'one waiting while paused');
    got.out.should.have.length(0);
    hot.receive({ payload: 'resume' });
    await waitFor(() => got.out.length === 1, 'the file after resume');
    hot.receive({ payload: 'go' });
    await waitFor(() => got.caught.length === 1, 'the error');
    got.caught[0].error.message.should.match(/^msg\.payload: must be one of pause, resume, rescan/); // no "AssetApiError: " before it (new-user audit)
    got.caught[0].assetError.should.containEql({ kind: 'invalid-input', field: 'msg.payload' });
  });

  it('a file that cannot be moved to done: a warning, yellow status `1 not moved`, the file left in place', async function () {
    const { folder, dest } = newFolder();
    const blocker = path.join(tmp.dir, `blocker-${n}`);
    fs.writeFileSync(blocker, 'a regular file: no done folder below it');
    await load(hotFlow({ folder, ...upload(dest), ...fast, mode: 'polling', doneFolder: path.join(blocker, 'done') }, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const warnings = [];
    helper.getNode('n1').on('call:warn', call => warnings.push(String(call.args[0])));
    fs.writeFileSync(path.join(folder, 'kept.txt'), 'uploaded, not moved');
    await waitFor(() => statuses.some(x => x.text === '0 waiting, 0 uploading, 0 done, 0 failed, 1 not moved'), 'the not-moved count', 20000);
    statuses.find(x => /not moved/.test(x.text)).fill.should.equal('yellow');
    warnings.filter(w => /kept\.txt: uploaded, but could not be moved to the done folder/.test(w)).should.have.length(1);
    (await serverAsset(`${dest}/kept.txt`)).should.be.ok();
    fs.readFileSync(path.join(folder, 'kept.txt'), 'utf8').should.equal('uploaded, not moved');
  });

  it('a file is another version after its upload when its size or time changed, or both its inode and change time did (not an inode alone: unstable on some shares)', function () {
    const { sameVersion } = require('../../dist/nodes/asset-hot-folder/tracked');
    const sent = { size: 10, mtimeMs: 1000.5, ino: 42, ctimeMs: 2000.25 };
    sameVersion({ ...sent }, sent).should.be.true();
    sameVersion({ ...sent, ino: 43 }, sent).should.be.true('a share that numbers inodes anew');
    sameVersion({ ...sent, ctimeMs: 3000 }, sent).should.be.true('a chmod');
    sameVersion({ ...sent, ino: 43, ctimeMs: 3000 }, sent).should.be.false('renamed over');
    sameVersion({ ...sent, size: 11 }, sent).should.be.false();
    sameVersion({ ...sent, mtimeMs: 1000.6 }, sent).should.be.false();
  });

  it('two hot folders on one folder: a warning naming the other node (each file would go twice)', async function () {
    const { folder, dest } = newFolder();
    const flow = hotFlow({ folder, ...upload(dest), ...fast }, { baseUrl: emulator.url });
    flow.push({ id: 'n2', type: 'asset-hot-folder', z: 'f1', name: 'second', server: 'server', folder: folder + '/', ...upload(dest), ...fast, wires: [[], []] });
    await load(flow);
    helper.getNode('n1').warn.args.map(a => String(a[0])).should.containEql(
      `folder ${folder} is also watched by asset-hot-folder "second" (n2): each file would be uploaded by both, and one of them finds it gone when it moves it`);
  });

  it('Include and Exclude: comma or line separated; a comma inside braces stays in its pattern (*.{jpg,png})', function () {
    const { patternList, FileFilter } = require('../../dist/nodes/asset-hot-folder/patterns');
    patternList('*.{jpg,png}, scans/**/*.{tif,tiff}\n*.pdf,,').should.eql(['*.{jpg,png}', 'scans/**/*.{tif,tiff}', '*.pdf']);
    patternList('*.{jpg\n*.png').should.eql(['*.{jpg', '*.png']); // an unclosed brace ends with its line
    const filter = new FileFilter(patternList('*.{jpg,png}'), patternList('draft-*.{jpg,png}'));
    filter.takes('photo.jpg').should.be.true();
    filter.takes('sub/pic.png').should.be.true();
    filter.takes('notes.txt').should.be.false();
    filter.takes('draft-1.png').should.be.false();
  });

  it('bad settings: an error naming the setting, red status, nothing watched', async function () {
    const { folder } = newFolder();
    fs.writeFileSync(path.join(folder, 'untouched.txt'), 'must stay');
    for (const [props, pattern] of [
      [{ folder, doneFolder: folder }, /doneFolder \(Done folder\): must not be the watched folder/],
      [{ folder, failedFolder: path.dirname(folder) }, /failedFolder \(Failed folder\): must not be the watched folder .* or a folder above it/],
      [{ folder: '' }, /folder \(Folder\): is required/],
      [{ folder, untouchedSeconds: '0' }, /untouchedSeconds \(Untouched\): must be a number of seconds/],
      [{ folder, retries: '11' }, /retries: Retries must be a whole number from 0 to 10/],
      // Before: accepted, and every file dropped in went to the failed folder.
      [{ folder, destination: '', destinationFuid: '' }, /destination \(Destination\) or destinationFuid \(Folder fuid\): one is required/],
      // Before: every file dropped in went to the failed folder, with no red status and no log line.
      [{ folder, server: '' }, /server: select an asset-server configuration node/]
    ]) {
      await load(hotFlow({ destination: '/x', destinationType: 'str', ...props }, { baseUrl: emulator.url }));
      const hot = helper.getNode('n1');
      // The error is logged and shown at start; each input is answered with it too.
      const got = collect();
      hot.receive({ payload: 'rescan' });
      await waitFor(() => got.caught.length === 1, 'the error');
      got.caught[0].error.message.should.match(pattern);
      await helper.unload();
    }
    fs.existsSync(path.join(folder, 'untouched.txt')).should.be.true();
  });
});

describe('asset-hot-folder with a 1 GiB file', function () {
  this.timeout(600000);
  let emulator;
  let tmp;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    tmp = s.tempDir('dam-hot-big-');
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
    tmp.cleanup();
  });
  afterEach(() => helper.unload());

  it('streams a 1 GiB file from disk; the server stores every byte (sha256)', async function () {
    const folder = path.join(tmp.dir, 'in');
    fs.mkdirSync(folder);
    // Sparse (fast to make), with marks at the start, the middle and the end so order matters.
    const staging = path.join(tmp.dir, 'big.bin');
    const size = 1024 * 1024 * 1024;
    const fd = fs.openSync(staging, 'w');
    fs.ftruncateSync(fd, size);
    for (const at of [0, size / 2 + 12345, size - 64]) fs.writeSync(fd, crypto.randomBytes(64), 0, 64, at);
    fs.closeSync(fd);
    const hash = crypto.createHash('sha256');
    for await (const chunk of fs.createReadStream(staging, { highWaterMark: 1024 * 1024 })) hash.update(chunk);
    const expected = hash.digest('hex');
    fs.renameSync(staging, path.join(folder, 'big.bin'));

    await load(hotFlow({ folder, destination: '/big', destinationType: 'str', wait: 'true', waitType: 'bool', untouchedSeconds: 0.5, rescanSeconds: 1 },
      { baseUrl: emulator.url, timeout: 300 }));
    const got = collect();
    await waitFor(() => got.out.length + got.failedOut.length === 1, 'the big file', 580000);
    got.failedOut.should.have.length(0, got.failedOut[0] && got.failedOut[0].assetError.message);
    got.out[0].size.should.equal(size);
    const res = await fetch(`${emulator.url}/review/api/asset/download?fuid=${got.out[0].fuid}`, { headers: { Cookie: s.COOKIE } });
    const serverHash = crypto.createHash('sha256');
    for await (const chunk of res.body) serverHash.update(chunk);
    serverHash.digest('hex').should.equal(expected);
  });
});
