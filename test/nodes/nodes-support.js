'use strict';
// Shared pieces of the node tests: loading our nodes into the test helper, flows wired to
// a real emulator, waiting for messages, and checking that no cookie leaks anywhere.
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const helper = require('node-red-node-test-helper');

const root = path.join(__dirname, '..', '..');
const { startEmulator } = require(path.join(root, 'dist', 'emulator'));

/** Node modules of this package, as Node-RED loads them (nodes/<type>.js). */
const nodes = {
  server: require(path.join(root, 'nodes', 'asset-server.js')),
  subscribe: require(path.join(root, 'nodes', 'asset-subscribe.js')),
  upload: require(path.join(root, 'nodes', 'asset-upload.js')),
  download: require(path.join(root, 'nodes', 'asset-download.js')),
  export: require(path.join(root, 'nodes', 'asset-export.js'))
};
const tlsNode = require('@node-red/nodes/core/network/05-tls.js');

const COOKIE = 'JSESSIONID=local-dev';
/** A cookie the emulator does not know; its value must never show up anywhere. */
const WRONG_COOKIE_VALUE = 'wrong-cookie-7f3a9c21e5';
/** A session that is valid but has no permission at all. */
const VIEWER = 'viewer-session-5d1b';

/** Starts an emulator with the default session plus a session without permissions. */
function startTestEmulator(extra = {}) {
  return startEmulator({
    host: '127.0.0.1',
    port: 0,
    retryDelayMs: 200,
    sessions: [
      { value: 'local-dev', permissions: ['events', 'add'] },
      { value: VIEWER, permissions: [] }
    ],
    ...extra
  });
}

/**
 * A flow: tab f1, config node `server`, the node under test `n1` wired to helper `out`,
 * and a catch node wired to helper `caught`.
 */
