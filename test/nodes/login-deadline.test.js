'use strict';
// Issue 22 item 4: a login answer that trickles (one byte every 700 ms, timeout 2 s) never ends
// by the socket's idle timeout. The login now has a total deadline and the caller's abort ends
// the wait: the call fails with a timeout (at a Catch node for a node), Test connection's login
// says it timed out, and an aborted call stops waiting at once.
require('should');
const http = require('http');
const s = require('./nodes-support');
const { AssetClient } = require('../../dist/api/client');

const { helper } = s;
const PASSWORD = 'trickle-login-pw-77Qx';

describe('automatic login against a login server that trickles (issue 22 item 4)', function () {
  this.timeout(30000);
  let emulator, trickle;
  const timers = new Set();
  let requests = 0;

  before(async () => {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    trickle = http.createServer((req, res) => {
      requests++;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const text = '{"zm_cookie":"never-completes"' + ' '.repeat(1000);
      let at = 0;
      const timer = setInterval(() => { if (at < text.length) res.write(text[at++]); }, 700);
      timers.add(timer);
      res.on('close', () => { clearInterval(timer); timers.delete(timer); });
    });
    await new Promise((resolve) => trickle.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const t of timers) clearInterval(t);
    trickle.closeAllConnections();
    trickle.close();
    await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  const loginUrl = () => `http://127.0.0.1:${trickle.address().port}/command`;
  function client(extra = {}) {
    return new AssetClient({
      baseUrl: emulator.url, cookie: s.WRONG_COOKIE_VALUE, timeout: 2000,
      login: { preset: 'utility', url: loginUrl(), username: 'robot', password: PASSWORD }, ...extra
    });
  }

  it('a call waiting on the login fails with a timeout', async function () {
    const c = client();
    try {
      const err = await c.getSubscription('trickle-sub-0001').then(() => null, (e) => e);
      (err !== null).should.be.true();
      err.kind.should.equal('timeout');
      err.message.should.not.containEql(PASSWORD);
    } finally {
      c.close();
    }
  });

  it('the login itself ends at its deadline with a login error saying it timed out (Test connection\'s login)', async function () {
    const c = client();
    try {
      const err = await c.login().then(() => null, (e) => e);
      (err !== null).should.be.true();
      err.code.should.equal('LOGIN_FAILED');
      err.reason.should.match(/did not answer completely within 2000 ms \(timed out\)/);
    } finally {
      c.close();
    }
  });

  it('the caller\'s AbortSignal ends its wait for the login', async function () {
    const c = client({ timeout: 0 }); // no call timeout: only the abort can end the wait
    try {
      const before = requests;
      const controller = new AbortController();
      const call = c.getSubscription('trickle-sub-0001', { signal: controller.signal }).then(() => null, (e) => e);
      while (requests === before) await new Promise((r) => setTimeout(r, 20)); // the login is under way
      controller.abort();
      const err = await call;
      err.kind.should.equal('aborted');
    } finally {
      c.close();
    }
  });

  it('asset-export behind such a login: a timeout error at the Catch node', async function () {
    await s.load(s.flow('asset-export', {}, {
      baseUrl: emulator.url, timeout: 2, loginEnabled: true, loginPreset: 'utility', loginUrl: loginUrl()
    }), { server: { cookie: s.WRONG_COOKIE_VALUE, username: 'robot', password: PASSWORD } });
    const caught = await s.runFailing({ fuid: 1 }, 20000);
    caught.assetError.kind.should.equal('timeout', caught.error.message);
    JSON.stringify(caught).should.not.containEql(PASSWORD);
  });
});
