'use strict';
require('should');
const fs = require('fs');
const path = require('path');
const http = require('http');
const https = require('https');
const s = require('./nodes-support');
const { helper } = s;
const { AssetClient } = require('../../dist/api/client');

const fixtures = path.join(__dirname, 'fixtures');
const TLS_KEY = fs.readFileSync(path.join(fixtures, 'tls-key.pem'));
const TLS_CERT = fs.readFileSync(path.join(fixtures, 'tls-cert.pem'));

/** An HTTPS front of the emulator (self-signed certificate), so TLS settings can be exercised. */
function httpsFront(target) {
  const upstream = new URL(target);
  const server = https.createServer({ key: TLS_KEY, cert: TLS_CERT }, (req, res) => {
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, answer => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({
    url: `https://127.0.0.1:${server.address().port}`,
    close: () => new Promise(done => { server.closeAllConnections(); server.close(done); })
  })));
}

const exportProps = { fuid: '1', fuidType: 'num' };

describe('asset-server config node', function () {
  let emulator;
  let front;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    front = await httpsFront(emulator.url);
  });
  after(async function () {
    if (front) await front.close();
    if (emulator) await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  it('exposes one shared client, baseUrl and publicBaseUrl, and closes the client on close', async function () {
    const flowNodes = s.flow('asset-export', exportProps, { baseUrl: ` ${emulator.url} `, publicBaseUrl: 'http://nr.example:1880' });
    flowNodes.push({ id: 'n2', type: 'asset-upload', z: 'f1', x: 100, y: 160, server: 'server', wires: [] });
    await s.load(flowNodes);
    const server = helper.getNode('server');
    server.client.should.be.an.instanceOf(AssetClient);
    server.getClient().should.equal(server.client);
    server.baseUrl.should.equal(emulator.url);
    server.publicBaseUrl.should.equal('http://nr.example:1880');
    await helper.unload();
    (server.client === undefined).should.be.true();
  });

  it('publicBaseUrl is an empty string when not set', async function () {
    await s.load(s.flow('asset-export', exportProps, { baseUrl: emulator.url }));
    helper.getNode('server').publicBaseUrl.should.equal('');
  });

  it('takes the cookie from ${ENV_VAR}', async function () {
    process.env.DAM_TEST_COOKIE = 'JSESSIONID=local-dev';
    try {
      await s.load(s.flow('asset-subscribe', { action: 'register', subscriptionId: 'env-cookie-test', callback: 'http://127.0.0.1:9/x' }, { baseUrl: emulator.url }),
        s.credentials('${DAM_TEST_COOKIE}'));
      const msg = await s.run({});
      msg.payload.success.should.be.true();
    } finally {
      delete process.env.DAM_TEST_COOKIE;
    }
  });

  it('a cookie ${ENV_VAR} whose variable is not set: a warning and an error per request naming the variable (not sent as the cookie); a cookie a flow sets works', async function () {
    // A new-user audit: the examples suggest ${DAM_COOKIE}; without the variable, Node-RED left
    // the text as it was, it went out as the cookie, and every call said "cookie rejected".
    delete process.env.DAM_TEST_UNSET_COOKIE;
    const flowNodes = s.flow('asset-export', exportProps, { baseUrl: emulator.url });
    flowNodes.push({ id: 'session1', type: 'asset-session', z: 'f1', server: 'server', cookie: 'payload', cookieType: 'msg', wires: [[]] });
    await helper.load([...Object.values(s.nodes), require('../../nodes/asset-session.js')], flowNodes, s.credentials('${DAM_TEST_UNSET_COOKIE}'));
    const server = helper.getNode('server');
    server.warn.args.map((a) => String(a[0])).join('\n').should.match(/Cookie: reads the environment variable DAM_TEST_UNSET_COOKIE, which is not set/);
    server.error.called.should.be.false();
    const caught = await s.runFailing({});
    caught.assetError.should.containEql({ kind: 'invalid-input', field: 'cookie' }); // not sent: an auth error else
    caught.error.message.should.match(/DAM_TEST_UNSET_COOKIE, which is not set .*asset-session/);
    // The README's way with a cookie from elsewhere (example 08): a flow sets it.
    helper.getNode('session1').receive({ payload: 'local-dev' });
    while (!server.client.hasSession) await s.delay(10);
    const exported = await s.run({});
    exported.payload.should.be.ok();
  });

  describe('a configuration error names the field on every message, without the cookie', function () {
    const cases = [
      ['a missing cookie (not a configuration error any more: each request says so)', { baseUrl: 'http://127.0.0.1:1' }, '', /cookie/],
      ['a missing base URL', { baseUrl: '' }, 'JSESSIONID=secret-value-1', /baseUrl/],
      ['a base URL that is not http(s)', { baseUrl: 'ftp://dam.example' }, 'JSESSIONID=secret-value-1', /baseUrl/],
      ['a negative timeout', { baseUrl: 'http://127.0.0.1:1', timeout: -3 }, 'JSESSIONID=secret-value-1', /timeout/],
      ['a missing tls-config node', { baseUrl: 'https://127.0.0.1:1', tls: 'nope' }, 'JSESSIONID=secret-value-1', /tls/]
    ];
    for (const [title, serverProps, cookie, field] of cases) {
      it(title, async function () {
        await s.load(s.flow('asset-export', exportProps, serverProps), s.credentials(cookie));
        const caught = await s.runFailing({});
        caught.assetError.kind.should.equal('invalid-input');
        caught.assetError.field.should.match(field);
        (s.serialise(caught) + s.loggedText()).should.not.containEql('secret-value-1');
      });
    }
  });

  describe('TLS', function () {
    it('rejects a self-signed server certificate by default (kind network)', async function () {
      await s.load(s.flow('asset-export', exportProps, { baseUrl: front.url }));
      const caught = await s.runFailing({});
      caught.assetError.kind.should.equal('network');
    });

    it('accepts it with reject-unauthorized cleared', async function () {
      await s.load(s.flow('asset-export', exportProps, { baseUrl: front.url, rejectUnauthorized: false }));
      // fuid 1 is the root folder: any answer from the server proves the TLS handshake passed.
      const r = await (async () => { const p = s.outcome(); helper.getNode('n1').receive({}); return p; })();
      if (r.caught) r.caught.assetError.kind.should.not.equal('network');
    });

    it('trusts the CA of a tls-config node (verify on)', async function () {
      const flowNodes = s.flow('asset-subscribe', { action: 'register', subscriptionId: 'tls-config-test', callback: 'http://127.0.0.1:9/x' },
        { baseUrl: front.url, tls: 'tls1', rejectUnauthorized: true });
      flowNodes.push({ id: 'tls1', type: 'tls-config', cert: '', key: '', ca: path.join(fixtures, 'tls-cert.pem'), verifyservercert: true, servername: '', alpnprotocol: '' });
      await s.load(flowNodes);
      const msg = await s.run({});
      msg.payload.success.should.be.true();
    });

    it('a tls-config node with verify off overrides the checkbox', async function () {
      const flowNodes = s.flow('asset-subscribe', { action: 'register', subscriptionId: 'tls-config-off', callback: 'http://127.0.0.1:9/x' },
        { baseUrl: front.url, tls: 'tls1', rejectUnauthorized: true });
      flowNodes.push({ id: 'tls1', type: 'tls-config', cert: '', key: '', ca: '', verifyservercert: false, servername: '', alpnprotocol: '' });
      await s.load(flowNodes);
      const msg = await s.run({});
      msg.payload.success.should.be.true();
    });
  });

  it('a timeout (seconds) turns a silent server into kind timeout', async function () {
    const silent = http.createServer(() => { /* never answers */ });
    await new Promise(resolve => silent.listen(0, '127.0.0.1', resolve));
    try {
      await s.load(s.flow('asset-export', exportProps, { baseUrl: `http://127.0.0.1:${silent.address().port}`, timeout: 0.5 }));
      const started = Date.now();
      const caught = await s.runFailing({});
      caught.assetError.kind.should.equal('timeout');
      (Date.now() - started).should.be.below(5000);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
