'use strict';
// TLS options (custom CA, reject-unauthorized switch) against a real HTTPS server with a
// self-signed test certificate (fixtures/, valid for 127.0.0.1), and a caller's own agent.
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { COOKIES, startTestEmulator, expectError, seenErrors, assertNoCookieIn } = require('./helpers');

const cert = fs.readFileSync(path.join(__dirname, 'fixtures/test-server-cert.pem'));
const key = fs.readFileSync(path.join(__dirname, 'fixtures/test-server-key.pem'));

describe('api client: TLS options and agents', () => {
  let server;
  let url;
  let cookiesSeen;
  before(async () => {
    cookiesSeen = [];
    server = https.createServer({ key, cert }, (req, res) => {
      cookiesSeen.push(req.headers.cookie);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: true, id: 'tls-test-1', subscription: { callback: 'https://x/' } }));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${server.address().port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('refuses a certificate it cannot verify: kind network naming TLS, cookie never sent', async () => {
    const api = new AssetClient({ baseUrl: url, cookie: COOKIES.editor });
    const error = await expectError(api.getSubscription('tls-test-1'), 'network');
    error.message.should.match(/TLS failed/);
    error.code.should.match(/SELF_SIGNED|UNABLE_TO_VERIFY/);
    cookiesSeen.should.eql([]);
    api.close();
  });

  it('https:// to a port that speaks plain HTTP: kind network saying so and what to write, not OpenSSL\'s text', async () => {
    // A new-user audit: "write EPROTO 806C…:error:0A00010B:SSL routines:ssl3_get_record:wrong version number".
    const plain = http.createServer((req, res) => res.end('{}'));
    await new Promise((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const api = new AssetClient({ baseUrl: `https://127.0.0.1:${plain.address().port}`, cookie: COOKIES.editor });
    try {
      const error = await expectError(api.getSubscription('tls-test-1'), 'network');
      error.message.should.match(/does not answer TLS \(https\) on this port/);
      error.message.should.match(new RegExp(`http://127\\.0\\.0\\.1:${plain.address().port}`));
      error.message.should.not.match(/ssl3_get_record|deps\/openssl/);
    } finally {
      api.close();
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
    }
  });

  it('trusts the server with a custom CA', async () => {
    const api = new AssetClient({ baseUrl: url, cookie: COOKIES.editor, ca: cert.toString() });
    (await api.getSubscription('tls-test-1')).id.should.equal('tls-test-1');
    api.close();
    cookiesSeen.should.eql([`JSESSIONID=${COOKIES.editor}`]);
  });

  it('accepts any certificate with rejectUnauthorized false', async () => {
    const api = new AssetClient({ baseUrl: url, cookie: COOKIES.editor, rejectUnauthorized: false });
    (await api.getSubscription('tls-test-1')).success.should.be.true();
    api.close();
  });

  it('uses a caller\'s agent and leaves it alone on close()', async () => {
    const agent = new https.Agent({ keepAlive: true, ca: cert });
    const api = new AssetClient({ baseUrl: url, cookie: COOKIES.editor, agent });
    await api.getSubscription('tls-test-1');
    await api.getSubscription('tls-test-1');
    api.close();
    // Still usable after the client closed.
    await new AssetClient({ baseUrl: url, cookie: COOKIES.editor, agent }).getSubscription('tls-test-1');
    agent.destroy();
  });

  it('a keep-alive http agent works against the emulator', async () => {
    const emu = await startTestEmulator();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    const api = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, agent });
    try {
      await Promise.all(Array.from({ length: 6 }, (_, i) => api.registerSubscription(`agent-test-${i}`, { callback: 'http://127.0.0.1:1/x' })));
      (await api.getSubscription('agent-test-5')).id.should.equal('agent-test-5');
    } finally {
      api.close();
      agent.destroy();
      await emu.close();
    }
  });
});

describe('api tls: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(0);
    assertNoCookieIn(seenErrors);
  });
});
