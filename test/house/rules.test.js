'use strict';
// Rules the editor repeats, checked against the runtime source (the editor cannot import it):
// - the base URL: DamEditor.baseUrl (resources/dam-editor.js), the asset-server node
//   (clientOptions) and the client (parseBaseUrl) take exactly the same texts;
// - the timeout: DamEditor.timeoutSetting and the node's timeoutSeconds (negatives refused);
// - the login presets of nodes/asset-server.html and LOGIN_PRESETS (src/api/login.ts);
// - the login setting names of resources/dam-connection-test.js, of the editor's defaults and
//   LOGIN_SETTINGS (src/nodes/asset-server/session.ts).
// (test/api/editor-rules.test.js does the same for subscription ids, header names and numbers.)
const fs = require('fs');
const path = require('path');
const vm = require('vm');
require('should');
const { loadDamEditor, runEditorScript } = require('../lib/editor-script');
const { AssetClient, LOGIN_PRESETS } = require('../../dist');
const { parseBaseUrl } = require('../../dist/api/client-options');
const { clientOptions, publicBaseUrl, timeoutSeconds } = require('../../dist/nodes/asset-server/options');
const { LOGIN_SETTINGS } = require('../../dist/nodes/asset-server/session');

const root = path.join(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');


/** The asset-server's editor definition (registerType's object) from the real editor file. */
function serverEditor(DamEditor) {
  let definition;
  const RED = { _: (key) => key, validators: { number: () => (v) => v === '' || v === undefined || v === null || !isNaN(Number(v)) }, nodes: { registerType: (name, def) => { definition = def; } } };
  runEditorScript('asset-server', { RED, DamEditor });
  return definition;
}

const accepts = (fn) => { try { fn(); return true; } catch { return false; } };
const RED = { nodes: { getNode: () => null } };

const BASE_URLS = [
  'http://127.0.0.1:8873', 'https://dam.example', ' http://dam.example/ ', 'http://dam.example/review', 'http://dam.example/a/b/',
  'HTTP://DAM.EXAMPLE', 'http://[::1]:8873', 'http://user:pw@dam.example', 'http://dam.example:99999', 'http://dam .example',
  'http://dam.example?x=1', 'http://dam.example/?', 'http://dam.example/#', 'http://dam.example#top', 'http://dam.example/a?b#c',
  'ftp://dam.example', 'file:///etc/passwd', 'http://', 'http:///x', 'https:', 'dam.example', '/review', '', '   ', 'javascript:alert(1)',
  'http:/dam.example', 'http:\\\\dam.example', 'http://dam.example\n', 'http://dam.example/ x', 'mailto:a@b'
];
const TIMEOUTS = ['', ' ', undefined, null, '0', 0, '30', 30, ' 30 ', '0.5', 1.5, '-1', -1, '-0.5', 'abc', '1e3', 'Infinity', 'NaN', '10s'];

describe('house: rules the editor repeats agree with the runtime', function () {
  const DamEditor = loadDamEditor();
  const editor = serverEditor(DamEditor);

  it('base URL: the editor, the node and the client take the same texts, and refuse ? and #', function () {
    const differ = [];
    for (const url of BASE_URLS) {
      const client = accepts(() => new AssetClient({ baseUrl: url, cookie: 'x' }).close());
      const node = accepts(() => clientOptions(RED, { id: 's', baseUrl: url }, { cookie: 'x' }));
      const inEditor = editor.defaults.baseUrl.validate.call({}, url, {}) === true;
      if (client !== node || client !== inEditor || DamEditor.baseUrl(url) !== client) differ.push({ url, client, node, editor: inEditor });
    }
    differ.should.eql([]);
    for (const url of ['http://dam.example?x=1', 'http://dam.example/?', 'http://dam.example/#', 'http://dam.example#top', 'http://dam.example/ x', 'http://h:8873/ review']) {
      accepts(() => parseBaseUrl(url)).should.be.false(url);
      DamEditor.baseUrl(url).should.be.false(url);
    }
    (() => parseBaseUrl('http://dam.example:99999')).should.throw(/port must be from 1 to 65535, got 99999/);
    (() => parseBaseUrl('http://h:8873/ review')).should.throw(/must not contain spaces/);
  });

  it('public base URL: the editor and the node take the same texts (the base URL rule, blank allowed)', function () {
    const differ = [];
    for (const url of BASE_URLS) {
      const node = accepts(() => publicBaseUrl(url));
      const inEditor = editor.defaults.publicBaseUrl.validate.call({}, url, {}) === true;
      const expected = url.trim() === '' || accepts(() => parseBaseUrl(url));
      if (node !== expected || inEditor !== expected) differ.push({ url, node, editor: inEditor, expected });
    }
    differ.should.eql([]);
  });

  it('timeout: the editor refuses what the node refuses (negatives among them)', function () {
    const differ = TIMEOUTS.filter((v) => {
      const runtime = accepts(() => timeoutSeconds(v));
      return (editor.defaults.timeout.validate.call({}, v, {}) === true) !== runtime || DamEditor.timeoutSetting(v) !== runtime;
    });
    differ.should.eql([]);
    accepts(() => timeoutSeconds('-1')).should.be.false();
  });

  it('login presets: the editor fills in exactly the client\'s LOGIN_PRESETS', function () {
    const html = read('nodes/asset-server.html');
    const literal = /var presets = (\{[\s\S]*?\n\s*\});/.exec(html)[1];
    const presets = vm.runInNewContext(`(${literal})`);
    const expected = Object.fromEntries(Object.entries(LOGIN_PRESETS).map(([name, p]) => [name, {
      loginSessionUrl: p.sessionUrl || '', loginUrl: p.url, loginMethod: p.method, loginFieldsIn: p.fieldsIn,
      loginFields: p.fields, sessionFrom: p.sessionFrom, sessionName: p.sessionName, cookieName: p.cookieName
    }]));
    JSON.parse(JSON.stringify(presets)).should.eql(expected);
    const options = [...html.matchAll(/<option value="([^"]+)" data-i18n="asset-server\.preset\./g)].map((m) => m[1]);
    options.should.eql([...Object.keys(LOGIN_PRESETS), 'custom']);
  });

  it('login setting names: the connection test sends, and the editor stores, exactly LOGIN_SETTINGS', function () {
    const js = read('resources/dam-connection-test.js');
    const sent = JSON.parse(/var LOGIN_SETTINGS = (\[[^\]]*\]);/.exec(js)[1]);
    sent.should.eql([...LOGIN_SETTINGS]);
    // The editor's login properties (all but the on/off switch), in any order, are the same names.
    const stored = Object.keys(editor.defaults).filter((name) => /^(login|session|cookieName$)/.test(name) && name !== 'loginEnabled');
    stored.sort().should.eql([...LOGIN_SETTINGS].sort());
  });
});
