'use strict';
// The one retry rule of every node (src/nodes/shared/retry.ts): which failures are tried again,
// how long to wait (Retry-After, else 5 s doubling), the status, a close ending the wait; and the
// four request nodes using it against the emulator's busy answers (449/503) in a real Node-RED.
require('should');
const fs = require('fs');
const net = require('net');
const path = require('path');
const { Readable } = require('stream');
const s = require('./nodes-support');
const { helper } = s;

const root = path.join(__dirname, '..', '..');
const retry = require(path.join(root, 'dist', 'nodes', 'shared', 'retry'));
const { AssetApiError } = require(path.join(root, 'dist', 'api', 'errors'));
const { parseRetryAfter } = require(path.join(root, 'dist', 'api', 'error-mapping'));

const err = (kind, details = {}) => new AssetApiError(kind, `test: ${kind}`, { operation: 'upload', ...details });

describe('retry rule (src/nodes/shared/retry.ts)', function () {
  it('tries again network, timeout, 449/503 and a failed automatic login; never the rest', function () {
    retry.isTransient(err('network', { code: 'ECONNRESET' })).should.be.true();
    retry.isTransient(err('timeout')).should.be.true();
    retry.isTransient(err('http', { status: 449 })).should.be.true();
    retry.isTransient(err('http', { status: 503 })).should.be.true();
    retry.isTransient(err('auth', { status: 401, code: 'LOGIN_FAILED' })).should.be.true();
    // A login that failed for a busy or absent login server is tried again; a refused password is not.
    const { LoginError } = require(path.join(root, 'dist', 'api', 'session'));
    retry.isTransient(new LoginError('login failed', 'login request', 'answered HTTP 503', false, 'upload')).should.be.true();
    const refused = new LoginError('login failed', 'login request', 'answered HTTP 401 (user name or password refused)', true, 'upload');
    retry.isTransient(refused).should.be.false();
    retry.canRepeatUpload({ path: '/x' }, refused).should.be.false();
    for (const e of [err('invalid-input'), err('rejected', { status: 200 }), err('permission', { status: 403 }),
      err('auth', { status: 401 }), err('http', { status: 500 }), err('http', { status: 404 }), err('aborted'),
      err('too-large'), new Error('plain')]) {
      retry.isTransient(e).should.be.false(e.message);
    }
  });

  it('a gateway\'s 502 is tried again for every call, its 504 only for a read (the server may have made a change)', function () {
    for (const operation of ['download', 'exportMetadata', 'getSubscription', 'registerSubscription', 'deleteSubscription', 'upload']) {
      retry.isTransient(err('http', { status: 502, operation })).should.be.true(operation);
    }
    for (const operation of ['download', 'exportMetadata', 'getSubscription']) retry.isTransient(err('http', { status: 504, operation })).should.be.true(operation);
    for (const operation of ['registerSubscription', 'deleteSubscription', 'upload', undefined]) {
      retry.isTransient(err('http', { status: 504, operation })).should.be.false(String(operation));
    }
  });

  it('waits the server\'s Retry-After, else 5 s doubling, at most 5 minutes', function () {
    retry.retryDelayMs(err('network'), 1).should.equal(5000);
    retry.retryDelayMs(err('network'), 2).should.equal(10000);
    retry.retryDelayMs(err('network'), 3).should.equal(20000);
    retry.retryDelayMs(err('network'), 20).should.equal(300000);
    retry.retryDelayMs(err('http', { status: 503, retryAfterMs: 7000 }), 3).should.equal(7000);
    retry.retryDelayMs(err('http', { status: 503, retryAfterMs: 0 }), 1).should.equal(0);
    retry.retryDelayMs(err('http', { status: 503, retryAfterMs: 86400000 }), 1).should.equal(300000);
  });

  it('reads Retry-After as seconds or as an HTTP date', function () {
    parseRetryAfter('120').should.equal(120000);
    parseRetryAfter(' 0 ').should.equal(0);
    parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1)).should.equal(10000);
    parseRetryAfter(new Date(Date.UTC(2020, 0, 1)).toUTCString(), Date.UTC(2030, 0, 1)).should.equal(0);
    (parseRetryAfter('soon') === undefined).should.be.true();
    (parseRetryAfter('-5') === undefined).should.be.true();
    (parseRetryAfter(undefined) === undefined).should.be.true();
  });

  it('repeats an upload only from a path or a Buffer, and only when the server did not take it', function () {
    retry.canRepeatUpload({ path: '/x' }, err('network')).should.be.true();
    retry.canRepeatUpload({ buffer: Buffer.from('x') }, err('http', { status: 449 })).should.be.true();
    retry.canRepeatUpload({ stream: Readable.from([]) }, err('network')).should.be.false();
    retry.canRepeatUpload({ path: '/x' }, err('rejected', { status: 200 })).should.be.false();
    retry.canRepeatUpload({ path: '/x' }, err('http', { status: 500 })).should.be.false();
    // An HTTP proxy that refused the tunnel: the server never saw the upload.
    retry.canRepeatUpload({ path: '/x' }, err('network', { status: 403, code: 'PROXY_TUNNEL_REFUSED' })).should.be.true();
    // A gateway's 502 before the whole file went out: it could not reach the server; after it, the
    // server may have read the file and died (nginx answers 502 then too). Its 504: the server may have it.
    retry.canRepeatUpload({ path: '/x' }, err('http', { status: 502 })).should.be.true();
    retry.canRepeatUpload({ path: '/x' }, err('http', { status: 502, bodySent: true })).should.be.false();
    retry.canRepeatUpload({ path: '/x' }, err('http', { status: 504 })).should.be.false();
  });

  it('tells a gateway\'s or proxy\'s answer from the server\'s (502, 504, a refused tunnel, 407)', function () {
    for (const e of [err('http', { status: 502 }), err('http', { status: 504 }), err('network', { status: 403, code: 'PROXY_TUNNEL_REFUSED' }), err('proxy', { status: 407 })]) {
      retry.isGatewayAnswer(e).should.be.true(e.message);
    }
    for (const e of [err('http', { status: 503 }), err('http', { status: 500 }), err('permission', { status: 403 }), err('network')]) {
      retry.isGatewayAnswer(e).should.be.false(e.message);
    }
  });

  it('"Retries": missing (flows saved before) is 0; 0 to 10 taken; anything else an error naming the setting', function () {
    retry.retriesSetting(undefined).should.equal(0);
    retry.retriesSetting('').should.equal(0);
    retry.retriesSetting('3').should.equal(3);
    retry.retriesSetting(10).should.equal(10);
    for (const bad of ['-1', '11', '1.5', 'two']) {
      (() => retry.retriesSetting(bad)).should.throw(/^retries: Retries must be a whole number from 0 to 10/);
    }
  });

  it('an abort ends the wait at once with kind aborted, and no try follows', async function () {
    const controller = new AbortController();
    let tries = 0;
    const running = retry.withRetries(async () => { tries++; throw err('network'); }, {
      retries: 3, signal: controller.signal, baseMs: 600000, onWait: () => controller.abort()
    });
    const e = await running.then(() => null, x => x);
    e.should.be.instanceOf(AssetApiError);
    e.kind.should.equal('aborted');
    e.message.should.match(/waiting to retry/);
    tries.should.equal(1);
  });

  it('gives up after Retries further tries and throws the last failure', async function () {
    let tries = 0;
    const waits = [];
    const e = await retry.withRetries(async () => { tries++; throw err('http', { status: 503, retryAfterMs: 0 }); }, {
      retries: 2, onWait: w => waits.push(`${w.retry}/${w.retries} ${w.delayMs}`)
    }).then(() => null, x => x);
    tries.should.equal(3);
    waits.should.eql(['1/2 0', '2/2 0']);
    e.status.should.equal(503);
  });
});

