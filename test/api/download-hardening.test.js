'use strict';
// Issue 22 items 9 and 10: download to a file against a raw TCP server that answers exactly as
// told (names, lengths, how the connection ends).
// - folder mode: an existing file of the server's name is kept (default keep both: "name (1).ext"),
//   or the download fails (fail), or it is replaced (replace) keeping the file's mode;
// - a path naming the file: replaced, keeping the old file's mode (0600 stays 0600);
// - control and bidi-override characters are stripped from the server's name; names of 237 to
//   255 bytes work (the temporary name no longer grows with the target's);
// - a body without Content-Length or chunking that ends with a reset is an error, and the old
//   file stays; a clean close is complete; a chunked body without its last chunk is an error.
require('should');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { AssetClient } = require('../../dist/api/client');

const OLD = 'the old file, must survive';

describe('download to a file: names, existing files and how the body ends (issue 22 items 9, 10)', function () {
  let server, client, dir;
  /** What the next answer is: { headers: [..], body, end: 'fin' | 'rst', chunked }. */
  let answer;

  before(async () => {
    server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        const a = answer;
        const head = ['HTTP/1.1 200 OK', 'Content-Type: application/octet-stream', 'Connection: close', ...a.headers];
        if (a.chunked) head.push('Transfer-Encoding: chunked');
        else if (a.length !== undefined) head.push(`Content-Length: ${a.length}`);
        const body = a.chunked ? `${Buffer.byteLength(a.body).toString(16)}\r\n${a.body}\r\n${a.lastChunk ? '0\r\n\r\n' : ''}` : a.body;
        socket.write(`${head.join('\r\n')}\r\n\r\n${body}`, () => {
          setTimeout(() => { if (a.end === 'rst') socket.resetAndDestroy(); else socket.end(); }, 50);
        });
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new AssetClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, cookie: 'c', timeout: 5000 });
  });
  after(() => { client.close(); server.close(); });
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-dl-hardening-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const named = (name, body = 'new content') => ({ headers: [`Content-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(name)}`], body, length: Buffer.byteLength(body) });
  const files = () => fs.readdirSync(dir).sort();
  const failure = (promise) => promise.then(() => { throw new Error('expected a failure'); }, (err) => err);

  it('folder mode, default: an existing file of the server\'s name is kept; the new one is "name (1).ext", then "(2)"', async function () {
    fs.writeFileSync(path.join(dir, 'report.pdf'), OLD);
    answer = named('report.pdf');
    (await client.downloadToFile({ fuid: 1, path: dir + '/' })).path.should.equal(path.join(dir, 'report (1).pdf'));
    (await client.downloadToFile({ fuid: 1, path: dir })).path.should.equal(path.join(dir, 'report (2).pdf'));
    fs.readFileSync(path.join(dir, 'report.pdf'), 'utf8').should.equal(OLD);
    fs.readFileSync(path.join(dir, 'report (1).pdf'), 'utf8').should.equal('new content');
    files().should.eql(['report (1).pdf', 'report (2).pdf', 'report.pdf']);
  });

  it('folder mode, fail: an error naming the setting, the existing file untouched, nothing left behind', async function () {
    fs.writeFileSync(path.join(dir, 'report.pdf'), OLD);
    answer = named('report.pdf');
    const err = await failure(client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'fail' }));
    err.kind.should.equal('invalid-input');
    err.field.should.equal('ifExists');
    err.message.should.match(/exists and was left as it is/);
    fs.readFileSync(path.join(dir, 'report.pdf'), 'utf8').should.equal(OLD);
    files().should.eql(['report.pdf']);
    // A file that does not exist yet is written.
    answer = named('other.pdf');
    (await client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'fail' })).path.should.equal(path.join(dir, 'other.pdf'));
  });

  it('folder mode, replace, and a path naming the file: replaced, keeping the old file\'s mode', async function () {
    for (const [where, options] of [['folder', { path: dir + '/', ifExists: 'replace' }], ['path', { path: path.join(dir, 'report.pdf') }]]) {
      const file = path.join(dir, 'report.pdf');
      fs.writeFileSync(file, OLD, { mode: 0o600 });
      fs.chmodSync(file, 0o600);
      answer = named('report.pdf');
      (await client.downloadToFile({ fuid: 1, ...options })).path.should.equal(file);
      fs.readFileSync(file, 'utf8').should.equal('new content');
      (fs.statSync(file).mode & 0o777).should.equal(0o600, `${where}: mode kept`);
      files().should.eql(['report.pdf']);
      fs.rmSync(file);
    }
  });

  it('a FIFO at the path is refused before the transfer and stays; a symbolic link stays and the file it names is replaced; a dangling one is refused', async function () {
    const fifo = path.join(dir, 'pipe');
    require('child_process').execFileSync('mkfifo', [fifo]);
    answer = named('x.bin');
    let err = await failure(client.downloadToFile({ fuid: 1, path: fifo }));
    err.kind.should.equal('invalid-input');
    err.field.should.equal('path');
    err.message.should.match(/not a regular file/);
    fs.lstatSync(fifo).isFIFO().should.be.true();
    // Folder mode with replace: a FIFO of the server's name is not replaced either.
    answer = named('pipe');
    err = await failure(client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'replace' }));
    err.field.should.equal('path');
    fs.lstatSync(fifo).isFIFO().should.be.true();

    const real = path.join(dir, 'real.txt');
    fs.writeFileSync(real, OLD);
    const link = path.join(dir, 'link.txt');
    fs.symlinkSync(real, link);
    answer = named('x.bin');
    (await client.downloadToFile({ fuid: 1, path: link })).path.should.equal(real);
    fs.lstatSync(link).isSymbolicLink().should.be.true();
    fs.readFileSync(real, 'utf8').should.equal('new content');

    const dangling = path.join(dir, 'dangling.txt');
    fs.symlinkSync(path.join(dir, 'missing.txt'), dangling);
    err = await failure(client.downloadToFile({ fuid: 1, path: dangling }));
    err.field.should.equal('path');
    fs.lstatSync(dangling).isSymbolicLink().should.be.true();
    files().should.eql(['dangling.txt', 'link.txt', 'pipe', 'real.txt']);
  });

  it('folder mode with replace: a symbolic link of the server\'s name is replaced itself, never written through (the name is the server\'s, the link may point out of the folder)', async function () {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-dl-outside-'));
    try {
      const target = path.join(outside, 'precious.txt');
      fs.writeFileSync(target, OLD);
      const link = path.join(dir, 'link.txt');
      fs.symlinkSync(target, link);
      const dangling = path.join(dir, 'gone.txt');
      fs.symlinkSync(path.join(outside, 'missing.txt'), dangling);
      answer = named('link.txt');
      (await client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'replace' })).path.should.equal(link);
      fs.readFileSync(target, 'utf8').should.equal(OLD);
      fs.lstatSync(link).isFile().should.be.true();
      fs.readFileSync(link, 'utf8').should.equal('new content');
      answer = named('gone.txt');
      (await client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'replace' })).path.should.equal(dangling);
      fs.lstatSync(dangling).isFile().should.be.true();
      fs.existsSync(path.join(outside, 'missing.txt')).should.be.false();
      fs.readdirSync(outside).should.eql(['precious.txt']);
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('a JSON body sent slowly without Content-Disposition: bytes arriving keep the inactivity timeout at bay while it is read for an error answer', async function () {
    this.timeout(20000);
    const body = JSON.stringify({ note: 'a JSON file, not an error' });
    const drip = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
        let i = 0;
        const timer = setInterval(() => {
          if (socket.destroyed) { clearInterval(timer); return; }
          socket.write(body.slice(i, i + 2));
          i += 2;
          if (i >= body.length) { clearInterval(timer); socket.end(); }
        }, 200);
      });
    });
    await new Promise((resolve) => drip.listen(0, '127.0.0.1', resolve));
    // 2 s without a byte is a timeout; the body takes about 2.6 s, a chunk every 0.2 s.
    const slow = new AssetClient({ baseUrl: `http://127.0.0.1:${drip.address().port}`, cookie: 'c', timeout: 2000 });
    try {
      const got = await slow.downloadToBuffer({ fuid: 1 });
      got.data.toString().should.equal(body);
    } finally {
      slow.close();
      drip.close();
    }
  });

  it('temporary files a killed process left (not written for an hour) are removed by the next download into the folder; recent ones and other names stay', async function () {
    const hoursAgo = (h) => new Date(Date.now() - h * 3600 * 1000);
    const left = path.join(dir, '.dam-0123456789ab.part');
    const recent = path.join(dir, '.dam-ba9876543210.part');
    const other = path.join(dir, '.dam-notmine.part');
    for (const f of [left, recent, other]) fs.writeFileSync(f, 'partial');
    for (const f of [left, other]) fs.utimesSync(f, hoursAgo(2), hoursAgo(2));
    answer = named('fresh.bin');
    await client.downloadToFile({ fuid: 1, path: dir + '/' });
    files().should.eql(['.dam-ba9876543210.part', '.dam-notmine.part', 'fresh.bin']);
  });

  it('the sweep leaves a temporary file of a download of this process under way, however long it has stalled', async function () {
    let finish;
    const stalled = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 10\r\nConnection: close\r\n\r\nfirst');
        finish = () => socket.end('-rest');
      });
    });
    await new Promise((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    const slow = new AssetClient({ baseUrl: `http://127.0.0.1:${stalled.address().port}`, cookie: 'c', timeout: 0 });
    try {
      const running = slow.downloadToFile({ fuid: 1, path: path.join(dir, 'stalled.bin') });
      let part;
      while (!(part = files().find((f) => /^\.dam-[0-9a-f]{12}\.part$/.test(f)))) await new Promise((resolve) => setTimeout(resolve, 20));
      const old = new Date(Date.now() - 2 * 3600 * 1000);
      fs.utimesSync(path.join(dir, part), old, old);
      answer = named('other.bin');
      await client.downloadToFile({ fuid: 1, path: dir + '/' });
      files().should.containEql(part);
      while (!finish) await new Promise((resolve) => setTimeout(resolve, 20));
      finish();
      (await running).path.should.equal(path.join(dir, 'stalled.bin'));
      fs.readFileSync(path.join(dir, 'stalled.bin'), 'utf8').should.equal('first-rest');
    } finally {
      slow.close();
      stalled.close();
    }
  });

  it('an unknown ifExists is refused naming the field', async function () {
    answer = named('x.bin');
    const err = await failure(client.downloadToFile({ fuid: 1, path: dir + '/', ifExists: 'overwrite' }));
    err.kind.should.equal('invalid-input');
    err.field.should.equal('ifExists');
  });

  it('control and bidi-override characters are stripped from the server\'s name', async function () {
    answer = named('invoice\u202Efdp.exe\u0085\u200F\u2066x\u0007.bin');
    const result = await client.downloadToFile({ fuid: 1, path: dir + '/' });
    path.basename(result.path).should.equal('invoicefdp.exex.bin');
    result.filename.should.equal('invoicefdp.exex.bin');
  });

  for (const bytes of [237, 246, 255]) {
    it(`a server name of ${bytes} bytes is saved under that name`, async function () {
      const name = 'n'.repeat(bytes - 4) + '.bin';
      answer = named(name);
      const result = await client.downloadToFile({ fuid: 1, path: dir + '/' });
      path.basename(result.path).should.equal(name);
      files().should.eql([name]);
    });
  }

  it('no Content-Length, no chunking: a reset connection is an error and the old file stays; a clean close is complete', async function () {
    const file = path.join(dir, 'target.bin');
    fs.writeFileSync(file, OLD);
    answer = { headers: [], body: 'cut short', end: 'rst' };
    const err = await failure(client.downloadToFile({ fuid: 1, path: file }));
    err.kind.should.equal('network');
    err.message.should.match(/reset after 9 bytes, before the download ended cleanly/);
    fs.readFileSync(file, 'utf8').should.equal(OLD);
    files().should.eql(['target.bin']);
    answer = { headers: [], body: 'complete', end: 'fin' };
    await client.downloadToFile({ fuid: 1, path: file });
    fs.readFileSync(file, 'utf8').should.equal('complete');
  });

  it('chunked: a body without its terminating chunk is an error and the old file stays; with it, complete', async function () {
    const file = path.join(dir, 'target.bin');
    fs.writeFileSync(file, OLD);
    for (const end of ['fin', 'rst']) {
      answer = { headers: [], body: 'partial', chunked: true, lastChunk: false, end };
      const err = await failure(client.downloadToFile({ fuid: 1, path: file }));
      err.kind.should.equal('network');
      fs.readFileSync(file, 'utf8').should.equal(OLD);
      files().should.eql(['target.bin']);
    }
    answer = { headers: [], body: 'whole', chunked: true, lastChunk: true, end: 'fin' };
    await client.downloadToFile({ fuid: 1, path: file });
    fs.readFileSync(file, 'utf8').should.equal('whole');
  });
});
