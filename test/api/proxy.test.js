'use strict';
// The client through a real HTTP proxy (squid, test/api/squid.js), checked in squid's access log,
// which records every request with its headers: plain HTTP sends the absolute URI to the proxy;
// HTTPS (the emulator with a certificate made here, trusted through the client's `ca`) goes
// through a CONNECT tunnel, so the proxy never sees the cookie or the path; basic authentication
// right and wrong (407 -> kind `proxy`, never `auth`, no password in the error); the environment's
// http_proxy / https_proxy / no_proxy as Node-RED core reads them; `none`; the automatic login
// and the transfer worker through the proxy too.
//
// "Not through the proxy" is shown without waiting for a time: squid logs requests in the order
// they end, so after the request under test a marker request is sent through the proxy; once the
// marker's line is in the log, the request under test would be there too if it had gone through.
const fsp = require('fs/promises');
const http = require('http');
const net = require('net');
const { Readable } = require('stream');
const path = require('path');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { startEmulator } = require('../../dist/emulator');
const { COOKIES, tempDir, expectError, serialise } = require('./helpers');
const { startSquid, selfSignedCert } = require('./squid');

const PROXY_ENV = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY', 'all_proxy', 'ALL_PROXY',
  'npm_config_proxy', 'npm_config_http_proxy', 'npm_config_https_proxy', 'npm_config_no_proxy'];
const PROXY_USER = 'dam-proxy-user';
const PROXY_PASSWORD = 'Pr0xy-Secret:%41-9c1e';
const LOGIN = { name: 'alice', password: 'Alice-Login-Secret-31', permissions: ['events', 'add'] };

