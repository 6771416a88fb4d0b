'use strict';
// A real Node-RED (spawned, this package loaded as installed) whose asset-server nodes go through
// a real squid (test/api/squid.js), checked in squid's access log:
// - started with http_proxy / HTTPS_PROXY / no_proxy in its environment (Proxy: from the
//   environment, the default): a plain-HTTP server (absolute URI), an HTTPS server (the emulator
//   with a certificate made here, trusted through a core tls-config node: a CONNECT tunnel, no
//   cookie in the log), a host named in no_proxy reached direct; Test connection through it too;
// - with a core `http proxy` config node (its credentials, basic auth on squid): the nodes and the
//   automatic login go through it; a wrong password makes Test connection answer `proxy`, a Catch
//   node get kind `proxy` and the node's status read "proxy: authentication failed"; the password
//   appears in no log line of Node-RED and in no exported flow.
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
require('should');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { startRealNodeRed } = require('../reliability/lib/nodered');
const { startSquid, selfSignedCert } = require('../api/squid');

const COOKIE = 'Cookie-NR-Proxy-4b1d9e77aa';
const PROXY_USER = 'nr-proxy-user';
const PROXY_PASSWORD = 'Nr-Proxy-Secret-8d3f';
const LOGIN = { name: 'bob', password: 'Bob-Login-Secret-62', permissions: ['events', 'add'] };
const Z = 'proxy-flow';

