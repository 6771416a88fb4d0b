'use strict';
// "Test connection" sent the saved cookie (and the saved password, in a login) to the deployed base
// URL with certificate checks turned off in the dialog (or another TLS configuration chosen), where
// the deployed node itself refuses that server's certificate: whoever sits between could read them.
// Now saved secrets go only with the deployed node's TLS settings too.
// Real Node-RED (test/e2e/lib/browser-node-red.js) and an HTTPS server with a self-signed certificate.
require('should');
const fs = require('fs');
const https = require('https');
const path = require('path');
const { startNodeRed } = require('../e2e/lib/browser-node-red');

const fixtures = path.join(__dirname, 'fixtures');
const SAVED = '__PWRD__';
const COOKIE = 'tls-saved-cookie-Rq81';
const PASSWORD = 'tls-saved-password-Vm52';
const IDS = { tab: 'ctl0000000000000', cookie: 'ctl0000000000001', login: 'ctl0000000000002' };

describe('Test connection: saved secrets only with the deployed TLS settings', function () {
  this.timeout(60000);
  let nr, server, baseUrl;
  /** Every request the HTTPS server got: its URL and cookie. */
  const seen = [];

  before(async function () {
    this.timeout(90000);
    server = https.createServer({ key: fs.readFileSync(path.join(fixtures, 'tls-key.pem')), cert: fs.readFileSync(path.join(fixtures, 'tls-cert.pem')) }, (req, res) => {
      seen.push(`${req.url} ${req.headers.cookie || ''}`);
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(req.url.startsWith('/command') ? JSON.stringify({ zm_cookie: 'from-login' }) : JSON.stringify({ success: false, error: 'no such id' }));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `https://127.0.0.1:${server.address().port}`;
    nr = await startNodeRed();
    const res = await nr.deploy([
      { id: IDS.tab, type: 'tab', label: 'tls' },
      // Another TLS configuration, trusting this server's certificate: still not the deployed node's choice.
      { id: 'ctl00000000000ff', type: 'tls-config', cert: '', key: '', ca: path.join(fixtures, 'tls-cert.pem'), verifyservercert: true, servername: '', alpnprotocol: '' },
      { id: IDS.cookie, type: 'asset-server', name: 'cookie', baseUrl, timeout: 10, rejectUnauthorized: true, credentials: { cookie: COOKIE } },
      { id: IDS.login, type: 'asset-server', name: 'login', baseUrl, timeout: 10, rejectUnauthorized: true, loginEnabled: true, loginPreset: 'utility',
        credentials: { username: 'robot', password: PASSWORD } }
    ]);
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (server) server.close();
  });

  async function connectionTest(values) {
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ timeout: '10', tls: '', baseUrl, ...values })
    });
    res.status.should.equal(200);
    return res.json();
  }
  const secretsSeen = () => seen.filter((line) => line.includes(COOKIE) || line.includes(PASSWORD));

  it('the saved cookie with certificate checks off, or with another TLS configuration: "type the cookie again", nothing sent', async function () {
    for (const changed of [{ rejectUnauthorized: false }, { rejectUnauthorized: true, tls: 'ctl00000000000ff' }]) {
      const report = await connectionTest({ id: IDS.cookie, cookie: SAVED, ...changed });
      report.should.containEql({ result: 'config', part: 'cookie' }, JSON.stringify(changed));
      report.message.should.match(/type the cookie again/);
    }
    secretsSeen().should.eql([]);
  });

  it('the saved password with certificate checks off: "type the password again", nothing sent', async function () {
    const report = await connectionTest({ id: IDS.login, rejectUnauthorized: false, loginEnabled: true, loginPreset: 'utility', username: 'robot', password: SAVED });
    report.should.containEql({ result: 'config', part: 'password' });
    secretsSeen().should.eql([]);
  });

  it('a typed cookie with certificate checks off is the user\'s own choice: sent', async function () {
    (await connectionTest({ id: IDS.cookie, cookie: 'typed-cookie-1', rejectUnauthorized: false })).result.should.equal('ok');
    seen.some((line) => line.includes('typed-cookie-1')).should.be.true();
  });
});
