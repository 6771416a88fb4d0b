'use strict';
// The demo flow's own logic, without processes: when `npm start` (re)deploys the flow,
// and what the flow's function nodes do with awkward input.
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { demoFlow, decideFlow, writeMarker, sha256, MARKER_FILE } = require('../../dist/demo/demo-flow');

const options = (overrides = {}) => ({
  inboxDir: '/data/demo/inbox', mirrorDir: '/data/demo/mirror', serverUrl: 'http://127.0.0.1:8873',
  publicBaseUrl: 'http://127.0.0.1:1880', cookie: 'local-dev', ...overrides
});

/** Runs a function node's body the way Node-RED does (an async function of msg), with the given globals. */
function runFunctionNode(node, msg, globals) {
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const names = Object.keys(globals);
  return new AsyncFunction('msg', ...names, node.func)(msg, ...names.map((n) => globals[n]));
}

describe('demo flow', () => {
  describe('when npm start deploys it (decideFlow)', () => {
    let userDir;
    beforeEach(() => { userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-demo-flow-')); });
    afterEach(() => fs.rmSync(userDir, { recursive: true, force: true }));

    const flowSha = (o) => sha256(JSON.stringify(demoFlow(options(o))));

    it('installs when there is no flows file', () => {
      decideFlow(userDir, flowSha()).should.equal('install');
    });

    it('leaves a flows file it did not write alone (no marker)', () => {
      fs.writeFileSync(path.join(userDir, 'flows.json'), '[]');
      decideFlow(userDir, flowSha()).should.equal('keep-user');
    });

    it('keeps its own flows file while the demo flow is the same, updates it when ports or folders change', () => {
      fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(demoFlow(options())));
      writeMarker(userDir, flowSha());
      decideFlow(userDir, flowSha()).should.equal('unchanged');
      decideFlow(userDir, flowSha({ publicBaseUrl: 'http://127.0.0.1:1999' })).should.equal('update');
      decideFlow(userDir, flowSha({ inboxDir: '/elsewhere/inbox' })).should.equal('update');
    });

    it('keeps a flows file the user changed after the demo was deployed', () => {
      fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(demoFlow(options())));
      writeMarker(userDir, flowSha());
      fs.appendFileSync(path.join(userDir, 'flows.json'), '\n');
      decideFlow(userDir, flowSha({ publicBaseUrl: 'http://127.0.0.1:1999' })).should.equal('keep-user');
    });

    it('treats an unreadable marker as a user flow', () => {
      fs.writeFileSync(path.join(userDir, 'flows.json'), '[]');
      fs.writeFileSync(path.join(userDir, MARKER_FILE), 'not json');
      decideFlow(userDir, flowSha()).should.equal('keep-user');
    });
  });

  describe('contents', () => {
    it('holds the cookie and the webhook secret only in credentials', () => {
      const flow = demoFlow(options({ cookie: 'cookie-value-xyz' }));
      const withoutCredentials = flow.map(({ credentials: _credentials, ...rest }) => rest);
      JSON.stringify(withoutCredentials).should.not.containEql('cookie-value-xyz');
      JSON.stringify(withoutCredentials).should.not.containEql('demo-webhook-secret');
      flow.find((n) => n.type === 'asset-server').credentials.should.eql({ cookie: 'cookie-value-xyz' });
    });

    it('owns a subscription on "* /inbox" with a valid id', () => {
      const events = demoFlow(options()).find((n) => n.type === 'asset-event-in');
      events.should.containEql({ manage: true, method: 'post' });
      events.watchPath.should.eql(['* /inbox']);
      events.subscriptionId.should.match(/^[A-Za-z0-9-]{8,40}$/);
    });

    it('wires every node to nodes that exist', () => {
      const flow = demoFlow(options());
      const ids = new Set(flow.map((n) => n.id));
      ids.size.should.equal(flow.length);
      for (const node of flow) {
        for (const target of (node.wires || []).flat()) ids.has(target).should.be.true(`${node.name} -> ${target}`);
        for (const target of node.scope || []) ids.has(target).should.be.true(`${node.name} scope ${target}`);
      }
    });

    it('embeds folder names with quotes and backslashes safely in function code', async () => {
      const mirrorDir = path.join(os.tmpdir(), 'we"ird \\ name');
      const target = demoFlow(options({ mirrorDir })).find((n) => n.name === 'mirror path');
      const msg = { payload: { assetId: 7, rrn: 3, path: '/inbox/a.txt', action: 'added' } };
      const out = await runFunctionNode(target, msg, { fs, path, node: { warn() {} } });
      out.filename.should.equal(path.join(mirrorDir, 'inbox', 'a.txt'));
      out.should.containEql({ fuid: 7, rrn: -1 });
    });

    it('never lets a server path write outside the mirror folder', async () => {
      const target = demoFlow(options({ mirrorDir: path.join(os.tmpdir(), 'mirror') })).find((n) => n.name === 'mirror path');
      for (const bad of ['/inbox/../../etc/passwd', '../outside', '/', '']) {
        const warnings = [];
        const out = await runFunctionNode(target, { payload: { assetId: 1, path: bad } }, { fs, path, node: { warn: (w) => warnings.push(w) } });
        (out === null).should.be.true(`path ${JSON.stringify(bad)} was accepted`);
        warnings.length.should.equal(1);
      }
    });

    it('skips folders, removed files, hidden and temporary files', async () => {
      const filter = demoFlow(options()).find((n) => n.name === 'files only');
      const pass = async (file, type = 'file') => (await runFunctionNode(filter, { file, type }, {})) !== null;
      (await pass('photo.jpg')).should.be.true();
      (await pass('Report 2024.final.pdf')).should.be.true();
      (await pass('done', 'directory')).should.be.false();
      (await pass('gone.jpg', 'none')).should.be.false();
      for (const temp of ['.hidden', '~$doc.docx', 'a.tmp', 'a.TEMP', 'b.part', 'c.partial', 'd.crdownload', 'e.download', '.f.swp', 'g.txt~']) {
        (await pass(temp)).should.be.false(temp);
      }
    });
  });
});