describe('Retries on the request nodes (emulator busy answers, real Node-RED)', function () {
  let emulator;
  let tmp;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    tmp = s.tempDir();
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
    tmp.cleanup();
  });
  afterEach(() => helper.unload());

  const upload = { destination: '/retry', destinationType: 'str', wait: 'true', waitType: 'bool' };
  async function uploadedFile(name) {
    const file = path.join(tmp.dir, name);
    fs.writeFileSync(file, `content of ${name}\n`.repeat(500));
    return file;
  }

  it('asset-upload from a path: two 449 answers with Retry-After, then stored once; status "retry n/2 in 0 s"', async function () {
    const file = await uploadedFile('busy-twice.txt');
    await s.load(s.flow('asset-upload', { ...upload, retries: 2 }, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const before = emulator.busyAnswers();
    emulator.injectBusy({ count: 2, status: 449, retryAfterSeconds: 0, pathContains: '/asset/upload' });
    const msg = await s.run({ filename: file });
    (emulator.busyAnswers() - before).should.equal(2);
    statuses.map(x => x.text).should.containEql('retry 1/2 in 0 s (449: server busy, retry)').and.containEql('retry 2/2 in 0 s (449: server busy, retry)');
    statuses.find(x => x.text.startsWith('retry 1/2 in 0 s')).should.containDeep({ fill: 'yellow', shape: 'ring' });
    const stored = await s.emulatorGet(`${emulator.url}/review/api/asset/download?fuid=${msg.fuid}`);
    stored.status.should.equal(200);
    const found = await s.emulatorGet(`${emulator.url}/emulator/assets?path=${encodeURIComponent('/retry/busy-twice.txt')}`);
    found.body.asset.fuid.should.equal(msg.fuid);
  });

  it('asset-upload: more busy answers than Retries fails with the last one (kind http, status 503)', async function () {
    const file = await uploadedFile('busy-thrice.txt');
    await s.load(s.flow('asset-upload', { ...upload, retries: 1 }, { baseUrl: emulator.url }));
    const before = emulator.busyAnswers();
    emulator.injectBusy({ count: 3, status: 503, retryAfterSeconds: 0, pathContains: '/asset/upload' });
    const caught = await s.runFailing({ filename: file });
    caught.assetError.kind.should.equal('http');
    caught.assetError.status.should.equal(503);
    (emulator.busyAnswers() - before).should.equal(2);
    // The third armed answer is left over: take it so the next test starts clean.
    await s.emulatorGet(`${emulator.url}/review/api/asset/upload`);
  });

  it('asset-upload of a stream is never sent twice (its body cannot be read again)', async function () {
    await s.load(s.flow('asset-upload', { ...upload, retries: 2 }, { baseUrl: emulator.url }));
    const before = emulator.busyAnswers();
    emulator.injectBusy({ count: 1, status: 449, retryAfterSeconds: 0, pathContains: '/asset/upload' });
    const caught = await s.runFailing({ payload: Readable.from([Buffer.from('streamed')]), name: 'stream.txt' });
    caught.assetError.status.should.equal(449);
    (emulator.busyAnswers() - before).should.equal(1);
  });

  it('a node saved before the setting (no retries property) does not retry', async function () {
    await s.load(s.flow('asset-export', { fuid: '1', fuidType: 'num' }, { baseUrl: emulator.url }));
    const before = emulator.busyAnswers();
    emulator.injectBusy({ count: 1, status: 503, retryAfterSeconds: 0, pathContains: '/export/' });
    const caught = await s.runFailing({});
    caught.assetError.status.should.equal(503);
    (emulator.busyAnswers() - before).should.equal(1);
  });

  it('asset-export, asset-download (file) and asset-subscribe retry a busy server', async function () {
    const file = await uploadedFile('for-download.txt');
    await s.load(s.flow('asset-upload', upload, { baseUrl: emulator.url }));
    const { fuid } = await s.run({ filename: file });
    await helper.unload();

    await s.load(s.flow('asset-export', { fuid: String(fuid), fuidType: 'num', retries: 2 }, { baseUrl: emulator.url }));
    emulator.injectBusy({ count: 2, status: 449, retryAfterSeconds: 0, pathContains: '/export/' });
    (await s.run({})).payload.success.should.be.true();
    await helper.unload();

    const target = path.join(tmp.dir, 'downloaded.txt');
    await s.load(s.flow('asset-download', { fuid: String(fuid), fuidType: 'num', output: 'file', filename: target, filenameType: 'str', retries: 2 }, { baseUrl: emulator.url }));
    emulator.injectBusy({ count: 2, status: 503, retryAfterSeconds: 0, pathContains: '/asset/download' });
    await s.run({});
    fs.readFileSync(target).equals(fs.readFileSync(file)).should.be.true();
    await helper.unload();

    await s.load(s.flow('asset-subscribe', { action: 'register', subscriptionId: 'retry-subscription-1', subscriptionIdType: 'str',
      callback: 'http://127.0.0.1:9/hook', callbackType: 'str', retries: 2 }, { baseUrl: emulator.url }));
    emulator.injectBusy({ count: 2, status: 503, retryAfterSeconds: 0, pathContains: '/subscribe/' });
    (await s.run({})).payload.success.should.be.true();
  });

  it('a permission error is not repeated', async function () {
    const file = await uploadedFile('no-permission.txt');
    await s.load(s.flow('asset-upload', { ...upload, retries: 2 }, { baseUrl: emulator.url }), s.credentials(`JSESSIONID=${s.VIEWER}`));
    const before = emulator.requestsWith(s.VIEWER);
    const caught = await s.runFailing({ filename: file });
    caught.assetError.kind.should.equal('permission');
    (emulator.requestsWith(s.VIEWER) - before).should.equal(1);
  });

  it('a connection cut before any answer is retried after 5 s (network error), then reported', async function () {
    this.timeout(30000);
    let connections = 0;
    const cutter = net.createServer(socket => { connections++; socket.destroy(); });
    await new Promise(resolve => cutter.listen(0, '127.0.0.1', resolve));
    try {
      await s.load(s.flow('asset-export', { fuid: '1', fuidType: 'num', retries: 1 }, { baseUrl: `http://127.0.0.1:${cutter.address().port}` }));
      const statuses = s.recordStatus();
      const caught = await s.runFailing({}, 25000);
      caught.assetError.kind.should.equal('network');
      connections.should.equal(2);
      statuses.some(x => x.text.startsWith('retry 1/1 in 5 s (')).should.be.true();
    } finally {
      cutter.close();
    }
  });

  it('a close during the wait ends it: the message is not failed and nothing more is sent', async function () {
    await s.load(s.flow('asset-export', { fuid: '1', fuidType: 'num', retries: 2 }, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const before = emulator.busyAnswers();
    emulator.injectBusy({ count: 1, status: 503, retryAfterSeconds: 3600, pathContains: '/export/' });
    const caught = [];
    helper.getNode('caught').on('input', m => caught.push(m));
    helper.getNode('n1').receive({});
    // Retry-After beyond 5 minutes is cut to 5 minutes.
    await waitFor(() => statuses.some(x => x.text.startsWith('retry 1/2 in 300 s (')));
    await helper.unload();
    caught.should.have.length(0);
    (emulator.busyAnswers() - before).should.equal(1);
  });
});

async function waitFor(check) {
  while (!check()) await s.delay(20);
}

describe('Retries behind a gateway (real nginx in front of the emulator, real Node-RED)', function () {
  this.timeout(60000);
  const { installed, startNginx } = require('../reliability/lib/servers');
  let emulator;
  let nginx;
  let tmp;
  let dataDir;
  before(async function () {
    if (!installed('nginx')) {
      if (process.env.CI) throw new Error('nginx is not installed (.ci/run installs it)');
      this.skip();
    }
    await helper.startServer();
    tmp = s.tempDir();
    dataDir = path.join(tmp.dir, 'emulator');
    emulator = await s.startTestEmulator({ dataDir });
    // nginx gives up on an answer after 1 s (its 504).
    nginx = await startNginx(path.join(tmp.dir, 'nginx'), [Number(new URL(emulator.url).port)], { readTimeoutSeconds: 1 });
  });
  after(async function () {
    if (emulator) await emulator.close();
    if (nginx) await nginx.stop();
    await helper.stopServer();
    if (tmp) tmp.cleanup();
  });
  afterEach(() => helper.unload());

  async function uploaded(name) {
    const file = path.join(tmp.dir, name);
    fs.writeFileSync(file, `${name}\n`.repeat(1000));
    await s.load(s.flow('asset-upload', { destination: '/gateway', destinationType: 'str', wait: 'true', waitType: 'bool' }, { baseUrl: emulator.url }));
    const { fuid } = await s.run({ filename: file });
    await helper.unload();
    return { file, fuid };
  }

  /** Closes the emulator (nginx answers 502) until the node under test shows its first retry wait, then starts it again on its port. */
  async function restartDuringTheWait(statuses) {
    const port = Number(new URL(emulator.url).port);
    await emulator.close();
    await waitFor(() => statuses.some(x => x.text.startsWith('retry 1/2 in 5 s (')));
    emulator = await s.startTestEmulator({ dataDir, port });
  }

  it('the server restarting (nginx answers 502): a download is sent again and succeeds; an upload whose file nginx had read is not (the server may have it)', async function () {
    const { file, fuid } = await uploaded('restart.txt');
    await s.load(s.flow('asset-download', { fuid: String(fuid), fuidType: 'num', output: 'buffer', retries: 2 }, { baseUrl: nginx.url }));
    const statuses = s.recordStatus();
    const result = s.outcome(30000);
    const restarted = restartDuringTheWait(statuses);
    helper.getNode('n1').receive({});
    await restarted;
    const r = await result;
    if (r.caught) throw new Error(`expected the download, got ${r.caught.error.message}`);
    r.out.payload.equals(fs.readFileSync(file)).should.be.true();
    await helper.unload();

    // nginx reads the whole request before it tries the server (proxy_request_buffering): its 502
    // comes after the file went out, as when the server died having read it.
    await s.load(s.flow('asset-upload', { destination: '/gateway', destinationType: 'str', wait: 'true', waitType: 'bool', retries: 2 }, { baseUrl: nginx.url }));
    const port = Number(new URL(emulator.url).port);
    await emulator.close();
    try {
      const again = path.join(tmp.dir, 'again.txt');
      fs.writeFileSync(again, 'sent while the server restarts\n');
      const caught = await s.runFailing({ filename: again }, 30000);
      caught.assetError.status.should.equal(502);
      caught.assetError.bodySent.should.be.true();
    } finally {
      emulator = await s.startTestEmulator({ dataDir, port });
    }
  });

  it('nginx\'s 504 (the server slower than its timeout): an export is sent again; an upload is not (the server may have it)', async function () {
    const { fuid } = await uploaded('slow.txt');
    await s.load(s.flow('asset-export', { fuid: String(fuid), fuidType: 'num', retries: 2 }, { baseUrl: nginx.url }));
    const statuses = s.recordStatus();
    emulator.injectSlow({ count: 1, delayMs: 3000, pathContains: '/export/' });
    (await s.run({}, 30000)).payload.success.should.be.true();
    statuses.some(x => x.text.startsWith('retry 1/2 in 5 s (')).should.be.true();
    await helper.unload();

    await s.load(s.flow('asset-upload', { destination: '/gateway', destinationType: 'str', wait: 'true', waitType: 'bool', retries: 2 }, { baseUrl: nginx.url }));
    const file = path.join(tmp.dir, 'slow-upload.txt');
    fs.writeFileSync(file, 'slow upload\n');
    emulator.injectSlow({ count: 1, delayMs: 3000, pathContains: '/asset/upload' });
    // With Retries 2 a second send would get through at once: the Catch node is reached only if none follows.
    const caught = await s.runFailing({ filename: file }, 30000);
    caught.assetError.status.should.equal(504);
  });
});
