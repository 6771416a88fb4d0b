'use strict';
// Issue 22 items 3 and 6: "Test connection" (admin route POST /dam-assets/connection-test, real
// Node-RED) cannot be used as a request forger by a user with asset-server.write:
// - a base URL ending in ? or # (which would let the caller choose the whole request path), or
//   holding user:password@, is refused naming the base URL; nothing is sent;
// - the JSON error text of whatever answers (an internal service) is not echoed, only our own words;
// - a session obtained from a login URL on one host is never sent to a base URL on another.
require('should');
const http = require('http');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { AssetClient } = require('../../dist/api/client');

const INTERNAL_TEXT = 'internal-service-detail-Zx81Q';
const INTERNAL_COOKIE = 'internal-cookie-Hq42Lm9';
const USERINFO_PASSWORD = 'userinfo-pw-Kd83Ne';

describe('Test connection is no request forger (issue 22 items 3 and 6)', function () {
  this.timeout(60000);
  let nr, internal;
  /** Every request the internal service got. */
  const seen = [];
  const answers = [];

  before(async function () {
    this.timeout(90000);
    internal = http.createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, cookie: req.headers.cookie || '' });
      const send = (status, body, headers = {}) => { res.writeHead(status, { 'Content-Type': 'application/json', ...headers }); res.end(JSON.stringify(body)); };
      if (req.url.startsWith('/login')) return send(200, { zm_cookie: INTERNAL_COOKIE }, { 'Set-Cookie': `JSESSIONID=${INTERNAL_COOKIE}` });
      if (req.url.startsWith('/failing-login')) return send(500, { error: `${INTERNAL_TEXT} login` });
      if (req.url.startsWith('/permission')) return send(200, { success: false, error: `permission denied: ${INTERNAL_TEXT} permission` });
      if (req.url.startsWith('/forbidden')) return send(403, { error: `${INTERNAL_TEXT} 403` });
      return send(500, { success: false, error: `${INTERNAL_TEXT} 500` });
    });
    await new Promise((resolve) => internal.listen(0, '127.0.0.1', resolve));
    nr = await startNodeRed();
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (internal) internal.close();
  });

  afterEach(function () {
    answers.join('\n').should.not.containEql(INTERNAL_TEXT).and.not.containEql(INTERNAL_COOKIE).and.not.containEql(USERINFO_PASSWORD);
    nr.output().should.not.containEql(USERINFO_PASSWORD).and.not.containEql(INTERNAL_COOKIE);
  });

  const internalUrl = () => `http://127.0.0.1:${internal.address().port}`;

  async function connectionTest(values) {
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ timeout: '5', rejectUnauthorized: true, tls: '', cookie: 'some-cookie', ...values })
    });
    const text = await res.text();
    answers.push(text);
    res.status.should.equal(200, text);
    return JSON.parse(text);
  }

  it('a base URL ending in ? or #, or with a query or fragment: refused naming the base URL, nothing sent', async function () {
    const before = seen.length;
    for (const tail of ['/?', '/#', '?', '#', '/x?y=1', '/#/review']) {
      const report = await connectionTest({ baseUrl: `${internalUrl()}${tail}` });
      report.should.containEql({ result: 'config', part: 'baseUrl' });
      report.message.should.match(/^must not have a query \(\?\) or fragment \(#\)/); // the part, baseUrl, is said once (issue 23 #5)
    }
    seen.length.should.equal(before);
  });

  it('a base URL with user:password@: refused naming the base URL, the password not echoed, nothing sent', async function () {
    const before = seen.length;
    const report = await connectionTest({ baseUrl: `http://robot:${USERINFO_PASSWORD}@127.0.0.1:${internal.address().port}` });
    report.should.containEql({ result: 'config', part: 'baseUrl' });
    report.message.should.match(/^must not hold a user name or password/); // the part, baseUrl, is said once (issue 23 #5)
    seen.length.should.equal(before);
  });

  it('an internal service answering with a JSON error: our own words only, not its text', async function () {
    for (const path of ['', '/forbidden', '/permission']) {
      const report = await connectionTest({ baseUrl: `${internalUrl()}${path}` });
      ['http', 'permission'].should.containEql(report.result);
      report.message.should.not.containEql(INTERNAL_TEXT);
    }
  });

  it('a login server on the same host answering a JSON error: the login fails in our own words, not its text', async function () {
    const report = await connectionTest({
      baseUrl: internalUrl(), loginEnabled: true, loginPreset: 'utility', loginUrl: `${internalUrl()}/failing-login`,
      username: 'robot', password: 'a-typed-password'
    });
    report.result.should.equal('login', report.message);
    report.message.should.match(/answered HTTP 500/);
  });

  it('a login URL on another host than the base URL: refused naming the login URL; its session is never sent on', async function () {
    const before = seen.length;
    for (const [loginUrl, loginSessionUrl] of [[`${internalUrl()}/login`, ''], ['/command', `${internalUrl()}/login`]]) {
      const report = await connectionTest({
        baseUrl: `http://localhost:${internal.address().port}`, loginEnabled: true, loginPreset: 'utility', loginUrl, loginSessionUrl,
        username: 'robot', password: 'a-typed-password'
      });
      report.should.containEql({ result: 'config', part: 'login' });
      report.message.should.match(/login\.(url|sessionUrl): must be on the base URL's host \(localhost\)/);
    }
    seen.slice(before).should.eql([]);
  });

  it('the client refuses the same base URLs (every node, not only the dialog)', function () {
    for (const baseUrl of ['http://h:1/?', 'http://h:1/#', 'http://h:1?', `http://u:${USERINFO_PASSWORD}@h:1`, 'http://u@h:1']) {
      let error;
      try { new AssetClient({ baseUrl, cookie: 'c' }).close(); } catch (err) { error = err; }
      (error !== undefined).should.be.true(baseUrl);
      error.kind.should.equal('invalid-input');
      error.field.should.equal('baseUrl');
      error.message.should.not.containEql(USERINFO_PASSWORD);
    }
    let hostError;
    try {
      new AssetClient({ baseUrl: 'http://dam.example:8873', cookie: 'c', login: { preset: 'utility', url: 'http://intranet.example/login', username: 'u', password: 'p1234' } });
    } catch (err) { hostError = err; }
    hostError.field.should.equal('login.url');
    new AssetClient({ baseUrl: 'http://dam.example:8873', cookie: 'c', login: { preset: 'utility', url: 'https://DAM.example:8443/command', username: 'u', password: 'p1234' } }).close();
  });
});
