'use strict';
// Keep-alive connections the server has closed (ci10: a 50 MiB upload reset 219 ms in on a
// loaded machine). Node 20's agent ignored the server's Keep-Alive hint and kept idle sockets
// for ever; a request written to one the server was closing was reset before any answer.
const should = require('should');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { Readable } = require('stream');
const { AssetClient } = require('../../dist/api/client');
const { limitIdleSockets, sendAgainIfStale, IDLE_SOCKET_MS } = require('../../dist/api/stale-connection');

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
const stop = (server) => { server.closeAllConnections(); return new Promise((resolve) => server.close(resolve)); };
const drain = (req) => new Promise((resolve) => { req.on('end', resolve); req.on('error', resolve); req.resume(); });

/**
 * A server that answers the first request of each connection and resets the connection on its
 * second, before answering: what a request meets on a connection the server closed as it was sent.
 */
function resettingServer(answer) {
  const seen = new WeakMap();
  const log = { connections: 0, resets: 0, answered: 0 };
  const server = http.createServer(async (req, res) => {
    const count = (seen.get(req.socket) ?? 0) + 1;
    seen.set(req.socket, count);
    if (count > 1) { log.resets++; req.socket.resetAndDestroy(); return; }
    await drain(req);
    log.answered++;
    answer(req, res);
  });
  server.on('connection', () => log.connections++);
  return { server, log };
}

const json = (res, body) => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(body)); };

