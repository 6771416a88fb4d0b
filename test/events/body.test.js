'use strict';
require('should');
const http = require('http');
const net = require('net');
const { readJsonBody, bodyText, secretMatches } = require('../../dist/events');

// A real HTTP server on a free loopback port; each request's outcome is answered as JSON.
function startServer(limit, onRequest) {
  const server = http.createServer(async (req, res) => {
    if (onRequest) onRequest(req);
    const outcome = await readJsonBody(req, limit);
    res.writeHead(outcome.ok ? 200 : outcome.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(outcome));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function post(server, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.address().port, method: 'POST', path: '/', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    if (typeof body === 'function') body(req); else req.end(body);
  });
}

describe('events: reading the body', function () {
  let server;
  afterEach(() => new Promise((r) => {
    if (!server) return r();
    server.close(r);
    server.closeAllConnections(); // keep-alive sockets would hold close() for 5 s
    server = null;
  }));

  it('parses JSON within the limit, keeping a big rrn exact', async function () {
    server = await startServer(1000);
    const r = await post(server, '\ufeff{"data":{"entry":[{"rrn":18446744073709551615}]}}');
    r.status.should.equal(200);
    r.body.value.data.entry[0].rrn.should.equal('18446744073709551615');
  });

  it('answers 413 at once when Content-Length is over the limit', async function () {
    server = await startServer(100);
    const r = await post(server, JSON.stringify({ pad: 'x'.repeat(500) }));
    r.status.should.equal(413);
    r.body.reason.should.equal('body is larger than 100 bytes');
  });

  it('answers 413 for a chunked body once it passes the limit, without keeping what follows', async function () {
    server = await startServer(64 * 1024);
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const r = await post(server, (req) => {
      // 4 MiB in chunks, no Content-Length: the reader must stop keeping data at 64 KiB.
      let sent = 0;
      const pump = () => {
        while (sent < 256) { sent++; if (!req.write(chunk)) return req.once('drain', pump); }
        req.end();
      };
      pump();
    }, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    r.status.should.equal(413);
  });

  it('answers 400 for empty and non-JSON bodies and for compressed bodies', async function () {
    server = await startServer(1000);
    (await post(server, '')).body.reason.should.equal('body is empty');
    (await post(server, '{"a":')).body.reason.should.equal('body is not valid JSON');
    const gz = await post(server, 'xx', { 'content-encoding': 'gzip' });
    gz.status.should.equal(400);
    gz.body.reason.should.equal('content encoding gzip is not supported');
  });

  it('gives the text it parsed, 64-bit integers quoted so that JSON.parse reads it exactly; not for a string some middleware made', async function () {
    server = await startServer(1000);
    const sent = '{"data":{"entry":[{"assetId":1,"rrn":12345678901234567890,"path":"a\\nb"}]}}';
    const r = await post(server, sent);
    r.body.text.should.equal(sent.replace('12345678901234567890', '"12345678901234567890"'));
    JSON.parse(r.body.text).should.eql(r.body.value);
    server.close();
    server = await startServer(1000, (req) => { req._body = true; req.body = Buffer.from(sent); });
    (await post(server, 'ignored')).body.text.should.be.a.String();
    server.close();
    // A string may hold lone surrogates, which the inbox's journal (UTF-8) would not keep as they were.
    server = await startServer(1000, (req) => { req._body = true; req.body = sent; });
    const fromString = (await post(server, 'ignored')).body;
    fromString.ok.should.be.true();
    fromString.should.not.have.property('text');
  });

  it('uses a body some middleware already parsed', async function () {
    server = await startServer(1000, (req) => { req._body = true; req.body = { data: { entry: [] } }; });
    const r = await post(server, 'ignored');
    r.body.should.eql({ ok: true, value: { data: { entry: [] } } });
  });

  it('reports a body cut off by the client as 400, not a crash', async function () {
    let outcome;
    const s = http.createServer(async (req, res) => { outcome = await readJsonBody(req, 1000); res.end(); });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    server = s;
    const sock = net.connect(s.address().port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":');
    await new Promise((r) => setTimeout(r, 50));
    sock.destroy();
    for (let i = 0; i < 50 && !outcome; i++) await new Promise((r) => setTimeout(r, 10));
    outcome.should.eql({ ok: false, status: 400, reason: 'request body was not received completely' });
  });
});

describe('events: charset and secret', function () {
  it('decodes the body in its declared charset, UTF-8 when none; an unknown charset is named', function () {
    const latin1 = Buffer.from('{"p":"München"}', 'latin1');
    bodyText(latin1, 'text/plain; charset=ISO-8859-1').should.eql({ ok: true, text: '{"p":"München"}' });
    bodyText(latin1, 'application/json; charset="iso-8859-1"').should.eql({ ok: true, text: '{"p":"München"}' });
    bodyText(Buffer.from('{"p":"München"}'), undefined).should.eql({ ok: true, text: '{"p":"München"}' });
    bodyText(Buffer.from('{"p":"München"}'), 'application/json;charset=UTF-8').should.eql({ ok: true, text: '{"p":"München"}' });
    bodyText(latin1, 'application/json; charset=nope').should.eql({ ok: false, status: 400, reason: 'charset nope is not supported: send UTF-8' });
  });

  it('compares secrets exactly', function () {
    secretMatches('s3cret', 's3cret').should.be.true();
    secretMatches('s3cret ', 's3cret').should.be.false();
    secretMatches('', 's3cret').should.be.false();
    secretMatches(undefined, 's3cret').should.be.false();
    secretMatches(['s3cret', 's3cret'], 's3cret').should.be.false();
  });
});