describe('api client through an HTTP proxy (real squid)', function () {
  this.timeout(60000);
  let squid;
  let authSquid;
  let plain;   // emulator over HTTP
  let secure;  // emulator over HTTPS
  let tls;
  let dir;
  const savedEnv = {};
  const clients = [];
  const client = (options) => {
    const c = new AssetClient({ cookie: COOKIES.editor, ca: tls.cert, ...options });
    clients.push(c);
    return c;
  };
  const sessions = [{ value: COOKIES.editor, permissions: ['events', 'add'] }];
  let marker = 0;
  /** Sends a request through `proxy` to the plain emulator and waits for its log line. */
  async function markerThrough(proxy) {
    const id = `marker-${process.pid}-${++marker}`;
    await client({ baseUrl: plain.url, proxy: { url: proxy.url, username: PROXY_USER, password: PROXY_PASSWORD } }).registerSubscription(id, { callback: 'http://127.0.0.1:1/x' });
    await proxy.waitForLog((line) => line.includes(id));
  }

  before(async () => {
    for (const name of PROXY_ENV) { savedEnv[name] = process.env[name]; delete process.env[name]; }
    dir = await tempDir('dam-proxy-');
    tls = await selfSignedCert();
    [squid, authSquid] = await Promise.all([startSquid(), startSquid({ auth: { username: PROXY_USER, password: PROXY_PASSWORD } })]);
    plain = await startEmulator({ port: 0, dataDir: path.join(dir, 'plain'), sessions, users: [LOGIN] });
    secure = await startEmulator({ port: 0, dataDir: path.join(dir, 'secure'), sessions, users: [LOGIN], tls });
  });
  afterEach(() => {
    for (const name of PROXY_ENV) { if (savedEnv[name] === undefined) delete process.env[name]; else process.env[name] = savedEnv[name]; }
    for (const c of clients.splice(0)) c.close();
  });
  after(async () => {
    for (const name of PROXY_ENV) if (savedEnv[name] !== undefined) process.env[name] = savedEnv[name];
    await Promise.all([squid?.stop(), authSquid?.stop(), plain?.close(), secure?.close()]);
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  it('plain HTTP: the absolute URI goes to the proxy (which, over plain HTTP, sees the cookie: the log shows headers)', async () => {
    const api = client({ baseUrl: plain.url, proxy: { url: squid.url } });
    (await api.registerSubscription('proxy-http-1', { callback: 'http://127.0.0.1:1/x' })).success.should.be.true();
    const [line] = await squid.waitForLog((l) => l.includes('/subscribe/proxy-http-1'));
    line.should.containEql(` POST ${plain.url}/review/api/events/assets/subscribe/proxy-http-1 `);
    line.should.containEql(COOKIES.editor); // the log does record headers: the HTTPS case below is a real check
  });

  it('plain HTTP: the exact bytes the proxy gets: one request line with the absolute URI, then the streamed body once, Content-Length bytes', async () => {
    // A bare TCP "proxy" that keeps the bytes it gets and answers once it has the whole body.
    let received = Buffer.alloc(0);
    const proxy = net.createServer((socket) => {
      socket.on('data', (chunk) => {
        received = Buffer.concat([received, chunk]);
        const text = received.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        const length = Number((/content-length: (\d+)/i.exec(text) || [])[1]);
        if (end > 0 && received.length >= end + 4 + length) {
          const body = JSON.stringify({ success: true, fuids: [1] });
          socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        }
      });
    });
    await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const parts = ['first part;', 'second part;', 'third part.'];
      const stream = new Readable({ read() { setImmediate(() => this.push(parts.length ? Buffer.from(parts.shift()) : null)); } });
      const api = client({ baseUrl: 'http://dam.example:8873', proxy: { url: `http://127.0.0.1:${proxy.address().port}` } });
      await api.upload({ file: { stream, length: 34 }, name: 'parts.txt', destination: '/inbox' });
      const text = received.toString('latin1');
      text.split('POST http://dam.example:8873/review/api/asset/upload HTTP/1.1').length.should.equal(2, text.slice(0, 2000));
      text.should.startWith('POST http://dam.example:8873/review/api/asset/upload HTTP/1.1\r\n');
      text.should.containEql('first part;second part;third part.');
      const [head, ...rest] = text.split('\r\n\r\n');
      Buffer.byteLength(rest.join('\r\n\r\n'), 'latin1').should.equal(Number(/content-length: (\d+)/i.exec(head)[1]));
    } finally {
      proxy.close();
    }
  });

  it('HTTPS: a CONNECT tunnel; the proxy sees host and port only, never the cookie or the path; the server\'s CA from the TLS settings', async () => {
    const api = client({ baseUrl: secure.url, proxy: { url: squid.url } });
    (await api.registerSubscription('proxy-https-1', { callback: 'http://127.0.0.1:1/x' })).success.should.be.true();
    (await api.getSubscription('proxy-https-1')).id.should.equal('proxy-https-1');
    api.close(); // ends the tunnel: squid logs a CONNECT when it closes
    const host = new URL(secure.url).host;
    const lines = await squid.waitForLog((l) => l.includes(`CONNECT ${host} `));
    lines[0].should.match(/TCP_TUNNEL\/200/);
    const log = (await squid.accessLog()).join('\n');
    log.should.not.containEql('proxy-https-1');
    log.split('\n').filter((l) => l.includes(host)).join('\n').should.not.containEql(COOKIES.editor);
    // Without the CA the tunnel's TLS refuses the self-signed certificate.
    const untrusted = new AssetClient({ baseUrl: secure.url, cookie: COOKIES.editor, proxy: { url: squid.url } });
    clients.push(untrusted);
    (await expectError(untrusted.getSubscription('proxy-https-1'), 'network')).message.should.match(/TLS failed/);
  });

  for (const scheme of ['http', 'https']) {
    it(`${scheme}: proxy basic authentication, right password works, wrong password is kind proxy (407), never auth, no password in the error`, async () => {
      const target = scheme === 'https' ? secure : plain;
      const good = client({ baseUrl: target.url, proxy: { url: authSquid.url, username: PROXY_USER, password: PROXY_PASSWORD } });
      (await good.getSubscription('proxy-auth-1').catch((e) => e)).kind.should.equal('rejected'); // reached the server: unknown id
      const bad = client({ baseUrl: target.url, proxy: { url: authSquid.url, username: PROXY_USER, password: 'wrong-Password-77' } });
      const error = await expectError(bad.getSubscription('proxy-auth-1'), 'proxy');
      error.status.should.equal(407);
      error.message.should.match(/proxy authentication failed/);
      serialise(error).should.not.containEql('wrong-Password-77');
      serialise(error).should.not.containEql(PROXY_PASSWORD);
      const none = client({ baseUrl: target.url, proxy: { url: authSquid.url } });
      (await expectError(none.getSubscription('proxy-auth-1'), 'proxy')).code.should.equal('PROXY_AUTH_FAILED');
      // The same with the credentials in the environment's proxy URL.
      process.env[`${scheme}_proxy`] = `http://${PROXY_USER}:${encodeURIComponent(PROXY_PASSWORD)}@127.0.0.1:${authSquid.port}`;
      (await client({ baseUrl: target.url }).getSubscription('proxy-auth-1').catch((e) => e)).kind.should.equal('rejected');
      process.env[`${scheme}_proxy`] = `http://${PROXY_USER}:nope-Nope-5@127.0.0.1:${authSquid.port}`;
      const envError = await expectError(client({ baseUrl: target.url }).getSubscription('proxy-auth-1'), 'proxy');
      serialise(envError).should.not.containEql('nope-Nope-5');
    });
  }

  it('from the environment (default): http_proxy and HTTPS_PROXY are used, no_proxy bypasses, proxy none ignores them', async () => {
    process.env.http_proxy = squid.url;
    process.env.HTTPS_PROXY = squid.url;
    await client({ baseUrl: plain.url }).registerSubscription('proxy-env-1', { callback: 'http://127.0.0.1:1/x' });
    await squid.waitForLog((l) => l.includes('/subscribe/proxy-env-1'));
    const tunnelled = client({ baseUrl: secure.url });
    await tunnelled.registerSubscription('proxy-env-2', { callback: 'http://127.0.0.1:1/x' });
    tunnelled.close();
    await squid.waitForLog((l) => l.includes(`CONNECT ${new URL(secure.url).host} `));

    // no_proxy forms: exact host, host:port, suffix, *; and a port that does not match still goes through.
    const port = new URL(plain.url).port;
    const bypassed = [];
    for (const [i, noProxy] of ['127.0.0.1', `127.0.0.1:${port}`, '.0.0.1', '*', 'other.example, 127.0.0.1'].entries()) {
      process.env.no_proxy = noProxy;
      await client({ baseUrl: plain.url }).registerSubscription(`proxy-bypass-${i}`, { callback: 'http://127.0.0.1:1/x' });
      bypassed.push(`proxy-bypass-${i}`);
    }
    process.env.NO_PROXY = `127.0.0.1:${Number(port) + 1}`;
    delete process.env.no_proxy;
    await client({ baseUrl: plain.url }).registerSubscription('proxy-port-mismatch', { callback: 'http://127.0.0.1:1/x' });
    await squid.waitForLog((l) => l.includes('/subscribe/proxy-port-mismatch'));
    // proxy: none ignores the environment.
    delete process.env.NO_PROXY;
    await client({ baseUrl: plain.url, proxy: 'none' }).registerSubscription('proxy-none-1', { callback: 'http://127.0.0.1:1/x' });
    bypassed.push('proxy-none-1');
    await markerThrough(squid);
    const log = (await squid.accessLog()).join('\n');
    for (const id of bypassed) log.should.not.containEql(id);
    (await plain.requestsWith(COOKIES.editor)).should.be.above(bypassed.length);
  });

  it('a proxy that cannot be reached is named in the error (not the server); a bad proxy URL in the environment names the variable', async () => {
    const closed = net.createServer();
    await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    for (const target of [plain, secure]) {
      const error = await expectError(client({ baseUrl: target.url, proxy: { url: `http://127.0.0.1:${port}`, username: PROXY_USER, password: PROXY_PASSWORD } })
        .getSubscription('proxy-down-1'), 'network');
      error.message.should.containEql(`the HTTP proxy http://127.0.0.1:${port}`);
      error.message.should.match(/is the proxy running/);
      error.code.should.equal('ECONNREFUSED');
      serialise(error).should.not.containEql(PROXY_PASSWORD);
    }
    process.env.http_proxy = 'http://exa mple:80';
    const bad = await expectError(client({ baseUrl: plain.url }).getSubscription('proxy-bad-env'), 'invalid-input');
    bad.field.should.equal('http_proxy');
  });

  it('plain HTTP: a 502, 503 or 504 that came through the proxy says it may be the proxy\'s own (a server it cannot reach)', async () => {
    // Before: "server busy (HTTP 503), retry later", as if the DAM server had answered.
    const closed = net.createServer();
    await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await expectError(client({ baseUrl: `http://127.0.0.1:${port}`, proxy: { url: squid.url } }).getSubscription('proxy-gateway-1'), 'http');
    [502, 503, 504].should.containEql(error.status);
    error.message.should.containEql(`This answer came through the HTTP proxy ${squid.url}: it may be the proxy's own, when it cannot reach http://127.0.0.1:${port}`);
    // Through a CONNECT tunnel (https) the answer is the server's own: no such hint.
    secure.injectBusy({ count: 5, status: 503, retryAfterSeconds: 0, pathContains: '/subscribe/proxy-gateway-2' });
    const busy = await expectError(client({ baseUrl: secure.url, proxy: { url: squid.url } }).getSubscription('proxy-gateway-2'), 'http');
    busy.status.should.equal(503);
    busy.message.should.not.containEql('came through the HTTP proxy');
  });

  it('a proxy variable without a scheme (read as https://, as core does) that speaks plain HTTP: the error says to write http://', async () => {
    // Before: only "EPROTO ... wrong version number ... through the HTTP proxy https://...".
    process.env.https_proxy = squid.url.replace(/^http:\/\//, '');
    const error = await expectError(client({ baseUrl: secure.url }).getSubscription('proxy-scheme-1'), 'network');
    error.message.should.containEql(`write its URL as ${squid.url}`);
  });

  it('a proxy URL whose password holds a bare % (not URL-encoded) is invalid input naming the variable, with no socket left open nor a crash', async () => {
    // Before: https-proxy-agent opened its socket to the proxy, then threw decoding the password and
    // left the socket without an error listener: with the proxy down, the ECONNREFUSED was an
    // uncaught 'error' event (Node-RED exits); with it up, one socket stayed open per call.
    const closed = net.createServer();
    await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    const uncaught = [];
    const onUncaught = (err) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      process.env.https_proxy = `http://u:50%off-${PROXY_PASSWORD}@127.0.0.1:${port}`;
      const error = await expectError(client({ baseUrl: secure.url }).getSubscription('proxy-percent-1'), 'invalid-input');
      error.field.should.equal('https_proxy');
      error.message.should.match(/must be URL-encoded: write % as %25/);
      serialise(error).should.not.containEql(PROXY_PASSWORD);
      // The automatic login says the same (before: "could not be reached", with the login's backoff).
      const login = await expectError(client({ baseUrl: secure.url, cookie: '', login: { preset: 'utility', username: LOGIN.name, password: LOGIN.password } }).login(), 'invalid-input');
      login.field.should.equal('https_proxy');
      await new Promise((resolve) => setImmediate(resolve));
      // A refused connection's error would have arrived by now: the loopback answers at once.
      await new Promise((resolve) => net.connect(port, '127.0.0.1').on('error', resolve));
      uncaught.should.eql([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      delete process.env.https_proxy;
    }
  });

  it('a proxy that refuses the CONNECT (as many do for ports other than 443) gives a network error saying so, not "the server answered"', async () => {
    const strict = await startSquid({ accessFirst: ['acl SSL_ports port 443', 'http_access deny CONNECT !SSL_ports'] });
    try {
      const error = await expectError(client({ baseUrl: secure.url, proxy: { url: strict.url } }).getSubscription('proxy-tunnel-1'), 'network');
      error.code.should.equal('PROXY_TUNNEL_REFUSED');
      error.status.should.equal(403);
      error.message.should.containEql(`the HTTP proxy ${strict.url} refused to open a tunnel (CONNECT) to ${secure.url}`);
      const download = await expectError(client({ baseUrl: secure.url, proxy: { url: strict.url } }).downloadToBuffer({ fuid: 1 }), 'network');
      download.code.should.equal('PROXY_TUNNEL_REFUSED');
      // The automatic login too. Before: "answered HTTP 403 (user name or password refused)", a
      // refused password (the login then waits longer each time, as against a lock-out).
      const login = await expectError(client({ baseUrl: secure.url, cookie: '', proxy: { url: strict.url },
        login: { preset: 'utility', username: LOGIN.name, password: LOGIN.password } }).login(), 'auth');
      login.credentialsRefused.should.be.false();
      login.message.should.containEql(`the HTTP proxy ${strict.url} refused to open a tunnel (CONNECT) to ${secure.url}`);
      login.message.should.not.match(/password refused/);
    } finally {
      await strict.stop();
    }
  });

  it('an http proxy setting\'s own no-proxy list decides, not the environment\'s', async () => {
    process.env.no_proxy = '*';
    await client({ baseUrl: plain.url, proxy: { url: squid.url, noProxy: ['intranet.example'] } })
      .registerSubscription('proxy-node-1', { callback: 'http://127.0.0.1:1/x' });
    await squid.waitForLog((l) => l.includes('/subscribe/proxy-node-1'));
    await client({ baseUrl: plain.url, proxy: { url: squid.url, noProxy: 'intranet.example,127.0.0.1' } })
      .registerSubscription('proxy-node-2', { callback: 'http://127.0.0.1:1/x' });
    await markerThrough(squid);
    (await squid.accessLog()).join('\n').should.not.containEql('proxy-node-2');
  });

  it('automatic login goes through the proxy, and its own URL gets its own decision (a login host in no_proxy goes direct)', async () => {
    const api = client({ baseUrl: plain.url, cookie: '', proxy: { url: authSquid.url, username: PROXY_USER, password: PROXY_PASSWORD },
      login: { preset: 'utility', username: LOGIN.name, password: LOGIN.password } });
    await api.registerSubscription('proxy-login-1', { callback: 'http://127.0.0.1:1/x' });
    const [loginLine] = await authSquid.waitForLog((l) => l.includes('/command?'));
    loginLine.should.containEql(` GET ${plain.url}/command?`);
    // The login on another port of the host (as the vendor's management server on 8443): a stand-in
    // answering the utility call with a session the emulator knows. The no-proxy list names that
    // port: the login goes direct, the API calls still through the proxy.
    let loginCalls = 0;
    const management = http.createServer((req, res) => {
      loginCalls += 1;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ success: true, zm_cookie: COOKIES.editor }));
    });
    await new Promise((resolve) => management.listen(0, '127.0.0.1', resolve));
    try {
      const loginPort = management.address().port;
      const split = client({ baseUrl: plain.url, cookie: '', proxy: { url: authSquid.url, username: PROXY_USER, password: PROXY_PASSWORD, noProxy: [`127.0.0.1:${loginPort}`] },
        login: { preset: 'utility', url: `http://127.0.0.1:${loginPort}/command`, username: LOGIN.name, password: LOGIN.password } });
      await split.registerSubscription('proxy-login-2', { callback: 'http://127.0.0.1:1/x' });
      loginCalls.should.equal(1);
      await authSquid.waitForLog((l) => l.includes('/subscribe/proxy-login-2'));
      await markerThrough(authSquid);
      (await authSquid.accessLog()).filter((l) => l.includes(`:${loginPort}/`)).should.eql([]);
    } finally {
      management.close();
    }
    // A proxy refusing the login's request is kind proxy, not a failed login (no login backoff).
    const refused = client({ baseUrl: plain.url, cookie: '', proxy: { url: authSquid.url, username: PROXY_USER, password: 'bad-Proxy-Pw-1' },
      login: { preset: 'utility', username: LOGIN.name, password: LOGIN.password } });
    const error = await expectError(refused.login(), 'proxy');
    error.status.should.equal(407);
  });

  it('the transfer worker (upload and downloadToFile of 4 MiB or more) goes through the proxy too', async () => {
    const file = path.join(dir, 'five-mib.bin');
    await fsp.writeFile(file, Buffer.alloc(5 * 1024 * 1024, 7));
    const api = client({ baseUrl: plain.url, transferThread: 'worker', proxy: { url: authSquid.url, username: PROXY_USER, password: PROXY_PASSWORD } });
    const result = await api.upload({ file: { path: file }, name: 'proxy-worker.bin', destination: '/inbox', wait: true });
    result.fuids.length.should.equal(1);
    await authSquid.waitForLog((l) => l.includes(` POST ${plain.url}/review/api/asset/upload`));
    const fuid = result.fuids[0];
    const saved = await api.downloadToFile({ fuid, path: path.join(dir, 'back.bin') });
    saved.bytes.should.equal(5 * 1024 * 1024);
    // (squid logs URLs without their query)
    await authSquid.waitForLog((l) => l.includes(` GET ${plain.url}/review/api/asset/download`));
    // And from the environment: the worker shares it.
    process.env.http_proxy = squid.url;
    const envApi = client({ baseUrl: plain.url, transferThread: 'worker' });
    await envApi.upload({ file: { path: file }, name: 'proxy-worker-env.bin', destination: '/inbox' });
    await squid.waitForLog((l) => l.includes(` POST ${plain.url}/review/api/asset/upload`));
  });
});
