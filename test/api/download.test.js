'use strict';
// Download (spec 4.3) against the real emulator: to a Buffer, a stream and a file;
// interrupted downloads leave nothing behind. Faults from small real servers.
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
const crypto = require('crypto');
const should = require('should');
const { AssetClient } = require('../../dist/api/client');
const { AssetApiError } = require('../../dist/api/errors');
const {
  COOKIES, tempDir, startTestEmulator, startServer, expectError, recordError, seenErrors, assertNoCookieIn, filesIn
} = require('./helpers');

const MiB = 1024 * 1024;

describe('api client: download against the emulator', () => {
  let emu;
  let api;
  let dir;
  let small; // { fuid, rrn, bytes }
  let big; // 32 MiB, random bytes
  before(async () => {
    emu = await startTestEmulator();
    api = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor });
    dir = await tempDir();
    const smallBytes = Buffer.from('hello, asset\n');
    const up = await api.upload({ file: { buffer: smallBytes }, name: 'hello.txt', destination: '/dl', wait: true });
    small = { fuid: up.fuids[0], rrn: up.rrn, bytes: smallBytes };
    const bigFile = path.join(dir, 'big.bin');
    const bigBytes = crypto.randomBytes(32 * MiB);
    await fsp.writeFile(bigFile, bigBytes);
    const upBig = await api.upload({ file: { path: bigFile }, destination: '/dl', wait: true });
    big = { fuid: upBig.fuids[0], bytes: bigBytes, sha: crypto.createHash('sha256').update(bigBytes).digest('hex') };
    await fsp.rm(bigFile);
  });
  after(async () => {
    api.close();
    await emu.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('downloads to a Buffer with file name, content type, length and progress', async () => {
    const reports = [];
    const got = await api.downloadToBuffer({ fuid: small.fuid, onProgress: (p) => reports.push(p) });
    got.data.equals(small.bytes).should.be.true();
    got.filename.should.equal('hello.txt');
    got.contentType.should.match(/^text\/plain/);
    got.length.should.equal(small.bytes.length);
    got.headers['content-length'].should.equal(String(small.bytes.length));
    should.not.exist(got.headers['set-cookie']);
    reports[reports.length - 1].should.eql({ bytes: small.bytes.length, total: small.bytes.length });
  });

  it('downloads an older revision by rrn (default -1 = latest), fuid given as a string', async () => {
    const v2 = await api.upload({ file: { buffer: Buffer.from('second revision') }, name: 'hello.txt', destination: '/dl', wait: true });
    v2.fuids.should.eql([small.fuid]);
    (await api.downloadToBuffer({ fuid: String(small.fuid), rrn: small.rrn })).data.equals(small.bytes).should.be.true();
    (await api.downloadToBuffer({ fuid: small.fuid })).data.toString().should.equal('second revision');
    (await api.downloadToBuffer({ fuid: small.fuid, rrn: -1, collectionId: 0 })).data.toString().should.equal('second revision');
  });

  it('downloads to a stream', async () => {
    const got = await api.downloadToStream({ fuid: big.fuid });
    got.length.should.equal(big.bytes.length);
    const hash = crypto.createHash('sha256');
    for await (const chunk of got.stream) hash.update(chunk);
    hash.digest('hex').should.equal(big.sha);
  });

  it('downloads to a file atomically, creating folders, or into a folder under the server name', async () => {
    const target = path.join(dir, 'a', 'b', 'copy.bin');
    const done = await api.downloadToFile({ fuid: big.fuid, path: target });
    done.path.should.equal(target);
    done.bytes.should.equal(big.bytes.length);
    crypto.createHash('sha256').update(await fsp.readFile(target)).digest('hex').should.equal(big.sha);
    (await filesIn(path.dirname(target))).should.eql(['copy.bin']);

    const intoFolder = await api.downloadToFile({ fuid: small.fuid, path: path.join(dir, 'folder') + path.sep });
    intoFolder.path.should.equal(path.join(dir, 'folder', 'hello.txt'));
    const again = await api.downloadToFile({ fuid: small.fuid, path: path.join(dir, 'folder'), ifExists: 'replace' });
    again.path.should.equal(path.join(dir, 'folder', 'hello.txt'));
    (await filesIn(path.join(dir, 'folder'))).should.eql(['hello.txt']);
    // By default an existing file of the server's name is kept (issue 22).
    const kept = await api.downloadToFile({ fuid: small.fuid, path: path.join(dir, 'folder') });
    kept.path.should.equal(path.join(dir, 'folder', 'hello (1).txt'));
    (await filesIn(path.join(dir, 'folder'))).should.eql(['hello (1).txt', 'hello.txt']);
  });

  it('a path the file system refuses for its length: invalid-input naming path before any request; keep-both shortens a long name', async () => {
    // A new-user audit: a 5000-character File failed only after the whole download, with the
    // whole path in the message.
    const before = emu.emulator.requestsWith(COOKIES.editor);
    const longName = await expectError(api.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'n'.repeat(300) + '.bin') }), 'invalid-input');
    longName.field.should.equal('path');
    longName.message.should.match(/longer than 255 bytes/);
    longName.message.length.should.be.below(200);
    const longPath = await expectError(api.downloadToFile({ fuid: big.fuid, path: path.join(dir, ...Array(30).fill('p'.repeat(200))) }), 'invalid-input');
    longPath.message.should.match(/longer than 4095 bytes/);
    emu.emulator.requestsWith(COOKIES.editor).should.equal(before, 'nothing was downloaded');

    // Keep both, a server name as long as a name can be: its copy is ` (1)` with a shorter stem.
    const long = 'l'.repeat(251) + '.txt';
    const up = await api.upload({ file: { buffer: Buffer.from('long name') }, name: long, destination: '/dl', wait: true });
    const folder = path.join(dir, 'long-names');
    (await api.downloadToFile({ fuid: up.fuids[0], path: folder + path.sep })).path.should.equal(path.join(folder, long));
    const copy = await api.downloadToFile({ fuid: up.fuids[0], path: folder + path.sep });
    copy.path.should.equal(path.join(folder, 'l'.repeat(247) + ' (1).txt'));
    (await fsp.readFile(copy.path, 'utf8')).should.equal('long name');
  });

  it('a JSON file that reads like an error answer is file content: the server sends it as a file', async () => {
    // Before: "rejected: the server refused: disk full", in every mode, for this uploaded asset.
    const content = Buffer.from('{"success":false,"error":"disk full"}');
    const up = await api.upload({ file: { buffer: content }, name: 'status.json', destination: '/dl', wait: true });
    const got = await api.downloadToBuffer({ fuid: up.fuids[0] });
    got.contentType.should.match(/json/);
    got.filename.should.equal('status.json');
    got.data.equals(content).should.be.true();
    const target = path.join(dir, 'json-content', 'status.json');
    await api.downloadToFile({ fuid: up.fuids[0], path: target });
    (await fsp.readFile(target)).equals(content).should.be.true();
    const streamed = await api.downloadToStream({ fuid: up.fuids[0] });
    const chunks = [];
    for await (const chunk of streamed.stream) chunks.push(chunk);
    Buffer.concat(chunks).equals(content).should.be.true();
  });

  it('a JSON file is file content, also beyond the peeked size', async () => {
    const json = Buffer.from(JSON.stringify({ success: true, list: Array.from({ length: 20000 }, (_, i) => i) }));
    json.length.should.be.above(64 * 1024);
    const up = await api.upload({ file: { buffer: json }, name: 'data.json', destination: '/dl', wait: true });
    const got = await api.downloadToBuffer({ fuid: up.fuids[0] });
    got.contentType.should.match(/json/);
    got.data.equals(json).should.be.true();
    const smallJson = Buffer.from('{"success":true,"x":1}');
    const up2 = await api.upload({ file: { buffer: smallJson }, name: 'small.json', destination: '/dl', wait: true });
    (await api.downloadToBuffer({ fuid: up2.fuids[0] })).data.equals(smallJson).should.be.true();
  });

  it('an unknown fuid or rrn is kind rejected and creates no file', async () => {
    const target = path.join(dir, 'unknown', 'x.bin');
    (await expectError(api.downloadToFile({ fuid: 987654, path: target }), 'rejected')).serverMessage.should.match(/987654/);
    await expectError(api.downloadToBuffer({ fuid: small.fuid, rrn: 1 }), 'rejected');
    (await filesIn(path.dirname(target))).should.eql([]);
  });

  it('401 is kind auth and creates no file', async () => {
    const wrong = new AssetClient({ baseUrl: emu.url, cookie: `JSESSIONID=${COOKIES.wrong}` });
    const target = path.join(dir, 'auth', 'x.bin');
    (await expectError(wrong.downloadToFile({ fuid: small.fuid, path: target }), 'auth')).status.should.equal(401);
    await expectError(wrong.downloadToStream({ fuid: small.fuid }), 'auth');
    wrong.close();
    (await filesIn(path.dirname(target))).should.eql([]);
  });

  it('aborted half-way via AbortSignal: kind aborted, no file and no temporary file', async () => {
    const target = path.join(dir, 'aborted', 'big.bin');
    const controller = new AbortController();
    let seenBytes = 0;
    const error = await expectError(api.downloadToFile({
      fuid: big.fuid, path: target, signal: controller.signal,
      onProgress: (p) => { seenBytes = p.bytes; if (p.bytes > 0) controller.abort(); }
    }), 'aborted');
    error.operation.should.equal('download');
    seenBytes.should.be.above(0).and.below(big.bytes.length);
    (await filesIn(path.dirname(target))).should.eql([]);
  });

  it('a failed download keeps the previous file at the target untouched', async () => {
    const target = path.join(dir, 'keep', 'big.bin');
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.writeFile(target, 'previous content');
    const controller = new AbortController();
    await expectError(api.downloadToFile({
      fuid: big.fuid, path: target, signal: controller.signal, onProgress: () => controller.abort()
    }), 'aborted');
    (await fsp.readFile(target, 'utf8')).should.equal('previous content');
    (await filesIn(path.dirname(target))).should.eql(['big.bin']);
  });

  it('a stream download aborted while reading emits kind aborted on the stream', async () => {
    const controller = new AbortController();
    const got = await api.downloadToStream({ fuid: big.fuid, signal: controller.signal });
    let error;
    let bytes = 0;
    try {
      for await (const chunk of got.stream) {
        bytes += chunk.length;
        controller.abort();
      }
    } catch (err) {
      error = err;
    }
    should.exist(error);
    recordError(error);
    error.should.be.instanceOf(AssetApiError);
    error.kind.should.equal('aborted');
    bytes.should.be.below(big.bytes.length);
  });

  it('a stream the caller destroys early ends the request quietly', async () => {
    const got = await api.downloadToStream({ fuid: big.fuid });
    await new Promise((resolve) => got.stream.once('readable', resolve));
    got.stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The client still works afterwards.
    (await api.downloadToBuffer({ fuid: small.fuid })).data.toString().should.equal('second revision');
  });
});