function flow(type, props, serverProps) {
  return [
    { id: 'f1', type: 'tab', label: 'test' },
    { id: 'server', type: 'asset-server', name: 'dam', timeout: 20, ...serverProps },
    { id: 'n1', type, z: 'f1', x: 100, y: 40, server: 'server', wires: [['out']], ...props },
    { id: 'out', type: 'helper', z: 'f1', x: 300, y: 40, wires: [] },
    { id: 'catch1', type: 'catch', z: 'f1', x: 100, y: 100, scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1', x: 300, y: 100, wires: [] }
  ];
}

function credentials(cookie = COOKIE) {
  return { server: { cookie } };
}

/** Loads a flow with all our node types, the tls-config node and credentials. */
function load(flowNodes, creds = credentials()) {
  return helper.load([...Object.values(nodes), tlsNode], flowNodes, creds);
}

/** Next message on a helper node (rejects after `ms`). */
function nextMessage(node, ms = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message on ${node.id} within ${ms} ms`)), ms);
    node.once('input', msg => { clearTimeout(timer); resolve(msg); });
  });
}

/** Resolves with the first of: a message on `out` ({ out }) or on `caught` ({ caught }). */
function outcome(ms = 15000) {
  const out = helper.getNode('out');
  const caught = helper.getNode('caught');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`neither output nor catch within ${ms} ms`)), ms);
    const onOut = msg => { finish(); resolve({ out: msg }); };
    const onCaught = msg => { finish(); resolve({ caught: msg }); };
    function finish() { clearTimeout(timer); out.removeListener('input', onOut); caught.removeListener('input', onCaught); }
    out.on('input', onOut);
    caught.on('input', onCaught);
  });
}

/** Sends `msg` to n1 and waits for its output message; fails with the caught error otherwise. */
async function run(msg, ms) {
  const result = outcome(ms);
  helper.getNode('n1').receive(msg);
  const r = await result;
  if (r.caught) throw new Error(`expected output, got error: ${r.caught.error && r.caught.error.message}`);
  return r.out;
}

/** Sends `msg` to n1 and waits for the Catch node; fails if the node sent an output instead. */
async function runFailing(msg, ms) {
  const result = outcome(ms);
  helper.getNode('n1').receive(msg);
  const r = await result;
  if (r.out) throw new Error('expected an error, got an output message');
  return r.caught;
}

/** Records every status the node under test shows. */
function recordStatus(node = helper.getNode('n1')) {
  const statuses = [];
  node.on('call:status', call => statuses.push(call.args[0]));
  return statuses;
}

/** JSON of anything, with Buffers and streams summarised, for leak checks. */
function serialise(value) {
  const seen = new WeakSet();
  return JSON.stringify(value, (key, v) => {
    if (v && typeof v === 'object') {
      if (seen.has(v)) return '[circular]';
      seen.add(v);
      if (v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('latin1');
    }
    if (v instanceof Error) return { ...v, message: v.message, stack: v.stack };
    return v;
  });
}

/** Everything the helper's log spy saw, as text. */
function loggedText() {
  return helper.log().args.map(args => serialise(args)).join('\n');
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort() {
  const server = net.createServer();
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise(resolve => server.close(resolve));
  return port;
}

/** Fresh temporary folder, removed by the returned cleanup function. */
function tempDir(prefix = 'dam-nodes-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** GET an emulator-only endpoint with the default cookie; resolves { status, body }. */
async function emulatorGet(url) {
  const res = await fetch(url, { headers: { Cookie: COOKIE } });
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, body };
}

/** Counts this process's open TCP sockets (client and server side). */
function openSockets() {
  return process.getActiveResourcesInfo().filter(r => r === 'TCPSocketWrap').length;
}

function delay(ms) { return new Promise(resolve => setTimeout(resolve, ms)); }

/** Collects unhandled rejections while `fn` runs. */
async function watchUnhandled(fn) {
  const seen = [];
  const onRejection = reason => seen.push(reason);
  process.on('unhandledRejection', onRejection);
  try {
    await fn();
    await delay(200);
  } finally {
    process.removeListener('unhandledRejection', onRejection);
  }
  return seen;
}

module.exports = {
  helper, nodes, tlsNode, COOKIE, WRONG_COOKIE_VALUE, VIEWER,
  startTestEmulator, flow, credentials, load, nextMessage, outcome, run, runFailing,
  recordStatus, serialise, loggedText, closedPort, tempDir, emulatorGet, openSockets, delay, watchUnhandled
};

/**
 * The failure cases every request node shares: 401 with a wrong cookie reaching a Catch node
 * with no cookie text anywhere, permission denied, and server down.
 * `setup()` returns { emulator, props, msg } for the node under test; `permissionOperation`
 * says whether the operation needs a permission (else the viewer session succeeds).
 */
function describeFailures(type, setup, { needsPermission = true } = {}) {
  const should = require('should');

  it('401 with a wrong cookie reaches a Catch node as kind auth, with no cookie text anywhere', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: emulator.url }), credentials(`JSESSIONID=${WRONG_COOKIE_VALUE}`));
    const statuses = recordStatus();
    const caught = await runFailing(msg());
    caught.assetError.kind.should.equal('auth');
    caught.assetError.status.should.equal(401);
    caught.error.message.should.be.a.String().and.not.be.empty();
    caught.error.source.id.should.equal('n1');
    const everything = [serialise(caught), serialise(statuses), loggedText()].join('\n');
    everything.should.not.containEql(WRONG_COOKIE_VALUE);
    everything.should.not.containEql('local-dev');
    statuses[statuses.length - 1].should.containDeep({ fill: 'red', shape: 'ring' });
    // Reason first, short enough to read under the node.
    statuses[statuses.length - 1].text.should.equal('auth: cookie rejected');
  });

  it('a cookie pasted with its header name ("Cookie: JSESSIONID=...") works', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: emulator.url }), credentials(`Cookie: ${COOKIE}`));
    const r = await (async () => { const p = outcome(); helper.getNode('n1').receive(msg()); return p; })();
    if (r.caught) throw new Error(`expected output, got ${r.caught.error.message}`);
  });

  it('a base URL that already ends in /review is used as is (no /review/review/...)', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: `${emulator.url}/review/` }));
    const r = await (async () => { const p = outcome(); helper.getNode('n1').receive(msg()); return p; })();
    if (r.caught) throw new Error(`expected output, got ${r.caught.error.message}`);
  });

  it('a base URL with a wrong path prefix shows "404: check base URL"', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: `${emulator.url}/wrong-prefix` }));
    const statuses = recordStatus();
    const caught = await runFailing(msg());
    caught.assetError.status.should.equal(404);
    statuses[statuses.length - 1].should.containDeep({ fill: 'red', shape: 'ring', text: '404: check base URL' });
  });

  it('a success removes the msg.assetError of an earlier failure (a message retried by a Catch flow)', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: emulator.url }));
    const out = await run({ ...msg(), assetError: { kind: 'network', message: 'old failure' } });
    out.should.not.have.property('assetError');
  });

  it('a bare cookie value (no name) works like JSESSIONID=value', async function () {
    const { emulator, props, msg } = await setup();
    await load(flow(type, props, { baseUrl: emulator.url }), credentials('local-dev'));
    const result = outcome();
    helper.getNode('n1').receive(msg());
    const r = await result;
    // Not a 401: either success or an answer about the request itself.
    if (r.caught) r.caught.assetError.kind.should.not.equal('auth');
  });

  it(needsPermission ? 'a session without permission gets kind permission' : 'a session without permissions may still do this',
    async function () {
      const { emulator, props, msg } = await setup();
      await load(flow(type, props, { baseUrl: emulator.url }), credentials(`JSESSIONID=${VIEWER}`));
      const r = await (async () => { const p = outcome(); helper.getNode('n1').receive(msg()); return p; })();
      if (needsPermission) {
        should.exist(r.caught, 'expected a permission error');
        r.caught.assetError.kind.should.equal('permission');
        r.caught.error.message.should.match(/permission/i);
        serialise(r.caught).should.not.containEql(VIEWER);
      } else if (r.caught) {
        r.caught.assetError.kind.should.not.equal('permission');
      }
    });

  it('server down gives kind network, red status, and no output', async function () {
    const { props, msg } = await setup();
    const port = await closedPort();
    await load(flow(type, props, { baseUrl: `http://127.0.0.1:${port}` }));
    const statuses = recordStatus();
    const caught = await runFailing(msg());
    caught.assetError.kind.should.equal('network');
    statuses[statuses.length - 1].should.containDeep({ fill: 'red', shape: 'ring' });
    statuses[statuses.length - 1].text.should.equal('network: connection refused');
  });

  it('no server selected is a clear error naming the server field', async function () {
    const { emulator, props, msg } = await setup();
    const nodesOfFlow = flow(type, { ...props, server: '' }, { baseUrl: emulator.url });
    await load(nodesOfFlow);
    const caught = await runFailing(msg());
    caught.assetError.kind.should.equal('invalid-input');
    caught.assetError.field.should.equal('server');
  });
}

module.exports.describeFailures = describeFailures;
