'use strict';
// Loads the package into a REAL Node-RED runtime (not the test helper): every node type of
// package.json registers, editor and help are served, every message-catalogue key used by the
// editor files, the shared editor code and the runtime resolves, icons and the shared editor
// script are served, credentials stay out of the flow file, and a real flow runs end to end.
require('should');
const fs = require('fs');
const path = require('path');
const { fork } = require('child_process');
const s = require('./nodes-support');

const root = path.join(__dirname, '..', '..');
const pkg = require(path.join(root, 'package.json'));
const { STATUS_KEYS } = require(path.join(root, 'dist', 'nodes', 'shared'));
const MODULE = pkg.name;
const TYPES = Object.keys(pkg['node-red'].nodes);
/** Types whose runtime uses the shared request helpers (status keys dam.status.*). */
const REQUEST_TYPES = ['asset-subscribe', 'asset-upload', 'asset-download', 'asset-export'];

/** Keys built at run time from a prefix, which a text scan cannot see. */
const DYNAMIC_KEYS = {
  'asset-subscribe': ['asset-subscribe.action.register', 'asset-subscribe.action.get', 'asset-subscribe.action.delete',
    'asset-subscribe.status.register', 'asset-subscribe.status.get', 'asset-subscribe.status.delete'],
  'asset-download': ['asset-download.output.buffer', 'asset-download.output.file'],
  'asset-server': ['none', 'any', 'plus', 'minus'].map(p => `asset-server.editor.list.prefix.${p}`)
};

function lookup(catalog, key) {
  return key.split('.').reduce((node, part) => (node && typeof node === 'object' ? node[part] : undefined), catalog);
}

