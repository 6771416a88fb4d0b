'use strict';
// transferThread: 'worker' (what the asset-server node sets): downloadToFile and big path uploads
// run on a worker thread with the same results, progress, abort, errors and no cookie in them;
// then the download, upload and big-upload suites run again with every client on the worker.
const fsp = require('fs/promises');
const path = require('path');
const crypto = require('crypto');
const should = require('should');
const clientModule = require('../../dist/api/client');
const { AssetClient } = clientModule;
const { COOKIES, tempDir, startTestEmulator, startServer, expectError, assertNoCookieIn, filesIn, closedPortUrl } = require('./helpers');
const { waitFor } = require('../e2e/support');

const MiB = 1024 * 1024;

describe('api client: transfers on a worker thread (transferThread: worker)', () => {
  let emu;
  let api;
  let dir;
  let big; // 8 MiB, random bytes, uploaded through the worker
  before(async () => {
    emu = await startTestEmulator();
    api = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, transferThread: 'worker' });
    dir = await tempDir();
    const bytes = crypto.randomBytes(8 * MiB);
    const file = path.join(dir, 'big.bin');
    await fsp.writeFile(file, bytes);
    const progress = [];
    const up = await api.upload({ file: { path: file }, destination: '/thread', wait: true, onProgress: (p) => progress.push(p) });
    should.exist(api.thread.worker, 'the upload started the worker');
    up.fuids.should.have.length(1);
    progress[progress.length - 1].should.eql({ bytes: bytes.length, total: bytes.length });
    big = { fuid: up.fuids[0], bytes, sha: crypto.createHash('sha256').update(bytes).digest('hex') };
    await fsp.rm(file);
  });
  after(async () => {
    api.close();
    await emu.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('downloads to a file on the worker, byte for byte, with progress ending at the total', async () => {
    const progress = [];
    const target = path.join(dir, 'out', 'big.bin');
    const out = await api.downloadToFile({ fuid: big.fuid, path: target, onProgress: (p) => progress.push(p) });
    out.path.should.equal(target);
    out.bytes.should.equal(big.bytes.length);
    crypto.createHash('sha256').update(await fsp.readFile(target)).digest('hex').should.equal(big.sha);
    progress[progress.length - 1].should.eql({ bytes: big.bytes.length, total: big.bytes.length });
  });

  it('an abort during the download fails with kind aborted and leaves no file behind', async () => {
    const folder = path.join(dir, 'aborted');
    const controller = new AbortController();
    const error = await expectError(api.downloadToFile({
      fuid: big.fuid, path: path.join(folder, 'x.bin'), signal: controller.signal,
      onProgress: (p) => { if (p.bytes > 0 && p.bytes < p.total) controller.abort(); }
    }), 'aborted');
    error.operation.should.equal('download');
    (await filesIn(folder)).should.eql([]);
  });

  it('errors keep their kind, status and field, and never carry the cookie', async () => {
    const wrong = new AssetClient({ baseUrl: emu.url, cookie: `JSESSIONID=${COOKIES.wrong}`, transferThread: 'worker' });
    try {
      const auth = await expectError(wrong.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'no.bin') }), 'auth');
      auth.status.should.equal(401);
      const missing = await expectError(api.downloadToFile({ fuid: 'x', path: path.join(dir, 'no.bin') }), 'invalid-input');
      missing.field.should.equal('fuid');
      assertNoCookieIn([auth, missing]);
    } finally {
      wrong.close();
    }
  });

  it('a download on the worker that the server cuts off part-way keeps answerBegun; one that never got an answer has none', async () => {
    emu.emulator.injectCut({ count: 1, afterBytes: MiB, pathContains: '/asset/download' });
    const cut = await expectError(api.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'cut.bin') }), 'network');
    cut.answerBegun.should.be.true();
    const refused = new AssetClient({ baseUrl: await closedPortUrl(), cookie: COOKIES.editor, transferThread: 'worker' });
    try {
      should.not.exist((await expectError(refused.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'never.bin') }), 'network')).answerBegun);
    } finally {
      refused.close();
    }
  });

  it('a big upload on the worker that times out after its whole file went out says so (bodySent); cut before, it does not', async () => {
    const file = path.join(dir, 'silent.bin');
    await fsp.writeFile(file, crypto.randomBytes(5 * MiB)); // above the thread's threshold (4 MiB)
    let cut = false;
    const server = await startServer((req) => {
      let size = 0;
      // The first request is cut after 1 MiB; the second is read whole and never answered.
      req.on('data', (c) => { size += c.length; if (!cut && size > MiB) { cut = true; req.socket.destroy(); } });
    });
    const silent = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, transferThread: 'worker', timeout: 1000 });
    try {
      const early = await expectError(silent.upload({ file: { path: file }, destination: '/x' }), 'network');
      should.not.exist(early.bodySent);
      const late = await expectError(silent.upload({ file: { path: file }, destination: '/x' }), 'timeout');
      late.bodySent.should.be.true();
    } finally {
      silent.close();
      await server.close();
      await fsp.rm(file);
    }
  });

  it('a worker that dies mid-transfer fails its calls as kind network; the next call starts a new one', async () => {
    const client = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, transferThread: 'worker' });
    try {
      let killed = false;
      const error = await expectError(client.downloadToFile({
        fuid: big.fuid, path: path.join(dir, 'killed', 'x.bin'),
        onProgress: () => { if (!killed) { killed = true; client.thread.worker.terminate(); } }
      }), 'network');
      error.message.should.match(/^download: the transfer thread stopped/);
      const out = await client.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'after-kill.bin') });
      out.bytes.should.equal(big.bytes.length);
    } finally {
      client.close();
    }
  });

  it('a worker that dies while writing a download: its .part file is removed by the caller, the call fails as kind network', async () => {
    // A server that sends the first 64 KiB of 1 MiB and then holds the rest.
    const server = await startServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(MiB) });
      res.write(Buffer.alloc(64 * 1024, 1));
    });
    const client = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor, transferThread: 'worker' });
    const folder = path.join(dir, 'died');
    try {
      const call = client.downloadToFile({ fuid: 1, path: path.join(folder, 'x.bin') });
      call.catch(() => undefined);
      const partWritten = async () => {
        for (const name of await filesIn(folder)) {
          if (name.endsWith('.part') && (await fsp.stat(path.join(folder, name))).size > 0) return true;
        }
        return false;
      };
      await waitFor('the .part file with the first bytes', partWritten, 10000, 10);
      await client.thread.worker.terminate();
      const error = await expectError(call, 'network');
      error.message.should.match(/^download: the transfer thread stopped \(exited with code 1\)$/);
      (await filesIn(folder)).should.eql([], 'no .part file left next to the target');
    } finally {
      client.close();
      await server.close();
    }
  });

  it('close() stops the worker once its calls have ended', async () => {
    const client = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, transferThread: 'worker' });
    await client.downloadToFile({ fuid: big.fuid, path: path.join(dir, 'closed.bin') });
    const worker = client.thread.worker;
    should.exist(worker);
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    client.close();
    await exited;
    should.not.exist(client.thread.worker);
  });

  it('automatic login: after an expired session, a download and a big path upload on the worker are repeated once with the new cookie', async () => {
    const user = { name: 'thread-robot', password: 'Pass-Word-7h7e-ad01' };
    const own = await startTestEmulator({ users: [{ ...user, permissions: ['events', 'add'] }] });
    const client = new AssetClient({ baseUrl: own.url, cookie: '', transferThread: 'worker',
      login: { preset: 'form', username: user.name, password: user.password } });
    try {
      const file = path.join(dir, 'login.bin');
      await fsp.writeFile(file, big.bytes);
      const up = await client.upload({ file: { path: file }, destination: '/thread-login', wait: true });
      const logins = own.emulator.sessionStats().logins;
      own.emulator.revokeSession(client.sessionCookie.slice('JSESSIONID='.length));
      const out = await client.downloadToFile({ fuid: up.fuids[0], path: path.join(dir, 'login-out.bin') });
      out.bytes.should.equal(big.bytes.length);
      own.emulator.revokeSession(client.sessionCookie.slice('JSESSIONID='.length));
      (await client.upload({ file: { path: file }, name: 'again.bin', destination: '/thread-login', wait: true })).fuids.should.have.length(1);
      own.emulator.sessionStats().logins.should.equal(logins + 2, 'one login per expiry, done by the caller, not the worker');
      const errors = [];
      const wrong = new AssetClient({ baseUrl: own.url, cookie: COOKIES.wrong, transferThread: 'worker',
        login: { preset: 'form', username: user.name, password: 'Wrong-Pass-0000' } });
      try {
        errors.push(await expectError(wrong.downloadToFile({ fuid: up.fuids[0], path: path.join(dir, 'never.bin') }), 'auth'));
      } finally {
        wrong.close();
      }
      for (const err of errors) `${err.message} ${JSON.stringify(err)}`.should.not.containEql(user.password).and.not.containEql('Wrong-Pass-0000');
      assertNoCookieIn(errors);
    } finally {
      client.close();
      await own.close();
    }
  });

  it("refuses a transferThread other than 'main' or 'worker'", () => {
    (() => new AssetClient({ baseUrl: emu.url, cookie: COOKIES.editor, transferThread: 'thread' }))
      .should.throw(/transferThread: must be 'main' or 'worker'/);
  });
});

// The same suites as on the caller's thread, with every client (without an agent) on the worker.
describe('api client suites again with transferThread: worker', () => {
  const WorkerClient = class extends AssetClient {
    constructor(options) {
      const onWorker = options && typeof options === 'object' && options.transferThread === undefined && !options.agent;
      super(onWorker ? { ...options, transferThread: 'worker' } : options);
    }
  };
  const original = clientModule.AssetClient;
  for (const file of ['./download.test.js', './upload.test.js', './big-upload.test.js']) {
    const resolved = require.resolve(file);
    const cached = require.cache[resolved];
    delete require.cache[resolved];
    clientModule.AssetClient = WorkerClient; // read by the suite when it loads
    try {
      require(file);
    } finally {
      clientModule.AssetClient = original;
      if (cached) require.cache[resolved] = cached;
    }
  }
});