describe('keep-alive connections the server closed', function () {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-stale-')); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('a request reset on a reused connection before any answer is sent again on a new one', function () {
    let rig, client;
    beforeEach(async () => {
      rig = resettingServer((req, res) => {
        if (req.url.startsWith('/review/api/asset/upload')) json(res, { success: true, data: { fuids: [7] } });
        else if (req.url.startsWith('/review/api/asset/download')) { res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': 3 }); res.end('abc'); }
        else json(res, { success: true, id: 'sub-00000001', paths: ['/inbox'] });
      });
      const port = await listen(rig.server);
      client = new AssetClient({ baseUrl: `http://127.0.0.1:${port}`, cookie: 'c', timeout: 10000, maxSockets: 1 });
    });
    afterEach(async () => { client.close(); await stop(rig.server); });

    it('reads, registrations and downloads', async function () {
      (await client.getSubscription('sub-00000001')).id.should.equal('sub-00000001');
      (await client.getSubscription('sub-00000001')).id.should.equal('sub-00000001');
      (await client.registerSubscription('sub-00000001', { callback: 'http://127.0.0.1:1/cb', watchPath: ['* /inbox'] })).id.should.equal('sub-00000001');
      (await client.downloadToBuffer({ fuid: 1 })).data.toString().should.equal('abc');
      rig.log.should.eql({ connections: 4, resets: 3, answered: 4 });
    });

    for (const call of ['a read', 'an upload']) {
      it(`the retry of ${call} does not take another idle connection the server may have closed as well`, async function () {
        client.close();
        client = new AssetClient({ baseUrl: `http://127.0.0.1:${rig.server.address().port}`, cookie: 'c', timeout: 10000, maxSockets: 2 });
        // Two at once: two connections, both idle afterwards.
        await Promise.all([client.getSubscription('sub-00000001'), client.getSubscription('sub-00000001')]);
        rig.log.connections.should.equal(2);
        if (call === 'a read') (await client.getSubscription('sub-00000001')).id.should.equal('sub-00000001');
        // 20 MB: its body not all sent, since the resetting server reads none of it.
        else (await client.upload({ file: { buffer: Buffer.alloc(20e6, 1) }, name: 'b.bin', destination: '/inbox' })).fuids.should.eql([7]);
        rig.log.should.eql({ connections: 3, resets: 1, answered: 3 });
      });
    }

    it('not a DELETE: sent twice it would answer "unknown id" if the first one was done', async function () {
      await client.getSubscription('sub-00000001');
      const err = await client.deleteSubscription('sub-00000001').then(() => null, (e) => e);
      should.exist(err);
      err.kind.should.equal('network');
      rig.log.should.eql({ connections: 1, resets: 1, answered: 1 });
    });

    it('uploads (a path, a Buffer) whose body was not all sent: the server cannot have taken them', async function () {
      // 20 MB: more than the socket buffers hold while the server, resetting, reads none of it.
      const big = Buffer.alloc(20e6, 1);
      const file = path.join(dir, 'big.bin');
      fs.writeFileSync(file, big);
      (await client.upload({ file: { buffer: Buffer.from('a') }, name: 'a.txt', destination: '/inbox' })).fuids.should.eql([7]);
      (await client.upload({ file: { path: file }, destination: '/inbox' })).fuids.should.eql([7]);
      (await client.upload({ file: { buffer: big }, name: 'b.bin', destination: '/inbox' })).fuids.should.eql([7]);
      rig.log.should.eql({ connections: 3, resets: 2, answered: 3 });
    });

    it('an upload whose body was all sent is not sent again (the server may have stored it before the reset)', async function () {
      await client.upload({ file: { buffer: Buffer.from('a') }, name: 'a.txt', destination: '/inbox' });
      const err = await client.upload({ file: { buffer: Buffer.from('b') }, name: 'b.txt', destination: '/inbox' }).then(() => null, (e) => e);
      should.exist(err);
      err.kind.should.equal('network');
      rig.log.should.eql({ connections: 1, resets: 1, answered: 1 });
    });

    it('an upload from a stream, which cannot be sent twice, fails as a network error', async function () {
      await client.upload({ file: { buffer: Buffer.from('a') }, name: 'a.txt', destination: '/inbox' });
      const err = await client.upload({ file: { stream: Readable.from([Buffer.alloc(20e6, 2)]) }, name: 's.txt', destination: '/inbox' })
        .then(() => null, (e) => e);
      should.exist(err);
      err.kind.should.equal('network');
      rig.log.should.eql({ connections: 1, resets: 1, answered: 1 });
    });
  });

  describe("before the second try, only the idle connections to the server that closed one are closed", function () {
    /** A GET through `agent`; a failure carries its request, as axios's do. */
    const get = (agent, port) => new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
      req.on('error', (err) => { err.request = req; reject(err); });
    });
    const freeTo = (agent, port) => Object.values(agent.freeSockets).flat().filter((s) => s.remotePort === port).length;

    it("another server's idle connection in the same agent stays open (a login server, say)", async function () {
      const rig = resettingServer((req, res) => json(res, {}));
      const other = { connections: 0 };
      const otherServer = http.createServer((req, res) => json(res, {}));
      otherServer.on('connection', () => other.connections++);
      const [port, otherPort] = await Promise.all([listen(rig.server), listen(otherServer)]);
      const agent = limitIdleSockets(new http.Agent({ keepAlive: true, maxSockets: 2 }));
      try {
        await Promise.all([get(agent, port), get(agent, port), get(agent, otherPort)]);
        freeTo(agent, port).should.equal(2);
        freeTo(agent, otherPort).should.equal(1);
        (await sendAgainIfStale(() => get(agent, port), true)).should.equal(200);
        rig.log.should.eql({ connections: 3, resets: 1, answered: 3 }); // the second try on a new connection
        freeTo(agent, otherPort).should.equal(1);
        await get(agent, otherPort);
        other.connections.should.equal(1);
      } finally {
        agent.destroy();
        await Promise.all([stop(rig.server), stop(otherServer)]);
      }
    });

    it('an agent not made by limitIdleSockets (one the user gave) is left as it is', async function () {
      const rig = resettingServer((req, res) => json(res, {}));
      const port = await listen(rig.server);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
      try {
        await Promise.all([get(agent, port), get(agent, port)]);
        const err = await sendAgainIfStale(() => get(agent, port), true).then(() => null, (e) => e);
        should.exist(err); // the second try took the other idle connection, which this server also resets
        err.code.should.equal('ECONNRESET');
        rig.log.should.eql({ connections: 2, resets: 2, answered: 2 });
      } finally {
        agent.destroy();
        await stop(rig.server);
      }
    });
  });

  describe('an automatic login on a reused connection the server closed is sent again on a new one', function () {
    // The session page and the login request are sent like a read: a second one only makes
    // another session (the first is never used). Before, the login failed "could not be reached
    // (ECONNRESET)" and every call waited out the failed login's delay.
    for (const preset of ['utility', 'form']) {
      it(`the ${preset} preset: the call that met the 401 is answered`, async function () {
        const rig = resettingServer((req, res) => {
          if (req.url.startsWith('/command')) return json(res, { zm_cookie: 'fresh-1' });
          if (req.url === '/review/') { res.writeHead(200, { 'Set-Cookie': 'JSESSIONID=pre-1; Path=/review' }); return res.end('login page'); }
          if (req.url === '/review/j_security_check') { res.writeHead(303, { 'Set-Cookie': 'JSESSIONID=fresh-1; Path=/review', Location: '/review/' }); return res.end(); }
          if (req.headers.cookie !== 'JSESSIONID=fresh-1') { res.writeHead(401); return res.end(); }
          json(res, { success: true, id: 'sub-00000001', paths: ['/inbox'] });
        });
        const port = await listen(rig.server);
        const client = new AssetClient({ baseUrl: `http://127.0.0.1:${port}`, cookie: 'JSESSIONID=old', timeout: 10000, maxSockets: 1, login: { preset, username: 'u', password: 'p' } });
        try {
          // 401 on the first connection; each later request first meets a connection reused and reset.
          (await client.getSubscription('sub-00000001')).id.should.equal('sub-00000001');
          const requests = preset === 'form' ? 4 : 3; // the call, [the session page,] the login, the call again
          rig.log.should.eql({ connections: requests, resets: requests - 1, answered: requests });
        } finally {
          client.close();
          await stop(rig.server);
        }
      });
    }
  });

  describe('idle sockets are closed by us before the server closes them', function () {
    const freeSocket = (client) => Object.values(client.ownAgents[0].freeSockets).flat()[0];

    it("the server's Keep-Alive hint less a second; without a hint, " + IDLE_SOCKET_MS + ' ms', async function () {
      const hinted = http.createServer((req, res) => json(res, { success: true, id: 'sub-00000002' }));
      hinted.keepAliveTimeout = 3000; // answers carry "Keep-Alive: timeout=3"
      const silent = http.createServer((req, res) => { res.removeHeader('Keep-Alive'); res.shouldKeepAlive = true; json(res, { success: true, id: 'sub-00000002' }); });
      silent.keepAliveTimeout = 0; // no timeout, no hint
      const clients = [];
      try {
        for (const [server, expected] of [[hinted, 2000], [silent, IDLE_SOCKET_MS]]) {
          const client = new AssetClient({ baseUrl: `http://127.0.0.1:${await listen(server)}`, cookie: 'c' });
          clients.push(client);
          await client.getSubscription('sub-00000002');
          await new Promise((resolve) => setImmediate(resolve));
          freeSocket(client).timeout.should.equal(expected);
        }
      } finally {
        for (const client of clients) client.close();
        await stop(hinted); await stop(silent);
      }
    });

    it('a free socket is closed at the limit; a reused one has no idle limit while busy', async function () {
      const ends = [];
      const server = http.createServer((req, res) => json(res, { ok: true }));
      server.keepAliveTimeout = 60000;
      server.on('connection', (socket) => socket.on('end', () => ends.push('client closed')));
      const port = await listen(server);
      const agent = limitIdleSockets(new http.Agent({ keepAlive: true, maxSockets: 1 }), 300);
      const get = () => new Promise((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, agent }, (res) => { res.resume(); res.on('end', () => resolve(req)); });
        req.on('error', reject);
      });
      try {
        await get();
        const second = await get();
        second.reusedSocket.should.be.true();
        // Closed by us, long before the server's 60 s.
        while (ends.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
        ends.should.eql(['client closed']);
        Object.keys(agent.freeSockets).should.eql([]);
      } finally {
        agent.destroy();
        await stop(server);
      }
    });
  });
});
