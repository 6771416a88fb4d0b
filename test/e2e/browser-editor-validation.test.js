'use strict';
/**
 * What the runtime refuses at deploy or on every message, the editor marks (a red triangle on the
 * node, the field named), in a real Node-RED + headless Chromium: each case is a node imported with
 * one setting wrong and is compared with the same node with that setting right. The rules
 * themselves are compared with the runtime's in test/api/editor-rules.test.js; this test checks
 * that each dialog uses them. Also: a dropped hot folder picks the only server, and rows a choice
 * makes meaningless are hidden.
 */
const should = require('should');
const { closeBrowser, openEditor } = require('./lib/browser-page');

const SERVER = 'valserver000001';
const LOGIN_SERVER = 'valserver000002';

describe('editor: settings the runtime refuses are marked in the editor (Chromium)', function () {
  this.timeout(60000);
  let nr, browser, page, problems;

  before(async function () {
    this.timeout(120000);
    ({ nr, browser, page, problems } = await openEditor(this, 'the editor validation test'));
    await page.evaluate(({ SERVER, LOGIN_SERVER }) => RED.nodes.import([
      { id: SERVER, type: 'asset-server', name: 'no login', baseUrl: 'http://127.0.0.1:1/review', loginEnabled: false },
      { id: LOGIN_SERVER, type: 'asset-server', name: 'with login', baseUrl: 'http://127.0.0.1:1/review', loginEnabled: true }
    ]), { SERVER, LOGIN_SERVER });
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) await nr.stop();
  });

  /** Imports one node (on the active tab unless a config node) and returns how the editor judges it. */
  function judge(node) {
    return page.evaluate((n) => {
      const copy = { ...n, id: RED.nodes.id() };
      if (RED.nodes.getType(copy.type).category !== 'config') { copy.z = RED.workspaces.active(); copy.x = 300; copy.y = 300; copy.wires = copy.wires || []; }
      RED.nodes.import([copy]);
      const imported = RED.nodes.node(copy.id);
      if (n.credentials) imported.credentials = n.credentials;
      RED.editor.validateNode(imported);
      const verdict = { valid: imported.valid, errors: imported.validationErrors || [] };
      RED.nodes.remove(copy.id);
      return verdict;
    }, node);
  }

  /** `wrong` is marked, with an error text matching `rule`; `right` (the same node with that setting mended) is not. */
  async function marked(rule, wrong, right) {
    const bad = await judge(wrong);
    bad.valid.should.be.false(`${wrong.type} ${JSON.stringify(wrong)} is not marked`);
    bad.errors.some((e) => rule.test(String(e))).should.be.true(`${wrong.type}: ${JSON.stringify(bad.errors)} does not match ${rule}`);
    const good = await judge(right);
    good.valid.should.be.true(`${right.type} ${JSON.stringify(right)} is marked: ${good.errors.join(', ')}`);
  }

  it('asset-redis: a URL that is not redis:// or holds a password', async function () {
    const redis = (url) => ({ type: 'asset-redis', url, timeout: 1000, lease: 10 });
    await marked(/password/, redis('redis://user:pw@127.0.0.1:6379'), redis('redis://user@127.0.0.1:6379'));
    await marked(/password/, redis('redis://127.0.0.1:6379/0?password=pw'), redis('redis://127.0.0.1:6379/0?db=1'));
    await marked(/password/, redis('redis://127.0.0.1:6379/0?pass%77ord=pw'), redis('redis://127.0.0.1:6379/0?db=1'));
    await marked(/redis:\/\//, redis('http://example.com'), redis('rediss://example.com:6380'));
  });

  it('asset-download: no File in file mode; Max size 0 in Buffer mode only', async function () {
    const download = (extra) => ({ type: 'asset-download', server: SERVER, fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg', ...extra });
    await marked(/File is required/, download({ output: 'file', filename: '', filenameType: 'str' }), download({ output: 'file', filename: '/tmp/x', filenameType: 'str' }));
    await marked(/Max size/, download({ output: 'buffer', maxSizeMB: '0' }), download({ output: 'file', filename: '/tmp/x', filenameType: 'str', maxSizeMB: '0' }));
  });

  it('fixed ids and numbers: Asset fuid, Revision, Collection, Folder fuid, Wait minutes', async function () {
    const exp = (fuid, rrn) => ({ type: 'asset-export', server: SERVER, fuid, fuidType: 'num', rrn, rrnType: 'num' });
    await marked(/0 or more/, exp('-3', '-1'), exp('3', '-1'));
    await marked(/-1 \(the latest\)/, exp('3', '-2'), exp('3', '12345'));
    await marked(/0 or more/, { ...exp('x', '-1'), fuidType: 'str' }, { ...exp('12345678901234567890', '-1'), fuidType: 'str' });
    const upload = (extra) => ({ type: 'asset-upload', server: SERVER, destination: '/in', destinationType: 'str', ...extra });
    await marked(/0 or more/, upload({ collectionId: '1.5', collectionIdType: 'num' }), upload({ collectionId: '2', collectionIdType: 'num' }));
    await marked(/0 or more/, upload({ destinationFuid: '-1', destinationFuidType: 'num' }), upload({ destinationFuid: '0', destinationFuidType: 'num' }));
    await marked(/minutes, 0 or more/, upload({ waitInMinutes: '-5', waitInMinutesType: 'num' }), upload({ waitInMinutes: '1.5', waitInMinutesType: 'num' }));
    // A msg property is read at run time: not judged here.
    (await judge(upload({ waitInMinutes: 'minutes', waitInMinutesType: 'msg' }))).valid.should.be.true();
  });

  it('asset-subscribe: Callback, Answer and Callback retries', async function () {
    const sub = (extra) => ({ type: 'asset-subscribe', server: SERVER, action: 'register', subscriptionId: 'abcdefgh', subscriptionIdType: 'str', ...extra });
    await marked(/http:\/\/ or https:\/\//, sub({ callback: 'not a url', callbackType: 'str' }), sub({ callback: 'http://127.0.0.1:1880/hook', callbackType: 'str' }));
    await marked(/100 to 599/, sub({ successCode: '700', successCodeType: 'num' }), sub({ successCode: '204', successCodeType: 'num' }));
    await marked(/0 or more/, sub({ retryCount: '-1', retryCountType: 'num' }), sub({ retryCount: '0', retryCountType: 'num' }));
  });

  it('asset-hot-folder: no destination at all; a Done or Failed folder that is the watched one, above it, or the same', async function () {
    const hot = (extra) => ({ type: 'asset-hot-folder', server: SERVER, folder: '/data/watch', destination: '/inbox', destinationType: 'str',
      destinationFuid: '', destinationFuidType: 'num', afterUpload: 'move', ...extra });
    await marked(/Destination or Folder fuid/, hot({ destination: '' }), hot({ destination: '', destinationFuid: '12' }));
    await marked(/watched folder/, hot({ doneFolder: '/data/watch/' }), hot({ doneFolder: '/data/watch-done' }));
    await marked(/watched folder/, hot({ doneFolder: '/data' }), hot({ doneFolder: '/data/watch/.done' }));
    await marked(/differ from the Done folder/, hot({ doneFolder: '/data/out', failedFolder: '/data/out' }), hot({ doneFolder: '/data/out', failedFolder: '/data/failed' }));
    // With "delete" there is no Done folder to clash with.
    (await judge(hot({ afterUpload: 'delete', doneFolder: '/data/out', failedFolder: '/data/out' }))).valid.should.be.true();
  });

  it('asset-session "Log in now" needs a server with Automatic login', async function () {
    const session = (server) => ({ type: 'asset-session', server, action: 'login', cookie: 'payload', cookieType: 'msg' });
    await marked(/Log in now/, session(SERVER), session(LOGIN_SERVER));
  });

  it('asset-server: Automatic login without a user name or a password', async function () {
    const server = (credentials) => ({ type: 'asset-server', baseUrl: 'http://127.0.0.1:1/review', loginEnabled: true, credentials });
    await marked(/User name/, server({ username: ' ', has_password: true }), server({ username: 'editor', has_password: true }));
    await marked(/Password/, server({ username: 'editor', password: '' }), server({ username: 'editor', password: 'x' }));
  });

  it('asset-redis: the lease is checked against its own Timeout while an asset-server dialog is open', async function () {
    await page.evaluate((id) => RED.editor.editConfig('', 'asset-server', id, 'node-input'), SERVER);
    await page.locator('#node-config-input-timeout').waitFor({ state: 'visible' });
    try {
      // Timeout 20 s, lease 10 s: refused at deploy (the lease must be longer), whatever the open dialog's Timeout says.
      const verdict = await judge({ type: 'asset-redis', url: 'redis://127.0.0.1:6379', timeout: 20000, lease: 10 });
      verdict.valid.should.be.false();
      verdict.errors.should.eql(['must be longer than the timeout']);
    } finally {
      await page.locator('#node-config-dialog-cancel').click();
      await page.locator('#node-config-dialog-cancel').waitFor({ state: 'detached' });
    }
  });

  it('a hot folder dropped in picks the only asset-server, as the other nodes do', async function () {
    const server = await page.evaluate(() => {
      // Only one server for this check.
      const keep = RED.nodes.node('valserver000001');
      RED.nodes.remove('valserver000002');
      const created = RED.view.createNode('asset-hot-folder', 200, 200);
      const picked = created.node.server;
      RED.nodes.import([{ id: 'valserver000002', type: 'asset-server', name: 'with login', baseUrl: 'http://127.0.0.1:1/review', loginEnabled: true }]);
      return { picked, only: keep.id };
    });
    server.picked.should.equal(server.only);
  });

  it('asset-subscribe: get and delete hide the registration rows; asset-session "Log in now" hides the cookie tip', async function () {
    const id = await page.evaluate((server) => {
      const n = { id: RED.nodes.id(), type: 'asset-subscribe', z: RED.workspaces.active(), x: 300, y: 400, wires: [[]], server, action: 'get', subscriptionId: 'abcdefgh', subscriptionIdType: 'str' };
      RED.nodes.import([n]);
      RED.editor.edit(RED.nodes.node(n.id));
      return n.id;
    }, SERVER);
    await page.locator('.red-ui-tray #node-input-action').waitFor({ state: 'visible' });
    (await page.locator('#node-input-callback').isVisible()).should.be.false('Callback shown for get');
    await page.selectOption('#node-input-action', 'register');
    await page.locator('.red-ui-tray .node-input-register-row').first().waitFor({ state: 'visible' });
    await page.locator('#node-dialog-cancel').click();
    await page.locator('#node-dialog-cancel').waitFor({ state: 'detached' });
    await page.evaluate((nodeId) => RED.nodes.remove(nodeId), id);

    await page.evaluate((server) => {
      const n = { id: RED.nodes.id(), type: 'asset-session', z: RED.workspaces.active(), x: 300, y: 500, wires: [[]], server, action: 'login', cookie: 'payload', cookieType: 'msg' };
      RED.nodes.import([n]);
      RED.editor.edit(RED.nodes.node(n.id));
    }, LOGIN_SERVER);
    await page.locator('.red-ui-tray #node-input-action').waitFor({ state: 'visible' });
    (await page.locator('#node-tip-cookie').isVisible()).should.be.false('the cookie tip shown for "Log in now"');
    await page.selectOption('#node-input-action', 'set');
    await page.locator('#node-tip-cookie').waitFor({ state: 'visible' });
    await page.locator('#node-dialog-cancel').click();
    await page.locator('#node-dialog-cancel').waitFor({ state: 'detached' });
  });

  it('every example flow imports with no node marked', async function () {
    const fs = require('fs');
    const path = require('path');
    const dir = path.join(__dirname, '..', '..', 'examples');
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const flow = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      const marks = await page.evaluate((nodes) => {
        const before = new Set();
        RED.nodes.eachNode((n) => before.add(n.id));
        RED.nodes.eachConfig((n) => before.add(n.id));
        RED.view.importNodes(nodes, { generateIds: true, addFlow: true });
        const found = [];
        const check = (n) => {
          if (before.has(n.id) || !/^asset-/.test(n.type)) return;
          RED.editor.validateNode(n);
          if (!n.valid) found.push(`${n.type} ${n.name || n.id}: ${JSON.stringify(n.validationErrors)}`);
        };
        RED.nodes.eachNode(check);
        RED.nodes.eachConfig(check);
        return found;
      }, flow);
      marks.should.eql([], `${file}: ${marks.join('; ')}`);
    }
  });

  it('no console error or failed request on the way', function () {
    should(problems.all()).eql([]);
  });
});
