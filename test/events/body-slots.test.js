'use strict';
// The slots for large callback bodies (src/events/body-slots.ts) with readJsonBody, over real HTTP
// on loopback: a body above the threshold is read only with a slot (asked before reading when
// Content-Length says so, else once the threshold has arrived); a few wait, unread; the rest get
// 503 at once; small bodies never ask; a slot goes back when the request is done, also when it
// came after the request was gone. Waits are for states (the pool's counts, answers), not times.
require('should');
const http = require('http');
const { readJsonBody, BodySlots } = require('../../dist/events');

const THRESHOLD = 1000;

/**
 * A server reading each body through `pool`'s ticket; the answer is the outcome. While `hold` is
 * set, an admitted request keeps its slot until `hold` resolves (a callback still being handled).
 */
async function startServer(pool, control = {}) {
  const server = http.createServer(async (req, res) => {
    const ticket = pool.ticket(req);
    try {
      const outcome = await readJsonBody(req, 1e6, Infinity, ticket);
      if (outcome.ok && control.hold) await control.hold;
      res.writeHead(outcome.ok ? 200 : outcome.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(outcome.ok ? { ok: true, size: JSON.stringify(outcome.value).length } : outcome));
    } finally {
      ticket.release();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const agent = new http.Agent({ keepAlive: true });

/** POSTs `body`; `chunked`: without Content-Length, in pieces of 64 KB. Resolves { status, body, sent } (sent: bytes written before the answer). */
function post(server, body, { chunked = false, request } = {}) {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json' };
    if (!chunked) headers['content-length'] = Buffer.byteLength(body);
    let sent = 0;
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port: server.address().port, method: 'POST', path: '/', headers, agent }, (res) => {
      answered = true;
      const before = sent;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text), sent: before }));
    });
    req.on('error', (err) => { if (!answered) reject(err); });
    if (request) request(req);
    const data = Buffer.from(body);
    const pump = () => {
      while (!answered && sent < data.length) {
        const piece = data.subarray(sent, sent + 65536);
        sent += piece.length;
        if (!req.write(piece)) { req.once('drain', pump); return; }
      }
      if (!answered) req.end();
    };
    if (chunked) pump(); else { sent = data.length; req.end(data); }
  });
}