describe('api client: download faults (small real servers)', () => {
  let server;
  let reply;
  let dir;
  let api;
  const open = [];
  before(async () => {
    server = await startServer((req, res) => reply(req, res));
    api = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor });
    dir = await tempDir();
  });
  after(async () => {
    api.close();
    for (const res of open) res.destroy();
    await server.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('a server that dies mid-body (half of Content-Length sent) gives kind network and leaves no file', async () => {
    const length = 8 * MiB;
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(length), 'Content-Disposition': 'attachment; filename="half.bin"' });
      res.write(Buffer.alloc(length / 2, 1), () => setTimeout(() => res.socket.destroy(), 50));
    };
    const target = path.join(dir, 'died', 'half.bin');
    const error = await expectError(api.downloadToFile({ fuid: 1, path: target }), 'network');
    error.operation.should.equal('download');
    error.answerBegun.should.be.true('the server had begun to answer: it was there (asset-event-in holds nothing for it)');
    (await filesIn(path.dirname(target))).should.eql([]);
    (await expectError(api.downloadToBuffer({ fuid: 1 }), 'network')).answerBegun.should.be.true();
  });

  it('aborted exactly half-way (half of the body received, then AbortSignal) leaves no file and no temporary file', async () => {
    const length = 8 * MiB;
    const controller = new AbortController();
    let received = 0;
    reply = (req, res) => {
      open.push(res);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(length) });
      // Once half is flushed to the socket, give the client time to take it in, then abort.
      res.write(Buffer.alloc(length / 2, 3), () => setTimeout(async () => {
        partial = await filesIn(path.dirname(target));
        controller.abort();
      }, 300));
    };
    let partial;
    const target = path.join(dir, 'half-aborted', 'x.bin');
    await expectError(api.downloadToFile({
      fuid: 1, path: target, signal: controller.signal, onProgress: (p) => { received = p.bytes; }
    }), 'aborted');
    received.should.be.above(0).and.belowOrEqual(length / 2);
    // While it ran, only a temporary file was there; after the abort, nothing.
    partial.should.have.length(1);
    partial[0].should.match(/^\.dam-[0-9a-f]{12}\.part$/);
    (await filesIn(path.dirname(target))).should.eql([]);
  });

  it('a server that stalls mid-body gives kind timeout and leaves no file', async () => {
    reply = (req, res) => {
      open.push(res);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(2 * MiB) });
      res.write(Buffer.alloc(MiB, 2));
    };
    const target = path.join(dir, 'stalled', 'x.bin');
    const started = Date.now();
    const error = await expectError(api.downloadToFile({ fuid: 1, path: target, timeout: 300 }), 'timeout');
    (Date.now() - started).should.be.below(5000);
    error.message.should.match(/300 ms/);
    error.answerBegun.should.be.true();
    (await filesIn(path.dirname(target))).should.eql([]);
  });

  it('answerBegun: a JSON body cut while it is peeked at has it; headers and then no byte of the body (a hung store) does not', async () => {
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
      res.write('{"success":', () => setTimeout(() => res.socket.destroy(), 50));
    };
    (await expectError(api.downloadToBuffer({ fuid: 1 }), 'network')).answerBegun.should.be.true();
    for (const type of ['application/json', 'application/octet-stream']) {
      reply = (req, res) => {
        open.push(res);
        res.writeHead(200, { 'Content-Type': type, 'Content-Length': '1000' });
        res.flushHeaders();
      };
      const stalled = await expectError(api.downloadToBuffer({ fuid: 1, timeout: 300 }), 'timeout');
      should.not.exist(stalled.answerBegun, type);
    }
  });

  it('449 and 503 are kind http: server busy, retry later; no file', async () => {
    for (const status of [449, 503]) {
      reply = (req, res) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ success: 'false', errorInfo: 'resources unavailable', errorCode: 'busy' }));
      };
      const target = path.join(dir, `busy${status}`, 'x.bin');
      const error = await expectError(api.downloadToFile({ fuid: 1, path: target }), 'http');
      error.status.should.equal(status);
      error.message.should.match(/server busy \(HTTP \d+\), retry later/);
      error.serverMessage.should.equal('resources unavailable (busy)');
      should.not.exist(error.answerBegun); // a busy answer is whole: the server may be away for the next call
      (await filesIn(path.dirname(target))).should.eql([]);
    }
  });

  it('a body sent as a file (Content-Disposition) is content, whatever it holds', async () => {
    const bodies = [
      { success: false, error: 'disk full' },
      { success: 'false', errorInfo: 'no such revision', errorCode: 'E1' },
      { error: 'only an error field' },
      { errorCode: 'only a code' }
    ];
    for (const disposition of ['attachment; filename="state.json"', 'inline; filename="state.json"', 'attachment']) {
      for (const body of bodies) {
        const text = JSON.stringify(body);
        reply = (req, res) => {
          res.writeHead(200, { 'Content-Type': 'application/json;charset=UTF-8', 'Content-Disposition': disposition });
          res.end(text);
        };
        (await api.downloadToBuffer({ fuid: 1 })).data.toString().should.equal(text, `${disposition}: ${text}`);
        const target = path.join(dir, 'as-file', 'state.json');
        await api.downloadToFile({ fuid: 1, path: target });
        (await fsp.readFile(target, 'utf8')).should.equal(text);
      }
    }
  });

  it('the error shape without Content-Disposition is an error: success false or "false", error, errorInfo, errorCode', async () => {
    for (const body of [{ error: 'no such asset' }, { errorInfo: 'no such asset' }, { success: 'FALSE', errorCode: 'no such asset' }]) {
      reply = (req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      (await expectError(api.downloadToBuffer({ fuid: 1 }), 'rejected')).serverMessage.should.match(/no such asset/);
    }
  });

  it('Buffer mode: a Content-Length above maxBytes fails as too-large before the body is read, naming file mode', async () => {
    let served = 0;
    const closed = [];
    reply = (req, res) => {
      open.push(res);
      served++;
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(300 * 1000 * 1000) });
      res.flushHeaders();
      // The body would follow only once the client asks for it (it never does).
      req.socket.once('close', () => closed.push(Date.now()));
    };
    const small = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, maxBufferBytes: 100 * 1000 * 1000 });
    try {
      const started = Date.now();
      const error = await expectError(small.downloadToBuffer({ fuid: 1 }), 'too-large');
      (Date.now() - started).should.be.below(2000);
      error.operation.should.equal('download');
      error.message.should.match(/300\.0 MB \(Content-Length\), above the limit of 100\.0 MB .*file mode/);
      // The per-call limit wins over the client's.
      (await expectError(api.downloadToBuffer({ fuid: 1, maxBytes: 1000 }), 'too-large')).message.should.match(/limit of 1000 bytes/);
      await expectError(api.downloadToBuffer({ fuid: 1, maxBytes: 0 }), 'invalid-input');
      served.should.equal(2);
      // The client hung up: the connection of each refused download is closed.
      for (let i = 0; i < 100 && closed.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      closed.should.have.length(2);
    } finally {
      small.close();
    }
  });

  it('Buffer mode, chunked: fails as too-large as soon as the body passes maxBytes, and stops reading', async () => {
    let sent = 0;
    let stopped = false;
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const chunk = Buffer.alloc(256 * 1024, 7);
      const pump = () => {
        while (!stopped && sent < 64 * MiB) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => { stopped = true; });
      pump();
    };
    const error = await expectError(api.downloadToBuffer({ fuid: 1, maxBytes: 2 * MiB }), 'too-large');
    error.message.should.match(/the file \(sent without Content-Length\) passed the limit of 2\.1 MB .*file mode/);
    for (let i = 0; i < 100 && !stopped; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    stopped.should.be.true();
    sent.should.be.below(32 * MiB);
    // Under the limit, a chunked body arrives whole.
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.write(Buffer.alloc(MiB, 1));
      res.end(Buffer.alloc(MiB, 2));
    };
    const got = await api.downloadToBuffer({ fuid: 1, maxBytes: 2 * MiB });
    got.data.length.should.equal(2 * MiB);
    got.data[0].should.equal(1);
    got.data[2 * MiB - 1].should.equal(2);
  });

  it('a body shorter than its Content-Length in Buffer mode is kind network, never a part-filled Buffer', async () => {
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(4 * MiB) });
      res.write(Buffer.alloc(MiB, 9), () => res.socket.destroy());
    };
    await expectError(api.downloadToBuffer({ fuid: 1 }), 'network');
  });

  it('JSON answers of the other calls are bounded (maxAnswerBytes): too-large, not read whole', async () => {
    const big = JSON.stringify({ success: true, id: 'abcdefgh', pad: 'x'.repeat(2 * MiB) });
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(big);
    };
    const bounded = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, maxAnswerBytes: MiB });
    try {
      const error = await expectError(bounded.getSubscription('abcdefgh'), 'too-large');
      error.message.should.match(/getSubscription: the server's answer is larger than 1\.0 MB \(maxAnswerBytes\)/);
      await expectError(bounded.registerSubscription('abcdefgh', { callback: 'http://127.0.0.1:1/cb' }), 'too-large');
      await expectError(bounded.exportMetadata({ fuid: 1 }), 'too-large');
      await expectError(bounded.upload({ file: { buffer: Buffer.from('x') }, name: 'x.txt', destination: '/x' }), 'too-large');
      // The default (8 MiB) takes it.
      (await api.getSubscription('abcdefgh')).pad.length.should.equal(2 * MiB);
    } finally {
      bounded.close();
    }
    (() => new AssetClient({ baseUrl: server.url, cookie: 'x', maxAnswerBytes: -1 })).should.throw(/maxAnswerBytes: must be a number of bytes greater than 0/);
    (() => new AssetClient({ baseUrl: server.url, cookie: 'x', maxBufferBytes: 'big' })).should.throw(/maxBufferBytes/);
  });

  it('a JSON success:false body (boolean or string) without Content-Disposition is an error, not file content', async () => {
    for (const body of [{ success: false, error: 'no such revision' }, { success: 'false', errorInfo: 'no such revision' }]) {
      reply = (req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json;charset=UTF-8' });
        res.end(JSON.stringify(body));
      };
      const target = path.join(dir, 'json-error', 'x.bin');
      (await expectError(api.downloadToFile({ fuid: 1, path: target }), 'rejected')).serverMessage.should.equal('no such revision');
      (await filesIn(path.dirname(target))).should.eql([]);
    }
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"success":false,"error":"Permission denied for download"}');
    };
    await expectError(api.downloadToBuffer({ fuid: 1 }), 'permission');
  });

  it('sends fuid, rrn (default -1) and collectionId as query parameters with the cookie', async () => {
    const seen = [];
    reply = (req, res) => {
      seen.push({ url: req.url, cookie: req.headers.cookie, encoding: req.headers['accept-encoding'] });
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.end('x');
    };
    await api.downloadToBuffer({ fuid: 12 });
    await api.downloadToBuffer({ fuid: '13', rrn: '9223372036854775807', collectionId: 4 });
    seen[0].url.should.equal('/review/api/asset/download?fuid=12&rrn=-1');
    seen[1].url.should.equal('/review/api/asset/download?fuid=13&rrn=9223372036854775807&collectionId=4');
    seen[0].cookie.should.equal(`JSESSIONID=${COOKIES.editor}`);
    seen[0].encoding.should.equal('identity');
  });

  it('sanitizes the server file name (no separators, no .., no control characters); strips Set-Cookie', async () => {
    const cases = [
      ['attachment; filename="../../etc/passwd"', 'passwd'],
      ['attachment; filename="..\\\\..\\\\boot.ini"', 'boot.ini'],
      ["attachment; filename=\"fallback.txt\"; filename*=UTF-8''..%2F..%2Fna%C3%AFve%0A.txt", 'naïve.txt'],
      ['attachment; filename=".."', undefined],
      ['attachment; filename="a..b.txt"', 'a.b.txt'],
      ['inline', undefined]
    ];
    for (const [header, expected] of cases) {
      reply = (req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Disposition': header, 'Set-Cookie': 'JSESSIONID=new-session; HttpOnly' });
        res.end('data');
      };
      const got = await api.downloadToBuffer({ fuid: 1 });
      should(got.filename).equal(expected, header);
      should.not.exist(got.headers['set-cookie']);
    }
    reply = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'attachment; filename="../../escape.txt"' });
      res.end('data');
    };
    const saved = await api.downloadToFile({ fuid: 1, path: path.join(dir, 'safe') + path.sep });
    saved.path.should.equal(path.join(dir, 'safe', 'escape.txt'));
    fs.existsSync(path.join(dir, 'escape.txt')).should.be.false();
    const unnamed = await api.downloadToFile({ fuid: 77, path: path.join(dir, 'safe') + path.sep });
    unnamed.path.should.equal(path.join(dir, 'safe', 'escape (1).txt')); // the first one is kept (issue 22)
  });
});

describe('api download: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(10);
    assertNoCookieIn(seenErrors);
  });
});
