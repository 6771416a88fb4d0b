'use strict';
// Subscribe calls (spec 4.1) against the real emulator, cookies (section 5), and the
// error kinds of every call (section 7), using small real servers for the faults
// the emulator does not produce (busy, redirects, stalls, odd bodies).
const should = require('should');
const { AssetClient } = require('../../dist/api/client');
const {
  COOKIES, startTestEmulator, startCountingProxy, startServer, closedPortUrl, expectError, seenErrors, assertNoCookieIn
} = require('./helpers');

const callback = 'http://127.0.0.1:1880/dam/events';

describe('api client: subscriptions against the emulator', () => {
  let emu;
  const clients = [];
  function client(options = {}) {
    const made = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, ...options });
    clients.push(made);
    return made;
  }
  before(async () => { emu = await startTestEmulator(); });
  after(async () => {
    for (const made of clients) made.close();
    await emu.close();
  });

  it('registers, reads and deletes a subscription (bare cookie value sent as JSESSIONID=value)', async () => {
    const api = client();
    const id = '3f2b8c1e-9d4a-4f6b-8a2c-1e5d7b9f0a3c';
    (await api.registerSubscription(id, { callback, method: 'post', watchPath: '* /inbox' })).should.eql({ id, success: true });
    const details = await api.getSubscription(id);
    details.success.should.be.true();
    details.id.should.equal(id);
    details.subscription.callback.should.equal(callback);
    details.subscription.method.should.equal('POST');
    details.subscription.watchPath.should.eql(['* /inbox']);
    (await api.deleteSubscription(id)).should.eql({ id, success: true });
    const gone = await expectError(api.getSubscription(id), 'rejected');
    gone.operation.should.equal('getSubscription');
    gone.status.should.equal(200);
    should.exist(gone.serverMessage);
  });

  it('a Name=value cookie is sent as is', async () => {
    const api = client({ cookie: `JSESSIONID=${COOKIES.editor}` });
    (await api.registerSubscription('named-cookie', { callback })).success.should.be.true();
    (await api.getSubscription('named-cookie')).subscription.callback.should.equal(callback);
    // A bare value under another name is not the session: the emulator answers 401.
    await expectError(client({ cookie: `OTHER=${COOKIES.editor}` }).getSubscription('named-cookie'), 'auth');
  });

  it('repeated header, watchPath, watchMetadata and queryParam values arrive in order', async () => {
    const api = client();
    const fields = {
      callback,
      method: 'POST',
      successCode: 202,
      retryCount: '5',
      requestType: 'auto',
      logicalOperand: 'and',
      header: ['X-Zeta: 1', 'Content-Type: application/json', 'X-Alpha: a, b'],
      queryParam: ['z=26', 'a=1', 'flag'],
      watchPath: ['- /archive', '* /inbox', '+ /inbox/sub', '/docs/a.pdf'],
      watchMetadata: ['City==SFO', 'Status=*', '*==*', 'Owner=Ann']
    };
    await api.registerSubscription('order-test-1', fields);
    const stored = (await api.getSubscription('order-test-1')).subscription;
    stored.header.should.eql(fields.header);
    stored.queryParam.should.eql(fields.queryParam);
    stored.watchPath.should.eql(fields.watchPath);
    stored.watchMetadata.should.eql(fields.watchMetadata);
    stored.successCode.should.equal(202);
    stored.retryCount.should.equal(5);
    stored.logicalOperand.should.equal('AND');
  });

  it('registering the same id again replaces it; a single string is one value', async () => {
    const api = client();
    await api.registerSubscription('replace-me', { callback, watchPath: ['/a', '/b'] });
    await api.registerSubscription('replace-me', { callback: callback + '2', watchPath: '/c' });
    const stored = (await api.getSubscription('replace-me')).subscription;
    stored.callback.should.equal(callback + '2');
    stored.watchPath.should.eql(['/c']);
  });

  it('works with a trailing slash and with a path prefix in the base URL', async () => {
    (await client({ baseUrl: emu.url + '/' }).registerSubscription('slash-base', { callback })).success.should.be.true();
    const proxy = await startCountingProxy(emu.url, '/dam/preview');
    try {
      for (const baseUrl of [proxy.url + '/dam/preview', proxy.url + '/dam/preview//']) {
        (await client({ baseUrl }).getSubscription('slash-base')).id.should.equal('slash-base');
      }
      proxy.seen.should.eql([
        'GET /dam/preview/review/api/events/assets/subscribe/slash-base',
        'GET /dam/preview/review/api/events/assets/subscribe/slash-base'
      ]);
    } finally {
      await proxy.close();
    }
  });

  it('401 (wrong or missing cookie) is kind auth with an actionable message', async () => {
    for (const cookie of [COOKIES.wrong, `JSESSIONID=${COOKIES.wrong}`, '']) {
      const api = client({ cookie });
      const error = await expectError(api.registerSubscription('auth-test-1', { callback }), 'auth');
      error.status.should.equal(401);
      error.operation.should.equal('registerSubscription');
      error.message.should.match(/cookie is missing, wrong or expired/);
      error.message.should.match(/asset-server config node/);
      await expectError(api.getSubscription('auth-test-1'), 'auth');
      await expectError(api.deleteSubscription('auth-test-1'), 'auth');
    }
  });

  it('a session revoked mid-run (expired cookie) gives auth on the next call', async () => {
    const value = 'Cookie-Expiring-9a8b7c6d5e4f';
    emu.emulator.addSession({ value, permissions: ['events'] });
    const api = client({ cookie: value });
    await api.registerSubscription('expiring-1', { callback });
    emu.emulator.revokeSession(value);
    const error = await expectError(api.getSubscription('expiring-1'), 'auth');
    error.message.should.not.containEql(value);
  });

  it('a session without the events permission gets kind permission', async () => {
    const api = client({ cookie: COOKIES.viewer });
    for (const call of [
      () => api.registerSubscription('perm-test-1', { callback }),
      () => api.getSubscription('perm-test-1'),
      () => api.deleteSubscription('perm-test-1')
    ]) {
      const error = await expectError(call, 'permission');
      error.serverMessage.should.match(/permission/i);
      error.message.should.match(/events permission/);
    }
  });

  it('deleting or reading an unknown id is kind rejected with the server message', async () => {
    const error = await expectError(client().deleteSubscription('never-registered'), 'rejected');
    error.serverMessage.should.match(/never-registered|no subscription|unknown/i);
  });

  it('a server that is down is kind network (ECONNREFUSED)', async () => {
    const api = client({ baseUrl: await closedPortUrl() });
    const error = await expectError(api.getSubscription('abcdefgh'), 'network');
    error.code.should.equal('ECONNREFUSED');
    error.message.should.match(/connection refused/);
  });

  it('an already aborted signal fails at once with kind aborted and sends nothing', async () => {
    const proxy = await startCountingProxy(emu.url);
    try {
      const api = client({ baseUrl: proxy.url });
      await expectError(api.getSubscription('abcdefgh', { signal: AbortSignal.abort() }), 'aborted');
      proxy.seen.should.eql([]);
    } finally {
      await proxy.close();
    }
  });
});