/** [namespace, key] pairs used by a node's editor file and runtime source. */
function keysUsedBy(type) {
  const used = [];
  const add = (raw, defaultNs) => {
    const m = /^([^:]+):(.+)$/.exec(raw);
    used.push(m ? [m[1], m[2]] : [defaultNs, raw]);
  };
  const ns = `${MODULE}/${type}`;
  const editorFile = path.join(root, 'nodes', `${type}.html`);
  if (fs.existsSync(editorFile)) {
    const html = fs.readFileSync(editorFile, 'utf8');
    for (const m of html.matchAll(/data-i18n="([^"]+)"/g)) {
      for (const part of m[1].split(';')) add(part.replace(/^\[[^\]]+\]/, ''), ns);
    }
    for (const m of html.matchAll(/(?:this|node)\._\(\s*["']([^"'+]+)["']\s*[,)]/g)) add(m[1], ns);
    for (const m of html.matchAll(/RED\._\(\s*["']([^"'+]+)["']\s*[,)]/g)) add(m[1], 'node-red');
  }
  // The node's runtime: every source file of its folder src/nodes/<type>/.
  const sourceDir = path.join(root, 'src', 'nodes', type);
  for (const file of fs.existsSync(sourceDir) ? fs.readdirSync(sourceDir).filter(f => f.endsWith('.ts')) : []) {
    for (const m of fs.readFileSync(path.join(sourceDir, file), 'utf8').matchAll(/(?:RED\._\(|localText\(RED, )\s*'([^'$`]+)'\s*[,)]/g)) add(m[1], ns);
  }
  for (const key of DYNAMIC_KEYS[type] || []) add(key, ns);
  if (REQUEST_TYPES.includes(type)) {
    for (const name of Object.keys(STATUS_KEYS)) add(`dam.status.${name}`, ns);
  }
  return used;
}

/** Keys of editor code that names its catalogue in `var NS = "<namespace>:<prefix>"` and looks keys up with t("..."). */
function keysUsedByEditorScript(file) {
  const js = fs.readFileSync(path.join(root, file), 'utf8');
  const prefix = /var NS = "([^"]+)"/.exec(js)[1];
  const [ns, keyPrefix] = prefix.split(':');
  return [...js.matchAll(/\bt\("([^"+]+)"[,)]/g)].map(m => [ns, keyPrefix + m[1]]);
}

/** Keys of the shared editor code (resources/dam-editor.js), all in the asset-server catalogue. */
function keysUsedBySharedEditor() {
  return keysUsedByEditorScript('resources/dam-editor.js');
}

/** Keys of the DAM sidebar plugin and of Test connection (the plugin's catalogue), with those built at run time. */
function keysUsedByPlugin() {
  const ns = `${MODULE}/dam-sidebar`;
  const built = [
    ...['ok', 'auth', 'permission', 'path', 'network', 'http', 'config', 'error'].map(r => `dam-sidebar.result.${r}`),
    ...['registering', 'registered', 'failed'].map(r => `dam-sidebar.state.${r}`),
    ...['callbacks', 'entriesEmitted', 'duplicatesDropped', 'emptiesDropped', 'lastCallback',
      'rejected.secret', 'rejected.too-large', 'rejected.wrong-id', 'rejected.bad-payload'].map(c => `dam-sidebar.counter.${c}`),
    ...['baseUrl', 'path', 'cookie', 'permission', 'timeout', 'tls'].map(p => `dam-sidebar.test.part.${p}`)
  ].map(key => [ns, key]);
  const html = fs.readFileSync(path.join(root, 'nodes', 'asset-server.html'), 'utf8');
  const fromDialog = [...html.matchAll(/data-i18n="([^":]+):([^"]+)"/g)].filter(m => m[1] === ns).map(m => [m[1], m[2]]);
  return keysUsedByEditorScript('plugins/dam-sidebar.html').concat(keysUsedByEditorScript('resources/dam-connection-test.js'), built, fromDialog);
}

describe('the package in a real Node-RED runtime', function () {
  this.timeout(60000);
  let emulator;
  let tmp;
  let child;
  let base;

  async function get(urlPath, accept = 'application/json') {
    const res = await fetch(base + urlPath, { headers: { Accept: accept, 'Node-RED-API-Version': 'v2' } });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') || '', text, json: () => JSON.parse(text) };
  }

  before(async function () {
    emulator = await s.startTestEmulator();
    tmp = s.tempDir('dam-node-red-');
    // Installed into the user dir as npm would (a link to this work tree).
    const scopeDir = path.join(tmp.dir, 'node_modules', path.dirname(MODULE));
    fs.mkdirSync(scopeDir, { recursive: true });
    fs.symlinkSync(root, path.join(tmp.dir, 'node_modules', MODULE), 'dir');
    child = fork(path.join(__dirname, 'fixtures', 'embedded-node-red.js'), [tmp.dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const started = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', code => reject(new Error(`Node-RED exited with ${code}`)));
    });
    if (started.error) throw new Error(started.error);
    base = `http://127.0.0.1:${started.port}`;
  });

  after(async function () {
    if (child && child.exitCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve));
      child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
      await exited;
      clearTimeout(timer);
    }
    if (emulator) await emulator.close();
    if (tmp) tmp.cleanup();
  });

  it('registers every node type of package.json, enabled and without load error', async function () {
    const sets = (await get('/nodes')).json().filter(set => set.module === MODULE);
    const registered = sets.flatMap(set => set.types);
    registered.sort().should.eql([...TYPES].sort());
    for (const set of sets) {
      set.enabled.should.be.true();
      (set.err === undefined || set.err === null).should.be.true(`${set.name}: ${set.err}`);
    }
  });

  it('serves each editor definition and sidebar help', async function () {
    const html = (await get('/nodes', 'text/html')).text;
    for (const type of TYPES) {
      html.should.containEql(`RED.nodes.registerType('${type}'`);
      html.should.containEql(`data-template-name="${type}"`);
      html.should.containEql(`data-help-name="${type}"`);
    }
  });

  it('resolves every message-catalogue key used by editors, the shared editor code and the runtime', async function () {
    // As the editor loads them: node catalogues, and core's `node-red` namespace.
    const catalogs = (await get('/nodes/messages?lng=en-US')).json();
    catalogs['node-red'] = (await get('/locales/node-red?lng=en-US')).json();
    Object.assign(catalogs, (await get('/plugins/messages?lng=en-US')).json());
    const missing = [];
    const pairs = TYPES.flatMap(keysUsedBy).concat(keysUsedBySharedEditor(), keysUsedByPlugin());
    pairs.length.should.be.above(100);
    for (const [ns, key] of pairs) {
      const value = lookup(catalogs[ns], key);
      if (typeof value !== 'string' || value === '') missing.push(`${ns}:${key}`);
    }
    missing.should.eql([]);
  });

  it('serves the icons and the shared editor script', async function () {
    const iconSets = (await get('/icons')).json();
    const icons = iconSets[MODULE] || [];
    const editorHtml = (await get('/nodes', 'text/html')).text;
    const referenced = [...editorHtml.matchAll(/icon:\s*"(asset-[a-z-]+\.svg)"/g)].map(m => m[1]);
    referenced.length.should.be.above(4);
    for (const icon of referenced) {
      icons.should.containEql(icon);
      const res = await get(`/icons/${MODULE}/${icon}`, 'image/svg+xml');
      res.status.should.equal(200);
      res.text.should.containEql('<svg');
    }
    const script = await get(`/resources/${MODULE}/dam-editor.js`, '*/*');
    script.status.should.equal(200);
    script.text.should.containEql('window.DamEditor');
  });

  it('keeps the cookie out of the flow file and the admin API; runs upload -> download end to end', async function () {
    const flows = [
      { id: 'tab1', type: 'tab', label: 'e2e' },
      { id: 'srv', type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 20, rejectUnauthorized: true, tls: '', publicBaseUrl: '',
        credentials: { cookie: s.COOKIE } },
      { id: 'in', x: 100, y: 40, type: 'http in', z: 'tab1', url: '/run', method: 'post', upload: false, wires: [['up']] },
      { id: 'up', x: 100, y: 80, type: 'asset-upload', z: 'tab1', server: 'srv', destination: '/e2e', destinationType: 'str', assetName: 'hello.txt', assetNameType: 'str',
        wait: 'true', waitType: 'bool', wires: [['down']] },
      { id: 'down', x: 100, y: 120, type: 'asset-download', z: 'tab1', server: 'srv', output: 'buffer', wires: [['fmt']] },
      { id: 'fmt', x: 100, y: 160, type: 'function', z: 'tab1', func: 'msg.payload = { fuid: msg.fuid, text: msg.payload.toString(), name: msg.assetFilename, type: msg.contentType };\nreturn msg;', outputs: 1, wires: [['res']] },
      { id: 'res', x: 100, y: 200, type: 'http response', z: 'tab1', statusCode: '', headers: {}, wires: [] },
      { id: 'catch1', x: 100, y: 240, type: 'catch', z: 'tab1', scope: null, uncaught: false, wires: [['errfmt']] },
      { id: 'errfmt', x: 100, y: 280, type: 'function', z: 'tab1', func: 'msg.statusCode = 500; msg.payload = msg.assetError || msg.error; return msg;', outputs: 1, wires: [['res']] }
    ];
    const deploy = await fetch(`${base}/flows`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v1', 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify(flows)
    });
    deploy.status.should.equal(204);

    // The http-in route may appear a moment after the deploy answers; a 404 did nothing.
    let run;
    for (let attempt = 0; attempt < 50; attempt++) {
      run = await fetch(`${base}/api/run`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello from a real flow' });
      if (run.status !== 404) break;
      await run.text();
      await s.delay(100);
    }
    const answer = await run.json();
    run.status.should.equal(200, JSON.stringify(answer));
    answer.text.should.equal('hello from a real flow');
    answer.fuid.should.be.a.Number();
    answer.name.should.equal('hello.txt');

    const flowFile = fs.readFileSync(path.join(tmp.dir, 'flows.json'), 'utf8');
    flowFile.should.containEql('asset-server');
    flowFile.should.not.containEql('local-dev');
    const credFile = path.join(tmp.dir, 'flows_cred.json');
    fs.existsSync(credFile).should.be.true();
    fs.readFileSync(credFile, 'utf8').should.not.containEql('local-dev'); // encrypted
    const exported = (await get('/flows')).text;
    exported.should.not.containEql('local-dev');
    const creds = (await get('/credentials/asset-server/srv')).json();
    // The login user name is a plain-text credential (shown in the editor); cookie and password are not.
    creds.should.eql({ has_cookie: true, username: '', has_password: false });
  });
});
