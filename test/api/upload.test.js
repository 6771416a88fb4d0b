'use strict';
// Upload (spec 4.2, 2.4) against the real emulator; faults from small real servers.
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
const { PassThrough, Readable } = require('stream');
const should = require('should');
const yazl = require('yazl');
const axios = require('axios');
const { AssetClient } = require('../../dist/api/client');
const {
  COOKIES, tempDir, startTestEmulator, startServer, closedPortUrl, expectError, seenErrors, assertNoCookieIn
} = require('./helpers');

function makeZip(entries) {
  return new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (const [name, text] of entries) zip.addBuffer(Buffer.from(text), name);
    zip.end();
    const chunks = [];
    zip.outputStream.on('data', (c) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
}

/** How many descriptors of this process are open on `file` (Linux /proc; 0 elsewhere). */
function openDescriptorsOf(file) {
  if (!fs.existsSync('/proc/self/fd')) return 0;
  return fs.readdirSync('/proc/self/fd').filter((fd) => {
    try { return fs.readlinkSync(`/proc/self/fd/${fd}`) === file; } catch { return false; }
  }).length;
}

describe('api client: upload against the emulator', () => {
  let emu;
  let api;
  let dir;
  /** Emulator-only lookup of an asset by path (GET /emulator/assets?path=). */
  async function assetAt(assetPath) {
    const res = await axios.get(`${emu.url}/emulator/assets`, {
      params: { path: assetPath }, headers: { Cookie: `JSESSIONID=${COOKIES.editor}` }, validateStatus: () => true
    });
    return res.data.success ? res.data.asset : undefined;
  }
  before(async () => {
    emu = await startTestEmulator();
    api = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor });
    dir = await tempDir();
  });
  after(async () => {
    api.close();
    await emu.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('uploads a file from disk with Content-Length, reports progress, and answers as spec 2.4', async () => {
    const file = path.join(dir, 'photo.jpg');
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await fsp.writeFile(file, bytes);
    const reports = [];
    const outcome = await api.upload({ file: { path: file }, destination: '/inbox', wait: true, onProgress: (p) => reports.push(p) });
    outcome.result.success.should.be.true();
    outcome.result.length.should.equal(bytes.length);
    outcome.result.data.bid.should.equal(1);
    outcome.fuids.should.have.length(1);
    should.exist(outcome.rrn);
    reports.length.should.be.above(0);
    reports[reports.length - 1].should.eql({ bytes: bytes.length, total: bytes.length });
    reports.forEach((r, i) => i > 0 && r.bytes.should.be.aboveOrEqual(reports[i - 1].bytes));
    const stored = await api.downloadToBuffer({ fuid: outcome.fuids[0] });
    stored.data.equals(bytes).should.be.true();
    stored.filename.should.equal('photo.jpg');
  });

  it('a local file whose name holds a newline or a control character is read (Linux allows them); the name sent is cleaned; downloads write to such a path; a NUL is refused', async () => {
    const odd = path.join(dir, 'line\nbreak\u0001.txt');
    await fsp.writeFile(odd, 'odd name');
    const outcome = await api.upload({ file: { path: odd }, destination: '/odd-names', wait: true });
    const stored = await api.downloadToBuffer({ fuid: outcome.fuids[0] });
    stored.data.toString().should.equal('odd name');
    stored.filename.should.not.match(/[\u0000-\u001f]/);
    const back = path.join(dir, 'back\nagain.txt');
    (await api.downloadToFile({ fuid: outcome.fuids[0], path: back })).path.should.equal(back);
    (await fsp.readFile(back, 'utf8')).should.equal('odd name');
    const err = await expectError(api.upload({ file: { path: path.join(dir, 'nul\u0000.txt') }, destination: '/odd-names' }), 'invalid-input');
    err.field.should.equal('file.path');
  });

  it('uploads a Buffer and a stream with and without a known length', async () => {
    const fromBuffer = await api.upload({ file: { buffer: Buffer.from('buffer body') }, name: 'b.txt', destination: '/inbox', wait: true });
    (await api.downloadToBuffer({ fuid: fromBuffer.fuids[0] })).data.toString().should.equal('buffer body');

    const known = await api.upload({ file: { stream: Readable.from([Buffer.from('abc'), Buffer.from('def')]), length: 6 }, name: 's1.txt', destination: '/inbox', wait: true });
    known.result.length.should.equal(6);

    const unknown = new PassThrough();
    setTimeout(() => { unknown.write('chunked '); unknown.end('body'); }, 20);
    const chunked = await api.upload({ file: { stream: unknown }, name: 's2.txt', destination: '/inbox', wait: true });
    (await api.downloadToBuffer({ fuid: chunked.fuids[0] })).data.toString().should.equal('chunked body');

    const empty = await api.upload({ file: { buffer: Buffer.alloc(0) }, name: 'empty.txt', destination: '/inbox', wait: true });
    empty.result.length.should.equal(0);
    // No name for a buffer: upload.bin.
    const unnamed = await api.upload({ file: { buffer: Buffer.from('x') }, destination: '/unnamed', wait: true });
    should.exist(await assetAt('/unnamed/upload.bin'));
    unnamed.fuids.should.have.length(1);
  });

  it('a stream shorter than its given length fails as invalid-input on file and stores nothing', async () => {
    const error = await expectError(api.upload({
      file: { stream: Readable.from([Buffer.from('short')]), length: 100 }, name: 'short.txt', destination: '/inbox', wait: true
    }), 'invalid-input');
    error.field.should.equal('file');
    should.not.exist(await assetAt('/inbox/short.txt'));
  });

  it('sends name, destination, destinationFuid, collectionId, waitInMinutes and expandZip', async () => {
    const named = await api.upload({ file: { buffer: Buffer.from('n') }, name: 'renamed.txt', destination: '/fields', collectionId: 7, wait: true, waitInMinutes: 2 });
    const meta = (await api.exportMetadata({ fuid: named.fuids[0] })).data;
    meta.path.should.equal('/fields/renamed.txt');
    meta.collectionId.should.equal(7);

    const folder = await assetAt('/fields');
    const byFuid = await api.upload({ file: { buffer: Buffer.from('f') }, name: 'by-fuid.txt', destinationFuid: folder.fuid, wait: true });
    (await api.exportMetadata({ fuid: byFuid.fuids[0] })).data.path.should.equal('/fields/by-fuid.txt');

    const zip = await makeZip([['one.txt', '1'], ['sub/two.txt', '2']]);
    const expanded = await api.upload({ file: { buffer: zip }, name: 'pack.zip', destination: '/zips', wait: true });
    expanded.fuids.should.have.length(2);
    const whole = await api.upload({ file: { buffer: zip }, name: 'pack.zip', destination: '/zips', wait: true, expandZip: false });
    whole.fuids.should.have.length(1);
    should.exist(await assetAt('/zips/pack.zip'));
  });

  it('wait false answers at once with the job id', async () => {
    const outcome = await api.upload({ file: { buffer: Buffer.from('later') }, name: 'later.txt', destination: '/jobs', wait: false });
    outcome.result.success.should.be.true();
    outcome.jobId.should.be.a.String().and.not.be.empty();
    outcome.jobId.should.equal(String(outcome.result.jobId));
  });

  it('uploading the same name again creates a new revision of the same fuid', async () => {
    const first = await api.upload({ file: { buffer: Buffer.from('v1') }, name: 'rev.txt', destination: '/revs', wait: true });
    const second = await api.upload({ file: { buffer: Buffer.from('v2') }, name: 'rev.txt', destination: '/revs', wait: true });
    second.fuids.should.eql(first.fuids);
    String(second.rrn).should.not.equal(String(first.rrn));
    (await api.downloadToBuffer({ fuid: first.fuids[0], rrn: first.rrn })).data.toString().should.equal('v1');
    (await api.downloadToBuffer({ fuid: first.fuids[0] })).data.toString().should.equal('v2');
  });

  it('401 is kind auth; a session without the add permission is kind permission', async () => {
    for (const cookie of [COOKIES.wrong, '']) {
      const client = new AssetClient({ baseUrl: emu.url, cookie });
      const error = await expectError(client.upload({ file: { buffer: Buffer.alloc(1024 * 1024) }, name: 'x.bin', destination: '/inbox' }), 'auth');
      error.operation.should.equal('upload');
      client.close();
    }
    const viewer = new AssetClient({ baseUrl: emu.url, cookie: `JSESSIONID=${COOKIES.viewer}` });
    const error = await expectError(viewer.upload({ file: { buffer: Buffer.from('x') }, name: 'denied.txt', destination: '/inbox', wait: true }), 'permission');
    error.message.should.match(/add \(adding files\) permission/);
    viewer.close();
    should.not.exist(await assetAt('/inbox/denied.txt'));
  });

  it('a bad destination is kind rejected with the server message', async () => {
    const error = await expectError(api.upload({ file: { buffer: Buffer.from('x') }, name: 'x.txt', destinationFuid: 999999, wait: true }), 'rejected');
    should.exist(error.serverMessage);
  });

  it('aborting mid-upload is kind aborted, closes the file, and stores nothing', async () => {
    const file = path.join(dir, 'abort.bin');
    const handle = await fsp.open(file, 'w');
    await handle.truncate(256 * 1024 * 1024);
    await handle.close();
    const controller = new AbortController();
    let sent = 0;
    const error = await expectError(api.upload({
      file: { path: file }, destination: '/aborted', wait: true, signal: controller.signal,
      onProgress: (p) => { sent = p.bytes; if (p.bytes > 0) controller.abort(); }
    }), 'aborted');
    error.operation.should.equal('upload');
    sent.should.be.below(256 * 1024 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 300));
    should.not.exist(await assetAt('/aborted/abort.bin'));
    openDescriptorsOf(file).should.equal(0);
  });
});