describe('Node-RED through an HTTP proxy (real Node-RED, real squid)', function () {
  this.timeout(120000);
  let dir;
  let tls;
  let plain;
  let secure;
  let squid;
  let authSquid;
  let nodeRed;
  before(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'dam-nr-proxy-'));
    tls = await selfSignedCert();
    await fsp.writeFile(path.join(dir, 'ca.pem'), tls.cert);
    const sessions = [{ value: COOKIE, permissions: ['events', 'add'] }];
    plain = await startEmulator({ port: 0, dataDir: path.join(dir, 'plain'), sessions, users: [LOGIN] });
    secure = await startEmulator({ port: 0, dataDir: path.join(dir, 'secure'), sessions, tls });
    [squid, authSquid] = await Promise.all([startSquid(), startSquid({ auth: { username: PROXY_USER, password: PROXY_PASSWORD } })]);
  });
  afterEach(async function () {
    if (nodeRed && this.currentTest.state === 'failed') console.log(nodeRed.lines.slice(-40).join('\n'));
    if (nodeRed) await nodeRed.stopAndClean();
    nodeRed = undefined;
  });
  after(async () => {
    await Promise.all([squid?.stop(), authSquid?.stop(), plain?.close(), secure?.close()]);
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  const tab = { id: Z, type: 'tab', label: 'proxy' };
  const server = (id, baseUrl, extra = {}) => ({
    id, type: 'asset-server', name: `server ${id}`, baseUrl, timeout: 30, rejectUnauthorized: true, tls: '', publicBaseUrl: '', ...extra
  });
  /** inject -> asset-subscribe registering `subscriptionId` on `serverId`. */
  const register = (id, serverId, subscriptionId) => [
    { id: `${id}-inject`, type: 'inject', z: Z, props: [], repeat: '', crontab: '', once: false, onceDelay: 0.1, topic: '', x: 0, y: 0, wires: [[id]] },
    {
      id, type: 'asset-subscribe', z: Z, server: serverId, action: 'register', subscriptionId, subscriptionIdType: 'str',
      callback: 'http://127.0.0.1:9/callback', callbackType: 'str', method: 'POST', successCode: '', successCodeType: 'num',
      retryCount: '', retryCountType: 'num', requestType: '', requestTypeType: 'str', logicalOperand: '', header: [], queryParam: [],
      watchPath: ['* /proxy'], watchMetadata: [], x: 0, y: 0, wires: [[]]
    }
  ];
  /** Resolves once the emulator holds the subscription (asked directly, no proxy). */
  async function registered(emulator, id) {
    const api = new AssetClient({ baseUrl: emulator.url, cookie: COOKIE, ca: tls.cert, proxy: 'none' });
    try {
      for (;;) {
        const found = await api.getSubscription(id).then(() => true, (err) => (err.kind === 'rejected' ? false : Promise.reject(err)));
        if (found) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      api.close();
    }
  }
  async function connectionTest(body) {
    const res = await fetch(`${nodeRed.url}/dam-assets/connection-test`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
    });
    res.status.should.equal(200);
    return res.json();
  }

  it('started with http_proxy, HTTPS_PROXY and no_proxy: HTTP via the absolute URI, HTTPS via CONNECT (no cookie in the log), no_proxy direct, Test connection too', async () => {
    const plainPort = new URL(plain.url).port;
    nodeRed = await startRealNodeRed({
      env: { http_proxy: squid.url, HTTPS_PROXY: squid.url, no_proxy: 'localhost', NO_PROXY: undefined, https_proxy: undefined, HTTP_PROXY: undefined }
    });
    await nodeRed.deployAs('full', [
      tab,
      { id: 'ca-tls', type: 'tls-config', name: 'test CA', cert: '', key: '', ca: path.join(dir, 'ca.pem'), certname: '', keyname: '', caname: '', servername: '', verifyservercert: true, alpnprotocol: '' },
      { ...server('plain-server', plain.url), credentials: { cookie: COOKIE } },
      { ...server('secure-server', secure.url, { tls: 'ca-tls' }), credentials: { cookie: COOKIE } },
      { ...server('direct-server', `http://localhost:${plainPort}`), credentials: { cookie: COOKIE } },
      ...register('sub-plain', 'plain-server', 'nr-env-plain-1'),
      ...register('sub-secure', 'secure-server', 'nr-env-secure-1'),
      ...register('sub-direct', 'direct-server', 'nr-env-direct-1')
    ]);
    for (const id of ['sub-plain', 'sub-secure', 'sub-direct']) await nodeRed.inject(`${id}-inject`);
    await registered(plain, 'nr-env-plain-1');
    await registered(secure, 'nr-env-secure-1');
    await registered(plain, 'nr-env-direct-1');
    const [line] = await squid.waitForLog((l) => l.includes('/subscribe/nr-env-plain-1'));
    line.should.containEql(` POST ${plain.url}/review/api/events/assets/subscribe/nr-env-plain-1 `);

    // Test connection (before a deploy: typed values) through the proxy, over HTTPS.
    const verdict = await connectionTest({ id: 'not-deployed', baseUrl: secure.url, cookie: COOKIE, timeout: 30, tls: 'ca-tls', proxyMode: 'env' });
    verdict.result.should.equal('ok', verdict.message);
    // Stopping Node-RED ends its tunnels: squid logs a CONNECT when one closes.
    await nodeRed.stopAndClean();
    nodeRed = undefined;
    const host = new URL(secure.url).host;
    await squid.waitForLog((l) => l.includes(`CONNECT ${host} `));
    const log = await squid.accessLog();
    log.filter((l) => l.includes(host)).join('\n').should.not.containEql(COOKIE);
    log.join('\n').should.not.containEql('nr-env-secure-1');
    // no_proxy=localhost: that server was reached direct (its request ended before the stop above).
    log.join('\n').should.not.containEql('nr-env-direct-1');
    log.join('\n').should.not.containEql('localhost');
  });

  it('with an http proxy config node (basic auth): nodes and automatic login go through it; a wrong password is result proxy; the password in no log line or export', async () => {
    nodeRed = await startRealNodeRed({ env: { http_proxy: undefined, HTTP_PROXY: undefined, https_proxy: undefined, HTTPS_PROXY: undefined } });
    await nodeRed.deployAs('full', [
      tab,
      { id: 'corp-proxy', type: 'http proxy', name: 'corp', url: authSquid.url, noproxy: ['intranet.example'], credentials: { username: PROXY_USER, password: PROXY_PASSWORD } },
      { id: 'bad-proxy', type: 'http proxy', name: 'bad', url: authSquid.url, noproxy: [], credentials: { username: PROXY_USER, password: 'Wrong-Proxy-Pw-5' } },
      { ...server('node-server', plain.url, { proxyMode: 'node', proxy: 'corp-proxy' }), credentials: { cookie: COOKIE } },
      {
        ...server('login-server', plain.url, { proxyMode: 'node', proxy: 'corp-proxy', loginEnabled: true, loginPreset: 'utility' }),
        credentials: { username: LOGIN.name, password: LOGIN.password }
      },
      ...register('sub-node', 'node-server', 'nr-node-proxy-1'),
      ...register('sub-login', 'login-server', 'nr-node-login-1')
    ]);
    await nodeRed.inject('sub-node-inject');
    await nodeRed.inject('sub-login-inject');
    await registered(plain, 'nr-node-proxy-1');
    await registered(plain, 'nr-node-login-1');
    (await authSquid.waitForLog((l) => l.includes('/subscribe/nr-node-proxy-1')))[0].should.containEql(`user=${PROXY_USER}`);
    (await authSquid.waitForLog((l) => l.includes(` GET ${plain.url}/command?`)))[0].should.containEql(`user=${PROXY_USER}`);
    await authSquid.waitForLog((l) => l.includes('/subscribe/nr-node-login-1'));

    // Test connection with the deployed http proxy node: right, then wrong password.
    const good = await connectionTest({ id: 'typed', baseUrl: plain.url, cookie: COOKIE, timeout: 30, proxyMode: 'node', proxy: 'corp-proxy' });
    good.result.should.equal('ok', good.message);
    const bad = await connectionTest({ id: 'typed', baseUrl: plain.url, cookie: COOKIE, timeout: 30, proxyMode: 'node', proxy: 'bad-proxy' });
    bad.result.should.equal('proxy', bad.message);
    bad.part.should.equal('proxy');
    bad.message.should.match(/proxy authentication failed/);
    const badLogin = await connectionTest({
      id: 'typed', baseUrl: plain.url, timeout: 30, proxyMode: 'node', proxy: 'bad-proxy',
      loginEnabled: true, loginPreset: 'utility', username: LOGIN.name, password: LOGIN.password
    });
    badLogin.result.should.equal('proxy', badLogin.message);
    const missing = await connectionTest({ id: 'typed', baseUrl: plain.url, cookie: COOKIE, timeout: 30, proxyMode: 'node', proxy: 'no-such-node' });
    missing.result.should.equal('config');
    missing.part.should.equal('proxy');

    // A server whose proxy refuses: the node's error is kind proxy, never auth.
    await nodeRed.deployAs('full', [
      tab,
      { id: 'bad-proxy', type: 'http proxy', name: 'bad', url: authSquid.url, noproxy: [], credentials: { username: PROXY_USER, password: 'Wrong-Proxy-Pw-5' } },
      { ...server('bad-server', plain.url, { proxyMode: 'node', proxy: 'bad-proxy' }), credentials: { cookie: COOKIE } },
      ...register('sub-bad', 'bad-server', 'nr-node-bad-1'),
      { id: 'catch', type: 'catch', z: Z, scope: null, uncaught: false, x: 0, y: 0, wires: [['catch-debug']] },
      { id: 'catch-debug', type: 'debug', z: Z, active: true, tosidebar: false, console: true, tostatus: false, complete: 'true', targetType: 'full', x: 0, y: 0, wires: [] },
      { id: 'status', type: 'status', z: Z, scope: ['sub-bad'], x: 0, y: 0, wires: [['status-debug']] },
      { id: 'status-debug', type: 'debug', z: Z, active: true, tosidebar: false, console: true, tostatus: false, complete: 'status.text', targetType: 'msg', x: 0, y: 0, wires: [] }
    ]);
    const before = nodeRed.lines.length;
    await nodeRed.inject('sub-bad-inject');
    for (;;) {
      const text = nodeRed.lines.slice(before).join('\n');
      // The Catch node's msg, printed by the debug node: msg.assetError.kind and the message.
      // ... and the node's status (a Status node's msg), short: "proxy: authentication failed".
      if (/proxy authentication failed/.test(text) && /kind: 'proxy'/.test(text) && /proxy: authentication failed/.test(text)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    nodeRed.lines.join('\n').should.not.match(/kind: 'auth'/);

    const flows = await (await fetch(`${nodeRed.url}/flows`)).text();
    for (const secret of [PROXY_PASSWORD, 'Wrong-Proxy-Pw-5', COOKIE, LOGIN.password]) {
      flows.should.not.containEql(secret);
      nodeRed.lines.join('\n').should.not.containEql(secret);
    }
    fs.existsSync(nodeRed.userDir).should.be.true();
  });
});
