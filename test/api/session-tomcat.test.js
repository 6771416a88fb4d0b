'use strict';
// The form login preset against a real servlet container: embedded Tomcat 10 (Debian's
// libtomcat10-java, Java 17) with Tomcat's own FormAuthenticator (fixtures/FormLoginServer.java).
// A servlet form login accepts a login only for a session that exists, and changes the session id
// on login: the preset's session page (GET /review/) and "the last Set-Cookie wins" are what make
// it work. Sessions are then expired on the server; the client logs in again by itself.
require('should');
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { AssetClient } = require('../../dist/api/client');
const { expectError } = require('./helpers');

const USER = 'tomcat-robot';
const PASSWORD = 'Tomcat-Pass-6d2e9a';

function startFormLoginServer(baseDir, extra = []) {
  const jars = fs.readdirSync('/usr/share/java').filter((f) => /^tomcat10-.*\.jar$/.test(f)).map((f) => path.join('/usr/share/java', f));
  const child = spawn('java', ['-cp', jars.join(':'), path.join(__dirname, 'fixtures', 'FormLoginServer.java'), USER, PASSWORD, baseDir, ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const m = /PORT (\d+)/.exec(output);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}` });
    });
    child.stderr.on('data', (chunk) => { output += chunk; });
    child.on('exit', (code) => reject(new Error(`the Tomcat fixture exited (${code}):\n${output.slice(-2000)}`)));
  });
}

describe('form login preset against a real servlet container (Tomcat 10)', function () {
  this.timeout(60000);
  let server;
  let dir;
  const clients = [];
  const client = (options) => { const c = new AssetClient({ baseUrl: server.url, cookie: '', timeout: 10000, ...options }); clients.push(c); return c; };
  const expireAll = async () => (await (await fetch(`${server.url}/review/test/expire`)).json()).expired;

  before(async function () {
    const jarsThere = fs.existsSync('/usr/share/java/tomcat10-catalina.jar');
    if (!jarsThere && process.env.CI !== 'true') { console.log('    SKIPPED: libtomcat10-java is not installed (.ci/run installs it)'); this.skip(); }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-tomcat-'));
    server = await startFormLoginServer(dir);
  });
  after(async function () {
    for (const c of clients) c.close();
    if (server) { server.child.kill(); await new Promise((r) => server.child.once('exit', r)); }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('logs in through GET /review/ then POST j_security_check, and again after the server expired the session', async function () {
    const c = client({ login: { preset: 'form', username: USER, password: PASSWORD } });
    const renewed = [];
    c.on('session-renewed', () => renewed.push(c.sessionCookie));
    (await c.getSubscription('tomcat-sub-0001')).user.should.equal(USER);
    (await expireAll()).should.be.above(0);
    (await c.getSubscription('tomcat-sub-0001')).user.should.equal(USER);
    renewed.length.should.equal(2);
    renewed[0].should.not.equal(renewed[1]);
    renewed.forEach((cookie) => cookie.should.match(/^JSESSIONID=[0-9A-F]{32}$/));
  });

  it('without the session page, the container does not log in: the 401 right after the login says so', async function () {
    const c = client({ login: { url: '/review/j_security_check', method: 'POST', fieldsIn: 'form', fields: 'j_username={{username}}\nj_password={{password}}',
      sessionFrom: 'set-cookie', sessionName: 'JSESSIONID', username: USER, password: PASSWORD } });
    const err = await expectError(c.getSubscription('tomcat-sub-0002'), 'auth');
    err.message.should.match(/HTTP 401\) again right after an automatic login/);
  });

  it('a wrong password: the container shows its error page, no session: auth naming the login answer', async function () {
    const c = client({ login: { preset: 'form', username: USER, password: 'Wrong-Tomcat-Pass-1' } });
    const err = await expectError(c.getSubscription('tomcat-sub-0003'), 'auth');
    err.message.should.match(/login failed, next try in 5 s: login answer: HTTP 200 without a Set-Cookie named JSESSIONID/);
    err.message.should.not.containEql('Wrong-Tomcat-Pass-1');
  });
});

describe('form login whose pre-login session is lost: Tomcat answers 408, retried at once, once (Tomcat 10, no landing page)', function () {
  this.timeout(60000);
  let server;
  let dir;
  const clients = [];
  const client = (options) => { const c = new AssetClient({ baseUrl: server.url, cookie: '', timeout: 10000, ...options }); clients.push(c); return c; };
  const call = async (what) => (await (await fetch(`${server.url}/review/test/${what}`)).json());

  before(async function () {
    const jarsThere = fs.existsSync('/usr/share/java/tomcat10-catalina.jar');
    if (!jarsThere && process.env.CI !== 'true') { console.log('    SKIPPED: libtomcat10-java is not installed (.ci/run installs it)'); this.skip(); }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-tomcat-408-'));
    server = await startFormLoginServer(dir, ['no-landing']);
  });
  after(async function () {
    for (const c of clients) c.close();
    if (server) { server.child.kill(); await new Promise((r) => server.child.once('exit', r)); }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the session lost once between GET /review/ and POST j_security_check: the login is repeated at once and the call succeeds', async function () {
    // The container's own answer to a lost pre-login session, first without our client.
    await call('lose-sessions?n=1');
    const page = await fetch(`${server.url}/review/`);
    const cookie = /JSESSIONID=[^;]+/.exec(page.headers.get('set-cookie'))[0];
    const raw = await fetch(`${server.url}/review/j_security_check`, {
      method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
      body: new URLSearchParams({ j_username: USER, j_password: PASSWORD }).toString()
    });
    raw.status.should.equal(408);

    const c = client({ login: { preset: 'form', username: USER, password: PASSWORD } });
    const pagesBefore = (await call('pages')).pages;
    await call('lose-sessions?n=1');
    (await c.getSubscription('tomcat-sub-0408')).user.should.equal(USER);
    ((await call('pages')).pages - pagesBefore).should.equal(2, 'two login pages: the lost one and the retry');
  });

  it('lost twice in a row: retried once only, then the usual failed login (HTTP 408 named, no password)', async function () {
    const c = client({ login: { preset: 'form', username: USER, password: PASSWORD } });
    const pagesBefore = (await call('pages')).pages;
    await call('lose-sessions?n=5');
    const err = await expectError(c.getSubscription('tomcat-sub-0409'), 'auth');
    err.message.should.match(/login failed, next try in 5 s: login request: .* answered HTTP 408/);
    err.message.should.not.containEql(PASSWORD);
    ((await call('pages')).pages - pagesBefore).should.equal(2, 'one retry, not more');
    await call('lose-sessions?n=0');
  });
});