describe('api client: upload faults (small real servers)', () => {
  let server;
  let reply;
  let requests;
  const clients = [];
  before(async () => {
    server = await startServer((req, res) => { requests++; reply(req, res); });
  });
  beforeEach(() => { requests = 0; });
  after(async () => {
    for (const made of clients) made.close();
    await server.close();
  });
  function client(options = {}) {
    const made = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, ...options });
    clients.push(made);
    return made;
  }
  /** Reads the whole request body, then answers. */
  function answerAfterBody(status, body, delayMs = 0, headers = {}) {
    reply = (req, res) => {
      let size = 0;
      req.on('data', (c) => { size += c.length; });
      req.on('end', () => setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        res.end(typeof body === 'function' ? body(size) : JSON.stringify(body));
      }, delayMs));
    };
  }

  it('an abort in the first moments (next tick, first progress report) closes the request: no socket left open', async () => {
    reply = (req) => { req.resume(); }; // reads, never answers
    const openConnections = () => new Promise((resolve) => server.server.getConnections((err, n) => resolve(n)));
    for (const when of ['nextTick', 'firstProgress']) {
      const controller = new AbortController();
      let chunks = 0;
      const stream = new Readable({ read() { this.push(chunks++ < 400 ? Buffer.alloc(65536) : null); } });
      if (when === 'nextTick') process.nextTick(() => controller.abort());
      const err = await expectError(client().upload({
        file: { stream, length: 400 * 65536 }, name: 'early.bin', destination: '/t', signal: controller.signal,
        onProgress: () => { if (when === 'firstProgress') controller.abort(); }
      }), 'aborted');
      err.operation.should.equal('upload');
      // The request may still be connecting when the call rejects: give it time to show up.
      await new Promise((r) => setTimeout(r, 500));
      const deadline = Date.now() + 2000;
      while (await openConnections() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      (await openConnections()).should.equal(0, `a socket stayed open after an abort at ${when}`);
    }
  });

  it('close() lets a request in flight finish, then leaves no connection open', async () => {
    answerAfterBody(200, { success: true, length: 3, data: { bid: 1, fuids: [7], rrn: 1001 } }, 300);
    const made = client();
    const pending = made.upload({ file: { buffer: Buffer.from('abc') }, name: 'c.txt', destination: '/t' });
    await new Promise((r) => setTimeout(r, 100));
    made.close();
    (await pending).fuids.should.eql([7]);
    const openConnections = () => new Promise((resolve) => server.server.getConnections((err, n) => resolve(n)));
    const deadline = Date.now() + 2000;
    while (await openConnections() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    (await openConnections()).should.equal(0);
  });

  it('keeps an rrn beyond 2^53 exact (as a string) and reads a job id tolerantly', async () => {
    answerAfterBody(200, () => '{"success":true,"data":{"bid":1,"fuids":[5],"rrn":9223372036854775807},"length":3}');
    const big = await client().upload({ file: { buffer: Buffer.from('abc') }, name: 'a', destination: '/x', wait: true });
    big.rrn.should.equal('9223372036854775807');
    big.result.data.rrn.should.equal('9223372036854775807');
    big.fuids.should.eql([5]);
    for (const [body, id] of [
      [{ success: 'true', job: { id: 17 } }, '17'],
      [{ success: true, data: { jobId: 'j-9' } }, 'j-9'],
      [{ success: true, job_id: 'under' }, 'under'],
      [{ success: true, jobid: 'lower' }, 'lower']
    ]) {
      answerAfterBody(200, body);
      (await client().upload({ file: { buffer: Buffer.from('abc') }, name: 'a', destination: '/x' })).jobId.should.equal(id);
    }
  });

  it('a redirect on upload is kind http, not followed, and the body is not buffered for a retry', async () => {
    reply = (req, res) => {
      res.writeHead(307, { Location: '/elsewhere/upload' });
      res.end();
    };
    const file = path.join(await tempDir(), 'redirect.bin');
    const handle = await fsp.open(file, 'w');
    await handle.truncate(64 * 1024 * 1024);
    await handle.close();
    const error = await expectError(client().upload({ file: { path: file }, destination: '/x' }), 'http');
    error.status.should.equal(307);
    error.message.should.match(/redirect .*not followed for uploads/);
    requests.should.equal(1);
    await fsp.rm(path.dirname(file), { recursive: true, force: true });
  });

  it('503 and 449 on upload are kind http: server busy, retry later', async () => {
    for (const status of [503, 449]) {
      answerAfterBody(status, { success: 'false', errorInfo: 'ingest queue full' });
      const error = await expectError(client().upload({ file: { buffer: Buffer.from('abc') }, name: 'a', destination: '/x' }), 'http');
      error.message.should.match(/server busy \(HTTP \d+\), retry later/);
      error.serverMessage.should.equal('ingest queue full');
    }
  });

  it('with wait, the timeout covers waitInMinutes once the file is sent', async () => {
    answerAfterBody(200, (size) => JSON.stringify({ success: true, data: { bid: 1, fuids: [1], rrn: 2 }, length: size }), 800);
    const api = client({ timeout: 300 });
    // 0.05 minutes = 3 s of waiting allowed on top of the 300 ms timeout.
    const waited = await api.upload({ file: { buffer: Buffer.from('abc') }, name: 'a', destination: '/x', wait: true, waitInMinutes: 0.05 });
    waited.fuids.should.eql([1]);
    const error = await expectError(api.upload({ file: { buffer: Buffer.from('abc') }, name: 'a', destination: '/x', wait: false }), 'timeout');
    error.message.should.match(/300 ms/);
    error.bodySent.should.be.true('the whole file had gone out: the server may have it');
  });

  it('a server that resets the connection mid-upload is kind network; a down server too', async () => {
    reply = (req) => {
      let size = 0;
      req.on('data', (c) => { size += c.length; if (size > 1024 * 1024) req.socket.destroy(); });
    };
    const file = path.join(await tempDir(), 'reset.bin');
    const handle = await fsp.open(file, 'w');
    await handle.truncate(32 * 1024 * 1024);
    await handle.close();
    const error = await expectError(client().upload({ file: { path: file }, destination: '/x' }), 'network');
    should.exist(error.code);
    should.not.exist(error.bodySent); // cut after 1 MiB of 32: the server cannot have the file
    await fsp.rm(path.dirname(file), { recursive: true, force: true });
    const down = new AssetClient({ baseUrl: await closedPortUrl(), cookie: COOKIES.editor });
    const refused = await expectError(down.upload({ file: { buffer: Buffer.from('x') }, destination: '/x' }), 'network');
    refused.code.should.equal('ECONNREFUSED');
    should.not.exist(refused.bodySent); // a one-byte file, all read, but never on a connection
    down.close();
  });

  it('sends the fields before the file, as multipart form data with the cookie', async () => {
    let seen;
    reply = (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        seen = { headers: req.headers, body: Buffer.concat(chunks).toString('latin1') };
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"success":true,"jobId":"j"}');
      });
    };
    await client().upload({
      file: { buffer: Buffer.from('PAYLOAD') }, name: 'n.txt', destination: '/d', destinationFuid: 4, collectionId: 0,
      wait: false, waitInMinutes: 5, expandZip: false, contentType: 'text/x-test'
    });
    seen.headers.cookie.should.equal(`JSESSIONID=${COOKIES.editor}`);
    // UTF-8 declared: a servlet container reads an undeclared body as ISO-8859-1
    seen.headers['content-type'].should.match(/^multipart\/form-data; charset=UTF-8; boundary=/);
    Number(seen.headers['content-length']).should.equal(Buffer.byteLength(seen.body, 'latin1'));
    const order = [...seen.body.matchAll(/; name="([^"]+)"/g)].map((m) => m[1]);
    order.should.eql(['name', 'destination', 'destinationFuid', 'collectionId', 'wait', 'waitInMinutes', 'expandZip', 'file']);
    seen.body.should.match(/filename="n\.txt"\r\nContent-Type: text\/x-test\r\n\r\nPAYLOAD/);
  });
});

describe('api upload: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(8);
    assertNoCookieIn(seenErrors);
  });
});