describe('api client: answers the emulator does not give (small real servers)', () => {
  let server;
  let reply;
  const pending = [];
  const clients = [];
  before(async () => {
    server = await startServer((req, res) => reply(req, res));
  });
  after(async () => {
    for (const made of clients) made.close();
    for (const res of pending) res.destroy();
    await server.close();
  });
  function client(options = {}) {
    const made = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, ...options });
    clients.push(made);
    return made;
  }
  function answer(status, body, headers = {}) {
    reply = (req, res) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
  }

  it('sends the cookie, the form body and Accept: application/json', async () => {
    let seen;
    reply = (req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        seen = { cookie: req.headers.cookie, type: req.headers['content-type'], accept: req.headers.accept, body, url: req.url, method: req.method };
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"success":"true","id":"form-test"}');
      });
    };
    await client().registerSubscription('form-test', {
      callback: 'http://h/x?y=1', header: ['A: 1', 'A: 2'], watchPath: ['/p q', '* /r&s'], watchMetadata: 'K==v=w'
    });
    seen.method.should.equal('POST');
    seen.url.should.equal('/review/api/events/assets/subscribe/form-test');
    seen.cookie.should.equal(`JSESSIONID=${COOKIES.editor}`);
    seen.type.should.equal('application/x-www-form-urlencoded; charset=UTF-8');
    seen.accept.should.match(/application\/json/);
    seen.body.should.equal('callback=http%3A%2F%2Fh%2Fx%3Fy%3D1&header=A%3A+1&header=A%3A+2' +
      '&watchPath=%2Fp+q&watchPath=*+%2Fr%26s&watchMetadata=K%3D%3Dv%3Dw');
    [...new URLSearchParams(seen.body).getAll('watchPath')].should.eql(['/p q', '* /r&s']);
  });

  it('success as the string "false" with errorInfo and errorCode is kind rejected', async () => {
    answer(200, { success: 'false', errorInfo: 'callback host not allowed', errorCode: 'err.callback.host' });
    const error = await expectError(client().registerSubscription('abcdefgh', { callback }), 'rejected');
    error.serverMessage.should.equal('callback host not allowed (err.callback.host)');
    answer(200, { success: false, errorCode: 'err.unknown' });
    (await expectError(client().getSubscription('abcdefgh'), 'rejected')).serverMessage.should.equal('err.unknown');
  });

  it('success false saying permission is denied is kind permission', async () => {
    answer(200, { success: false, error: 'Permission denied for events' });
    await expectError(client().registerSubscription('abcdefgh', { callback }), 'permission');
    answer(403, { success: false });
    await expectError(client().getSubscription('abcdefgh'), 'permission');
  });

  it('503 and 449 are kind http saying the server is busy; 500 carries the server message', async () => {
    for (const status of [503, 449]) {
      answer(status, { success: false, error: 'resources unavailable' });
      const error = await expectError(client().getSubscription('abcdefgh'), 'http');
      error.status.should.equal(status);
      error.message.should.match(/server busy .*retry later/);
    }
    answer(500, '<html>oops</html>', { 'Content-Type': 'text/html' });
    (await expectError(client().getSubscription('abcdefgh'), 'http')).message.should.match(/unexpected HTTP status 500/);
    answer(500, { success: false, error: 'NullPointerException' });
    (await expectError(client().getSubscription('abcdefgh'), 'http')).serverMessage.should.equal('NullPointerException');
  });

  it('a 404 without the API\'s answer says what to check: the base URL and its path (the status says so too)', async () => {
    answer(404, '<html>Not Found</html>', { 'Content-Type': 'text/html' });
    const error = await expectError(client().getSubscription('abcdefgh'), 'http');
    error.status.should.equal(404);
    error.message.should.match(/unexpected HTTP status 404 from http:\/\/127\.0\.0\.1:\d+: nothing serves the API there: check the base URL \(host, port/);
  });

  it('a redirect is not followed: kind http naming the target', async () => {
    answer(302, '', { Location: 'https://elsewhere.example/review/api/x?session=abc' });
    const error = await expectError(client().getSubscription('abcdefgh'), 'http');
    error.status.should.equal(302);
    error.message.should.match(/redirect .*https:\/\/elsewhere\.example\/review\/api\/x\)/);
    error.message.should.not.match(/session=abc/);
  });

  it('a 200 answer that is not JSON is kind http', async () => {
    answer(200, 'this is not json', { 'Content-Type': 'text/plain' });
    (await expectError(client().getSubscription('abcdefgh'), 'http')).message.should.match(/not a JSON object/);
  });

  it('a server that accepts and never answers is kind timeout', async () => {
    reply = (req, res) => { pending.push(res); };
    const started = Date.now();
    const error = await expectError(client({ timeout: 300 }).getSubscription('abcdefgh'), 'timeout');
    (Date.now() - started).should.be.within(250, 5000);
    error.message.should.match(/300 ms/);
    // The per-call timeout overrides the client's.
    await expectError(client({ timeout: 60000 }).getSubscription('abcdefgh', { timeout: 200 }), 'timeout');
  });

  it('aborting a call in flight is kind aborted', async () => {
    reply = (req, res) => { pending.push(res); };
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expectError(client().deleteSubscription('abcdefgh', { signal: controller.signal }), 'aborted');
  });

  it('a server echoing the cookie in its message does not leak it into the error', async () => {
    answer(200, { success: false, error: `bad session JSESSIONID=${COOKIES.editor}` });
    const error = await expectError(client().getSubscription('abcdefgh'), 'rejected');
    error.serverMessage.should.equal('bad session ***');
  });
});

describe('api subscriptions: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(20);
    assertNoCookieIn(seenErrors);
  });
});