describe('demo flow: hot folder, one upload per file', () => {
  let dir;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-hot-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Node-RED's flow context of one flow, as the memory store keeps it. */
  function flowContext() {
    const data = {};
    return { get: (k) => data[k], set: (k, v) => { data[k] = v; } };
  }

  it('reports a file once while it is written and until it is moved, then releases it', async () => {
    const flow = demoFlow(options({ inboxDir: dir }));
    const fn = (name) => flow.find((n) => n.name === name);
    const globals = { fs, path, flow: flowContext() };
    const file = path.join(dir, 'big.bin');
    fs.writeFileSync(file, 'first part');

    const first = runFunctionNode(fn('wait until stable'), { filename: file }, globals);
    setTimeout(() => fs.appendFileSync(file, ' and more'), 100); // still growing
    (await runFunctionNode(fn('wait until stable'), { filename: file }, globals) === null).should.be.true();
    const ready = await first;
    ready.filename.should.equal(file);
    // Being uploaded: a late report of the same file is dropped.
    (await runFunctionNode(fn('wait until stable'), { filename: file }, globals) === null).should.be.true();

    const moved = await runFunctionNode(fn('move to done/'), { ...ready, fuid: 5, rrn: 9 }, globals);
    moved.payload.should.eql({ uploaded: 'big.bin', fuid: 5, rrn: 9, movedTo: path.join(dir, 'done', 'big.bin') });
    fs.readFileSync(path.join(dir, 'done', 'big.bin'), 'utf8').should.equal('first part and more');
    globals.flow.get('hotFolderBusy').should.eql({});
  });

  it('keeps the earlier file in done/ when a name comes again', async () => {
    const move = demoFlow(options({ inboxDir: dir })).find((n) => n.name === 'move to done/');
    const globals = { fs, path, flow: flowContext() };
    fs.mkdirSync(path.join(dir, 'done'));
    fs.writeFileSync(path.join(dir, 'done', 'a.txt'), 'old');
    fs.writeFileSync(path.join(dir, 'a.txt'), 'new');
    const moved = await runFunctionNode(move, { filename: path.join(dir, 'a.txt') }, globals);
    fs.readFileSync(path.join(dir, 'done', 'a.txt'), 'utf8').should.equal('old');
    fs.readFileSync(moved.payload.movedTo, 'utf8').should.equal('new');
    path.basename(moved.payload.movedTo).should.match(/^a \d{4}-\d\d-\d\dT[\d-]+Z\.txt$/);
  });

  it('a failed upload releases the file, so a later change is tried again', async () => {
    const flow = demoFlow(options({ inboxDir: dir }));
    const fn = (name) => flow.find((n) => n.name === name);
    const globals = { fs, path, flow: flowContext() };
    const file = path.join(dir, 'c.txt');
    fs.writeFileSync(file, 'c');
    await runFunctionNode(fn('wait until stable'), { filename: file }, globals);
    await runFunctionNode(fn('release the file'), { filename: file }, globals);
    (await runFunctionNode(fn('wait until stable'), { filename: file }, globals)).filename.should.equal(file);
  });
});

describe('example 03 (hot folder)', () => {
  it('uses the same function code as the demo flow', () => {
    const example = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'examples', '03-hot-folder-ingest.json'), 'utf8'));
    const demo = demoFlow(options());
    for (const name of ['files only', 'wait until stable', 'move to done/']) {
      example.find((n) => n.name === name).func.should.equal(demo.find((n) => n.name === name).func, name);
    }
    example.find((n) => n.name === 'release the file').func.split('\n').slice(1)
      .should.eql(demo.find((n) => n.name === 'release the file').func.split('\n').slice(1));
  });
});
