'use strict';
// How the client reaches the server: a cookie pasted with its header name, a base URL that
// already holds the API's context path /review, and a bounded number of sockets.
require('should');
const { AssetClient } = require('../../dist/api/client');
const { COOKIES, startTestEmulator, startCountingProxy, startServer } = require('./helpers');

const callback = 'http://127.0.0.1:1880/dam/events';

describe('api client: connection settings', () => {
  let emu;
  const clients = [];
  function client(options) {
    const made = new AssetClient(options);
    clients.push(made);
    return made;
  }
  before(async () => { emu = await startTestEmulator(); });
  after(async () => {
    for (const made of clients) made.close();
    await emu.close();
  });

  it('a cookie pasted as "Cookie: JSESSIONID=..." is sent as JSESSIONID=... and accepted', async () => {
    const api = client({ baseUrl: emu.url, cookie: `Cookie: JSESSIONID=${COOKIES.editor}` });
    (await api.registerSubscription('pasted-cookie', { callback })).success.should.be.true();
    const lower = client({ baseUrl: emu.url, cookie: ` cookie:JSESSIONID=${COOKIES.editor} ` });
    (await lower.getSubscription('pasted-cookie')).subscription.callback.should.equal(callback);

    const seen = [];
    const raw = await startServer((req, res) => {
      seen.push(req.headers.cookie);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: true, id: 'x', subscription: {} }));
    });
    try {
      await client({ baseUrl: raw.url, cookie: 'Cookie: JSESSIONID=abc123' }).getSubscription('pasted-cookie');
      await client({ baseUrl: raw.url, cookie: 'Cookie: abc123' }).getSubscription('pasted-cookie');
      seen.should.eql(['JSESSIONID=abc123', 'JSESSIONID=abc123']);
    } finally {
      await raw.close();
    }
  });

  it('a pasted Set-Cookie line, or a cookie with its attributes, is reduced to its first name=value (issue 23 #8)', async () => {
    // Accepted by the emulator: the attributes would otherwise be sent as cookies of their own.
    const setCookie = client({ baseUrl: emu.url, cookie: `Set-Cookie: JSESSIONID=${COOKIES.editor}; Path=/review; HttpOnly` });
    (await setCookie.registerSubscription('pasted-set-cookie', { callback })).success.should.be.true();

    const seen = [];
    const raw = await startServer((req, res) => {
      seen.push(req.headers.cookie);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: true, id: 'x', subscription: {} }));
    });
    try {
      for (const pasted of [
        'Set-Cookie: JSESSIONID=abc; Path=/; HttpOnly',
        'set-cookie:JSESSIONID=abc;Secure;SameSite=Lax',
        'JSESSIONID=abc; Path=/',
        'JSESSIONID=abc; path=/review; Max-Age=3600; Secure',
        'Set-Cookie: abc; Path=/' // a bare value is still the session id
      ]) {
        await client({ baseUrl: raw.url, cookie: pasted }).getSubscription('pasted-set-cookie');
      }
      // A Cookie request header with several cookies (no attributes) is sent as it is.
      await client({ baseUrl: raw.url, cookie: 'Cookie: lb=node2; JSESSIONID=abc' }).getSubscription('pasted-set-cookie');
      seen.should.eql(['JSESSIONID=abc', 'JSESSIONID=abc', 'JSESSIONID=abc', 'JSESSIONID=abc', 'JSESSIONID=abc', 'lb=node2; JSESSIONID=abc']);
    } finally {
      await raw.close();
    }
  });

  it('a base URL ending in /review (with or without a slash) is used as is: no /review/review/...', async () => {
    for (const baseUrl of [`${emu.url}/review`, `${emu.url}/review/`]) {
      const api = client({ baseUrl, cookie: COOKIES.editor });
      (await api.registerSubscription('review-base', { callback })).success.should.be.true();
    }
    const proxy = await startCountingProxy(emu.url, '/dam');
    try {
      const api = client({ baseUrl: `${proxy.url}/dam/review`, cookie: COOKIES.editor });
      await api.getSubscription('review-base');
      proxy.seen.should.eql(['GET /dam/review/api/events/assets/subscribe/review-base']);
    } finally {
      await proxy.close();
    }
  });

  it('opens at most maxSockets connections (default 32); more calls wait for a free socket', async () => {
    let open = 0;
    let peak = 0;
    const held = [];
    const server = await startServer((req, res) => {
      held.push(res);
      peak = Math.max(peak, held.length);
      if (held.length === expected) release();
    });
    let expected = 0;
    let release = () => {};
    server.server.on('connection', socket => { open++; socket.on('close', () => { open--; }); });
    async function burst(api, calls, limit) {
      expected = limit;
      peak = 0;
      const answered = new Promise(resolve => { release = resolve; });
      const all = Promise.all(Array.from({ length: calls }, (_, i) => api.getSubscription(`burst-sub-${i}`)));
      await answered; // `limit` requests reached the server: answer them, the others follow.
      const answer = () => {
        while (held.length) {
          const res = held.shift();
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ success: true, id: 'x', subscription: {} }));
        }
      };
      answer();
      const timer = setInterval(answer, 5);
      try { await all; } finally { clearInterval(timer); }
      return peak;
    }
    try {
      (await burst(client({ baseUrl: server.url, cookie: COOKIES.editor, maxSockets: 2 }), 6, 2)).should.equal(2);
      (await burst(client({ baseUrl: server.url, cookie: COOKIES.editor }), 40, 32)).should.equal(32);
      open.should.be.belowOrEqual(34);
    } finally {
      await server.close();
    }
  });
});
