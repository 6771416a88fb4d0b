'use strict';
// Sessions in the client (README "Sessions"): a cookie set at run time, automatic login through
// both presets against the emulator's login endpoints, one login for all requests that met a 401,
// each request repeated once (a one-shot stream upload is not), the failed step named, a backoff
// after a failed login, and no secret in any error.
const should = require('should');
const fs = require('fs');
const path = require('path');
const { Readable } = require('stream');
const { AssetClient } = require('../../dist/api/client');
const { AssetApiError } = require('../../dist/api/errors');
const { startTestEmulator, expectError, tempDir, COOKIES } = require('./helpers');

const USER = { name: 'robot', password: 'Pass-Word-c0ffee-91x', permissions: ['events', 'add'] };

function text(err) { return `${err.message} ${JSON.stringify(err)} ${require('util').inspect(err)}`; }

describe('client sessions', function () {
  let emu;
  let dir;
  const clients = [];
  function client(options) {
    const c = new AssetClient({ baseUrl: emu.url, cookie: '', timeout: 5000, ...options });
    clients.push(c);
    return c;
  }

  before(async function () {
    emu = await startTestEmulator({ users: [USER] });
    dir = await tempDir();
  });
  after(async function () {
    for (const c of clients) c.close();
    await emu.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('setCookie: the next request uses the new cookie, and cookie-set is emitted without it', async function () {
    const c = client({ cookie: COOKIES.wrong });
    await expectError(c.registerSubscription('sess-setcookie-1', { callback: 'http://127.0.0.1:9/x' }), 'auth');
    const events = [];
    c.on('cookie-set', (...args) => events.push(args));
    const before = emu.emulator.requestsWith(COOKIES.editor);
    c.setCookie(COOKIES.editor);
    await c.registerSubscription('sess-setcookie-1', { callback: 'http://127.0.0.1:9/x' });
    emu.emulator.requestsWith(COOKIES.editor).should.equal(before + 1);
    events.should.eql([[]]);
    c.sessionCookie.should.equal(`JSESSIONID=${COOKIES.editor}`);
    const err = await expectError(() => c.setCookie(''), 'invalid-input');
    err.field.should.equal('cookie');
  });

  it('without login, a 401 is an auth error that names both fixes', async function () {
    const c = client({ cookie: COOKIES.wrong });
    const err = await expectError(c.getSubscription('sess-nologin-1'), 'auth');
    err.message.should.match(/asset-session node/).and.match(/automatic login/);
  });

  for (const preset of ['utility', 'form']) {
    it(`preset ${preset}: logs in once for many requests that met a 401, repeats each once, emits session-renewed`, async function () {
      const c = client({ cookie: COOKIES.wrong, login: { preset, username: USER.name, password: USER.password } });
      const renewed = [];
      c.on('session-renewed', (...args) => renewed.push(args));
      const logins = emu.emulator.sessionStats().logins;
      const results = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => c.registerSubscription(`sess-${preset}-${i}-abcd`, { callback: 'http://127.0.0.1:9/x' })),
        c.upload({ file: { buffer: Buffer.from('hello') }, name: `${preset}.txt`, destination: '/sessions', wait: true })
      ]);
      results.forEach((r) => (r.result || r).success.should.be.true());
      emu.emulator.sessionStats().logins.should.equal(logins + 1, 'one login for all');
      renewed.should.eql([[]]);
      c.sessionCookie.should.startWith('JSESSIONID=').and.not.containEql(COOKIES.wrong);
      const value = c.sessionCookie.slice('JSESSIONID='.length);
      emu.emulator.requestsWith(value).should.equal(9);
    });
  }

  it('starts without a cookie: the first request logs in', async function () {
    const c = client({ login: { preset: 'utility', username: USER.name, password: USER.password } });
    (await c.getSubscription('sess-form-0-abcd')).success.should.be.true();
  });

  it('an expired session mid-run: a download, an export and a path upload are repeated after the login', async function () {
    const c = client({ login: { preset: 'form', username: USER.name, password: USER.password } });
    const file = path.join(dir, 'repeat.txt');
    fs.writeFileSync(file, 'repeat me');
    const up = await c.upload({ file: { path: file }, destination: '/sessions', wait: true });
    emu.emulator.revokeSession(c.sessionCookie.slice('JSESSIONID='.length));
    const fuid = up.fuids[0];
    (await c.downloadToBuffer({ fuid })).data.toString().should.equal('repeat me');
    emu.emulator.revokeSession(c.sessionCookie.slice('JSESSIONID='.length));
    (await c.exportMetadata({ fuid })).data.fuid.should.equal(fuid);
    emu.emulator.revokeSession(c.sessionCookie.slice('JSESSIONID='.length));
    (await c.upload({ file: { path: file }, name: 'again.txt', destination: '/sessions', wait: true })).fuids.length.should.equal(1);
  });

  it('a one-shot stream upload is not repeated: auth error saying why, and the next request works', async function () {
    const c = client({ cookie: COOKIES.wrong, login: { preset: 'form', username: USER.name, password: USER.password } });
    const err = await expectError(c.upload({ file: { stream: Readable.from([Buffer.from('once')]) }, name: 's.txt', destination: '/sessions' }), 'auth');
    err.message.should.match(/stream, which cannot be sent twice/);
    (await c.getSubscription('sess-form-0-abcd')).success.should.be.true();
  });

  it('a refused login is an auth error naming the step; the next attempts wait (backoff), no tight loop', async function () {
    const c = client({ cookie: COOKIES.wrong, login: { preset: 'utility', username: USER.name, password: 'Wrong-Password-77aa', retryDelayMs: 60000 } });
    const failed = emu.emulator.sessionStats().failedLogins;
    const err = await expectError(c.getSubscription('sess-bad-login-1'), 'auth');
    err.message.should.match(/login failed, next try in 60 s: login request: .*answered HTTP 401 \(user name or password refused\)/);
    for (let i = 0; i < 5; i++) {
      const again = await expectError(c.getSubscription('sess-bad-login-1'), 'auth');
      again.message.should.match(/login failed, next try in \d+ s/);
    }
    emu.emulator.sessionStats().failedLogins.should.equal(failed + 1, 'no new login attempt during the backoff');
    for (const e of [err]) text(e).should.not.containEql('Wrong-Password-77aa');
    // A cookie set by hand ends the wait.
    c.setCookie(COOKIES.editor);
    (await c.getSubscription('sess-form-0-abcd')).success.should.be.true();
  });

  it('a login server that echoes the password in a long message: no piece of it in the error (redacted before it is shortened)', async function () {
    const http = require('http');
    const password = 'Echo-Pass-5e1f-ab34cd';
    const echo = http.createServer((req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: `${'x'.repeat(162)} refused ${decodeURIComponent(req.url)}` }));
    });
    await new Promise((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const c = client({ cookie: COOKIES.wrong, login: { url: `http://127.0.0.1:${echo.address().port}/command`, method: 'GET', fieldsIn: 'query',
        fields: { user: '{{username}}', pw: '{{password}}' }, sessionFrom: 'json', sessionName: 'zm_cookie', username: USER.name, password } });
      const err = await expectError(c.getSubscription('sess-echo-1'), 'auth');
      err.message.should.match(/answered HTTP 400/);
      for (const piece of [password.slice(0, 4), password.slice(0, 8)]) text(err).should.not.containEql(piece);
    } finally {
      echo.close();
    }
  });

  it('a login answer without the session names the step "login answer"', async function () {
    const c = client({ cookie: COOKIES.wrong, login: { preset: 'utility', sessionName: 'no_such_property', username: USER.name, password: USER.password } });
    const err = await expectError(c.getSubscription('sess-bad-answer-1'), 'auth');
    err.message.should.match(/login answer: the JSON answer has no property no_such_property/);
  });

  it('a login whose session the server refuses: a second 401 is an auth error that says so', async function () {
    // The form login gives a JSESSIONID, sent here under another name, which the server ignores.
    const c = client({ cookie: COOKIES.wrong, login: { preset: 'form', cookieName: 'OTHER', username: USER.name, password: USER.password } });
    const err = await expectError(c.getSubscription('sess-refused-1'), 'auth');
    err.message.should.match(/HTTP 401\) again right after an automatic login/);
    const again = await expectError(c.getSubscription('sess-refused-1'), 'auth');
    again.message.should.match(/login failed, next try in \d+ s: repeated request/);
  });

  it('login options are checked, naming the field', async function () {
    for (const [login, field] of [
      [{ preset: 'nope', username: 'a', password: 'b' }, 'login.preset'],
      [{ preset: 'utility', password: 'b' }, 'login.username'],
      [{ preset: 'utility', username: 'a' }, 'login.password'],
      [{ username: 'a', password: 'b' }, 'login.url'],
      [{ url: '/x', method: 'GET', fieldsIn: 'form', sessionFrom: 'json', sessionName: 'c', username: 'a', password: 'b' }, 'login.fieldsIn'],
      [{ url: '/x', sessionFrom: 'header', sessionName: 'c', username: 'a', password: 'b' }, 'login.sessionFrom'],
      [{ url: '/x', sessionFrom: 'json', sessionName: 'c', fields: 'novalue', username: 'a', password: 'b' }, 'login.fields']
    ]) {
      let err;
      try { client({ login }); } catch (e) { err = e; }
      should.exist(err, field);
      err.should.be.instanceOf(AssetApiError);
      err.field.should.equal(field);
    }
  });
});