async function until(what, check) {
  for (let i = 0; i < 2000; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never: ${what}`);
}

const big = JSON.stringify({ data: { entry: [{ note: 'x'.repeat(5000) }] } }); // above THRESHOLD
const small = JSON.stringify({ data: { entry: [{ a: 1 }] } }); // below it

describe('events: slots for large bodies', function () {
  let server;
  afterEach(() => new Promise((resolve) => {
    if (!server) return resolve();
    server.close(resolve);
    server.closeAllConnections();
    server = null;
  }));
  after(() => agent.destroy());

  it('a small body never asks for a slot, even when none is free', async function () {
    const pool = new BodySlots(0, 0, 1000, THRESHOLD);
    server = await startServer(pool);
    (await post(server, small)).status.should.equal(200);
    (await post(server, small, { chunked: true })).status.should.equal(200);
  });

  it('a large body without a slot: 503 at once, declared or chunked; the chunked one is refused once the threshold has arrived', async function () {
    const pool = new BodySlots(0, 0, 1000, THRESHOLD);
    server = await startServer(pool);
    const declared = await post(server, big);
    declared.status.should.equal(503);
    declared.body.reason.should.match(/too many large callbacks/);
    const huge = JSON.stringify({ data: { entry: [{ note: 'x'.repeat(30e6) }] } }); // more than loopback buffers take unread
    const chunked = await post(server, huge, { chunked: true });
    chunked.status.should.equal(503);
    chunked.sent.should.be.below(Buffer.byteLength(huge)); // answered while the body was still being sent
    pool.state.should.eql({ busy: 0, waiting: 0 });
  });

  it('with a slot free: read as before, the slot given back once the request is done', async function () {
    const pool = new BodySlots(1, 0, 1000, THRESHOLD);
    server = await startServer(pool);
    (await post(server, big)).status.should.equal(200);
    (await post(server, big, { chunked: true })).status.should.equal(200);
    pool.state.should.eql({ busy: 0, waiting: 0 });
  });

  it('slots taken: a few wait, unread, and get the slot in turn; beyond them 503 at once', async function () {
    const pool = new BodySlots(1, 1, 60000, THRESHOLD);
    let release;
    const control = { hold: new Promise((resolve) => { release = resolve; }) };
    server = await startServer(pool, control);
    const first = post(server, big);
    await until('the first holds the slot', () => pool.state.busy === 1);
    const second = post(server, big, { chunked: true });
    await until('the second waits', () => pool.state.waiting === 1);
    const third = await post(server, big);
    third.status.should.equal(503); // answered while the first is still held
    pool.state.should.eql({ busy: 1, waiting: 1 });
    release();
    (await first).status.should.equal(200);
    (await second).status.should.equal(200);
    pool.state.should.eql({ busy: 0, waiting: 0 });
  });

  it('a waiter that goes away leaves the queue; one that waits too long gets 503', async function () {
    const pool = new BodySlots(1, 1, 60000, THRESHOLD);
    let release;
    const control = { hold: new Promise((resolve) => { release = resolve; }) };
    server = await startServer(pool, control);
    const first = post(server, big);
    await until('the first holds the slot', () => pool.state.busy === 1);
    let gone;
    post(server, big, { request: (req) => { gone = req; } }).catch(() => undefined);
    await until('the second waits', () => pool.state.waiting === 1);
    gone.destroy();
    await until('the second left the queue', () => pool.state.waiting === 0);
    release();
    (await first).status.should.equal(200);
    pool.state.should.eql({ busy: 0, waiting: 0 });

    const short = new BodySlots(1, 1, 20, THRESHOLD);
    let releaseShort;
    const held = { hold: new Promise((resolve) => { releaseShort = resolve; }) };
    server.close();
    server.closeAllConnections();
    server = await startServer(short, held);
    const holder = post(server, big);
    await until('the holder has the slot', () => short.state.busy === 1);
    (await post(server, big)).status.should.equal(503);
    short.state.should.eql({ busy: 1, waiting: 0 });
    releaseShort();
    (await holder).status.should.equal(200);
    short.state.should.eql({ busy: 0, waiting: 0 });
  });

  it('a request gone before its body is read (middleware in front took its time) is answered at once, and its slot given back', async function () {
    const pool = new BodySlots(2, 4, 60000, THRESHOLD);
    let handled = 0;
    let letRead;
    const reading = new Promise((resolve) => { letRead = resolve; });
    const server = http.createServer(async (req, res) => {
      await reading; // an async middleware in front of the route
      const ticket = pool.ticket(req);
      try {
        const outcome = await readJsonBody(req, 1e6, Infinity, ticket);
        outcome.ok.should.be.false();
      } finally {
        ticket.release();
        handled++;
        res.destroy();
      }
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const arrived = [];
      server.on('request', (req) => arrived.push(req));
      for (let i = 0; i < 2; i++) {
        const req = http.request({ host: '127.0.0.1', port: server.address().port, method: 'POST', path: '/', headers: { 'content-length': 5000 } });
        req.on('error', () => undefined);
        req.write('x'.repeat(100));
        await until('the request in', () => arrived.length === i + 1);
        req.destroy();
        await until('its socket closed', () => arrived[i].socket.destroyed);
      }
      letRead();
      await until('both handled', () => handled === 2);
      pool.state.should.eql({ busy: 0, waiting: 0 });
    } finally {
      server.close();
    }
  });

  it('a ticket released before its slot came gives the slot straight back', async function () {
    const pool = new BodySlots(1, 1, 60000, THRESHOLD);
    const fakeReq = { socket: new (require('events'))() };
    const a = pool.ticket(fakeReq);
    (await a.enter()).should.be.true();
    const b = pool.ticket(fakeReq);
    const entering = b.enter();
    pool.state.should.eql({ busy: 1, waiting: 1 });
    b.release(); // the request ended meanwhile
    a.release(); // the slot passes to b, which gives it back
    (await entering).should.be.false();
    pool.state.should.eql({ busy: 0, waiting: 0 });
  });
});
