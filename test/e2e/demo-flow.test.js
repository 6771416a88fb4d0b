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
        // Nothing to download (output 1 empty); the msg goes to the acknowledgement (output 2), so the
        // at-least-once inbox does not deliver it again.
        (Array.isArray(out) && out[0] === null && out[1] !== null).should.be.true(`path ${JSON.stringify(bad)} was accepted`);
        warnings.length.should.equal(1);
      }
    });

    it('ingests with an asset-hot-folder node: inbox -> /inbox, moved to inbox/done', () => {
      const hot = demoFlow(options()).find((n) => n.type === 'asset-hot-folder');
      hot.should.containEql({ folder: '/data/demo/inbox', doneFolder: path.join('/data/demo/inbox', 'done'), afterUpload: 'move',
        destination: '/inbox', destinationType: 'str', wait: 'true' });
      demoFlow(options()).filter((n) => n.type === 'function' && /stable|done|files only|release/.test(n.name)).should.eql([]);
    });
  });
});

describe('example 03 (hot folder)', () => {
  it('uses asset-hot-folder with the demo\'s upload fields, and no function nodes', () => {
    const example = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'examples', '03-hot-folder-ingest.json'), 'utf8'));
    const hot = example.find((n) => n.type === 'asset-hot-folder');
    const demo = demoFlow(options()).find((n) => n.type === 'asset-hot-folder');
    for (const field of ['destinationType', 'wait', 'waitType', 'expandZip', 'expandZipType', 'afterUpload', 'subfolders', 'retries']) {
      hot[field].should.eql(demo[field], field);
    }
    example.filter((n) => n.type === 'function').should.eql([]);
  });
});
