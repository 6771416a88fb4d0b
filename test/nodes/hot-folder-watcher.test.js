'use strict';
// The hot folder's core (src/nodes/asset-hot-folder/watcher.ts) on the real file system, uploading
// with the real client to the emulator: which files are taken, when, and where they go after.
require('should');
const fs = require('fs');
const path = require('path');
const s = require('./nodes-support');

const root = path.join(__dirname, '..', '..');
const { HotFolder } = require(path.join(root, 'dist', 'nodes', 'asset-hot-folder', 'watcher'));
const { suffixedName } = require(path.join(root, 'dist', 'nodes', 'asset-hot-folder', 'files'));
const { AssetClient } = require(path.join(root, 'dist', 'api', 'client'));
const { AssetApiError } = require(path.join(root, 'dist', 'api', 'errors'));
const asRoot = process.getuid && process.getuid() === 0;

async function waitFor(check, what = 'state') {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > 60000) throw new Error(`still waiting for ${what}`);
    await s.delay(20);
  }
}

describe('hot folder core (real file system, emulator)', function () {
  this.timeout(60000);
  let emulator;
  let tmp;
  let n = 0;
  const open = [];
  before(async function () {
    emulator = await s.startTestEmulator({ ingestDelayMs: 0 });
    tmp = s.tempDir('dam-hot-');
  });
  after(async function () {
    if (emulator) await emulator.close();
    tmp.cleanup();
  });
  afterEach(async () => { for (const w of open.splice(0)) await w.close(); });
  /** Servers a test started, stopped after it even when it timed out (its finally never runs then). */
  const stopAfter = [];
  afterEach(async () => { for (const x of stopAfter.splice(0)) await x.stop(); });

  /** A new watched folder and a hot folder on it (not started); records every event. */
  function hotFolder(options = {}, cookie = 'JSESSIONID=local-dev') {
    const folder = path.join(tmp.dir, `watched-${++n}`);
    if (options.create !== false) fs.mkdirSync(folder, { recursive: true });
    const client = new AssetClient({ baseUrl: emulator.url, cookie, timeout: 20000 });
    const dest = `/hot-${n}`;
    const events = { ingested: [], failed: [], retry: [], changed: [], empty: [], folderError: [], folderOk: 0 };
    const hot = new HotFolder({
      folder, recursive: false, polling: false, rescanMs: 300, untouchedMs: 200, include: [], exclude: [],
      maxParallel: 2, doneFolder: path.join(folder, '.done'), failedFolder: path.join(folder, '.failed'), retries: 2, retryBaseMs: 50,
      upload: (file, signal) => client.upload({ file: { path: file.path }, destination: `${dest}/${path.posix.dirname(file.relativePath)}`.replace(/\/\.$/, ''), wait: true, signal }),
      ...options
    });
    hot.on('ingested', e => events.ingested.push(e));
    hot.on('failed', e => events.failed.push(e));
    hot.on('retry', e => events.retry.push(e));
    hot.on('changed', e => events.changed.push(e));
    hot.on('empty', e => events.empty.push(e));
    hot.on('folder-error', e => events.folderError.push(e));
    hot.on('folder-ok', () => events.folderOk++);
    open.push(hot);
    return { hot, folder, dest, events };
  }

  async function serverBytes(serverPath) {
    const found = await s.emulatorGet(`${emulator.url}/emulator/assets?path=${encodeURIComponent(serverPath)}`);
    if (found.status !== 200 || !found.body.asset) return undefined;
    const res = await fetch(`${emulator.url}/review/api/asset/download?fuid=${found.body.asset.fuid}`, { headers: { Cookie: s.COOKIE } });
    return Buffer.from(await res.arrayBuffer());
  }

  it('takes files already there and new ones, ignores hidden and temporary names, moves each to .done', async function () {
    const { hot, folder, dest, events } = hotFolder({ exclude: ['*.skip'] });
    fs.writeFileSync(path.join(folder, 'before.txt'), 'there at start');
    const ignored = ['.hidden', 'x.part', 'y.tmp', 'z.crdownload', '~$doc.docx', 'Thumbs.db', '.DS_Store', 'no.skip'];
    for (const name of ignored) fs.writeFileSync(path.join(folder, name), 'ignored');
    hot.start();
    fs.writeFileSync(path.join(folder, 'after.txt'), 'dropped later');
    await waitFor(() => events.ingested.length === 2, 'two files ingested');
    (await serverBytes(`${dest}/before.txt`)).toString().should.equal('there at start');
    (await serverBytes(`${dest}/after.txt`)).toString().should.equal('dropped later');
    fs.readFileSync(path.join(folder, '.done', 'before.txt'), 'utf8').should.equal('there at start');
    fs.existsSync(path.join(folder, 'before.txt')).should.be.false();
    await hot.rescan();
    for (const name of ignored) fs.existsSync(path.join(folder, name)).should.be.true(name);
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 2, failed: 0, stuck: 0 });
  });

  it('never overwrites in the done folder: a suffix is added', async function () {
    suffixedName('a.txt', 2).should.equal('a (2).txt');
    suffixedName('archive.tar.gz', 3).should.equal('archive.tar (3).gz');
    suffixedName('README', 2).should.equal('README (2)');
    const { hot, folder, events } = hotFolder();
    fs.mkdirSync(path.join(folder, '.done'));
    fs.writeFileSync(path.join(folder, '.done', 'a.txt'), 'older');
    fs.writeFileSync(path.join(folder, 'a.txt'), 'newer');
    hot.start();
    await waitFor(() => events.ingested.length === 1);
    events.ingested[0].movedTo.should.equal(path.join(folder, '.done', 'a (2).txt'));
    fs.readFileSync(path.join(folder, '.done', 'a.txt'), 'utf8').should.equal('older');
    fs.readFileSync(path.join(folder, '.done', 'a (2).txt'), 'utf8').should.equal('newer');
  });

  it('a name as long as a name can be: its copy in the done folder and its error file are shortened to valid names', async function () {
    const long = 'x'.repeat(251) + '.txt'; // 255 bytes
    suffixedName(long, 2).should.equal('x'.repeat(247) + ' (2).txt');
    Buffer.byteLength(suffixedName('é'.repeat(127) + '.txt', 2)).should.be.belowOrEqual(255);
    suffixedName(long, 1, '.error.json'.length).should.equal('x'.repeat(240) + '.txt');
    // A new-user audit: the second file of that name could not be moved to done (ENAMETOOLONG),
    // stayed, and was uploaded again at every start.
    const { hot, folder, events } = hotFolder();
    fs.mkdirSync(path.join(folder, '.done'));
    fs.writeFileSync(path.join(folder, '.done', long), 'older');
    fs.writeFileSync(path.join(folder, long), 'newer');
    hot.start();
    await waitFor(() => events.ingested.length === 1);
    events.ingested[0].movedTo.should.equal(path.join(folder, '.done', 'x'.repeat(247) + ' (2).txt'));
    fs.existsSync(path.join(folder, long)).should.be.false();
    hot.counts().should.containEql({ done: 1, stuck: 0 });

    const failing = hotFolder({}, `JSESSIONID=${s.VIEWER}`);
    fs.writeFileSync(path.join(failing.folder, long), 'no permission');
    failing.hot.start();
    await waitFor(() => failing.events.failed.length === 1);
    const kept = 'x'.repeat(240) + '.txt';
    fs.readFileSync(path.join(failing.folder, '.failed', kept), 'utf8').should.equal('no permission');
    JSON.parse(fs.readFileSync(path.join(failing.folder, '.failed', kept + '.error.json'), 'utf8')).should.containDeep({ file: long, kind: 'permission' });
  });

  it('a permanent failure goes to .failed with <name>.error.json (no cookie), and is not retried', async function () {
    const { hot, folder, events } = hotFolder({}, `JSESSIONID=${s.VIEWER}`);
    fs.writeFileSync(path.join(folder, 'denied.txt'), 'no permission');
    const before = emulator.requestsWith(s.VIEWER);
    hot.start();
    await waitFor(() => events.failed.length === 1);
    (emulator.requestsWith(s.VIEWER) - before).should.equal(1);
    const record = JSON.parse(fs.readFileSync(path.join(folder, '.failed', 'denied.txt.error.json'), 'utf8'));
    record.should.containDeep({ file: 'denied.txt', kind: 'permission', attempts: 1 });
    record.time.should.match(/^\d{4}-\d\d-\d\dT/);
    fs.readFileSync(path.join(folder, '.failed', 'denied.txt.error.json'), 'utf8').should.not.containEql(s.VIEWER);
    fs.readFileSync(path.join(folder, '.failed', 'denied.txt'), 'utf8').should.equal('no permission');
    hot.counts().failed.should.equal(1);
  });

  it('a busy server: the file stays in place and is retried (Retry-After), then done', async function () {
    const { hot, folder, dest, events } = hotFolder({ retries: 2 });
    const outage = [];
    hot.on('unavailable', (err) => outage.push(`unavailable ${err.status}`));
    hot.on('available', () => outage.push('available'));
    emulator.injectBusy({ count: 2, status: 449, retryAfterSeconds: 0, pathContains: '/asset/upload' });
    fs.writeFileSync(path.join(folder, 'busy.txt'), 'busy twice');
    hot.start();
    await waitFor(() => events.ingested.length === 1);
    // The first busy answer counts (retry 1 of 2) and holds the folder; the second was a probe.
    events.retry.map(r => r.retry).should.eql([1]);
    outage.should.eql(['unavailable 449', 'available']);
    events.ingested[0].attempts.should.equal(3);
    (await serverBytes(`${dest}/busy.txt`)).toString().should.equal('busy twice');
  });

  /** An emulator's address with nothing listening (connection refused); `back()` starts one there. */
  async function awayServer() {
    const away = await s.startTestEmulator({ ingestDelayMs: 0 });
    const port = Number(new URL(away.url).port);
    await away.close();
    const started = [];
    return {
      url: away.url,
      back: async (extra = {}) => { const e = await s.startTestEmulator({ ingestDelayMs: 0, port, ...extra }); started.push(e); return e; },
      close: async () => { for (const e of started.splice(0)) await e.close(); }
    };
  }

  /** Uploads through `client`, counting each file's tries and the most uploads at once while an outage is on. */
  function counting(client, hotRef, destination) {
    const seen = { tries: {}, running: 0, mostDuringOutage: 0 };
    seen.upload = async (file, signal) => {
      seen.tries[file.relativePath] = (seen.tries[file.relativePath] || 0) + 1;
      seen.running++;
      if (hotRef.hot.unavailable) seen.mostDuringOutage = Math.max(seen.mostDuringOutage, seen.running);
      try {
        return await client.upload({ file: { path: file.path }, destination, wait: true, signal });
      } finally {
        seen.running--;
      }
    };
    return seen;
  }

  it('an outage fails no file: uploads held, one probe at a time, every file goes once the server is back', async function () {
    const server = await awayServer();
    try {
      const ref = {};
      const seen = counting(new AssetClient({ baseUrl: server.url, cookie: s.COOKIE, timeout: 20000 }), ref, '/outage');
      const { hot, folder, events } = ref.hot = hotFolder({ retries: 1, upload: seen.upload });
      ref.hot = hot;
      const outage = [];
      hot.on('unavailable', (err) => outage.push(`unavailable ${err.kind}`));
      hot.on('available', () => outage.push('available'));
      for (const name of ['a.txt', 'b.txt', 'c.txt']) fs.writeFileSync(path.join(folder, name), `${name} bytes`);
      hot.start();
      // Every file sent as often as Retries (1) allows, one more often, as probes taking turns.
      await waitFor(() => ['a.txt', 'b.txt', 'c.txt'].every(name => seen.tries[name] >= 2) && Object.values(seen.tries).some(n => n >= 3), 'every file tried twice, one 3 times');
      events.failed.should.eql([]);
      hot.unavailable.kind.should.equal('network');
      outage.should.eql(['unavailable network']);
      seen.mostDuringOutage.should.equal(1);
      const counts = hot.counts();
      (counts.waiting + counts.uploading).should.equal(3);

      await server.back();
      await waitFor(() => events.ingested.length === 3, 'the three files ingested after the outage');
      events.failed.should.eql([]);
      (hot.unavailable === undefined).should.be.true();
      outage.should.eql(['unavailable network', 'available']);
      fs.readdirSync(path.join(folder, '.done')).sort().should.eql(['a.txt', 'b.txt', 'c.txt']);
      fs.existsSync(path.join(folder, '.failed')).should.be.false();
    } finally {
      await server.close();
    }
  });

  it('an outage: an upload sent before it that succeeds does not end it; a busy answer right after it fails no file', async function () {
    const server = await awayServer();
    const slow = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE, timeout: 20000 });
    const away = new AssetClient({ baseUrl: server.url, cookie: s.COOKIE, timeout: 20000 });
    let release;
    const gate = new Promise((resolve) => { release = resolve; });
    try {
      const { hot, folder, events } = hotFolder({
        retries: 2,
        upload: async (file, signal) => {
          if (file.relativePath === 'early.txt') { await gate; return slow.upload({ file: { path: file.path }, destination: '/early', wait: true, signal }); }
          return away.upload({ file: { path: file.path }, destination: '/late', wait: true, signal });
        }
      });
      const outage = [];
      hot.on('unavailable', () => { outage.push('unavailable'); release(); });
      hot.on('available', () => outage.push('available'));
      fs.writeFileSync(path.join(folder, 'early.txt'), 'sent before the outage');
      fs.writeFileSync(path.join(folder, 'late.txt'), 'meets the outage');
      hot.start();
      await waitFor(() => events.ingested.length === 1, 'early.txt, answered during the outage');
      // Answered, but sent before the outage began: it says nothing of the server now.
      events.ingested[0].relativePath.should.equal('early.txt');
      outage.should.eql(['unavailable']);
      (hot.unavailable === undefined).should.be.false();

      const back = await server.back();
      hot.once('available', () => back.injectBusy({ count: 1, status: 503, retryAfterSeconds: 0, pathContains: '/asset/upload' }));
      fs.writeFileSync(path.join(folder, 'after.txt'), 'dropped while away');
      await waitFor(() => events.ingested.length === 3, 'late.txt and after.txt ingested');
      events.failed.should.eql([]); // the busy answer after the outage started another one, and counted for one file only
      back.busyAnswers().should.equal(1);
      (hot.unavailable === undefined).should.be.true();
    } finally {
      release();
      await server.close();
    }
  });

  it('a file that alone fails transiently past Retries, while another goes through, fails (the file, not an outage)', async function () {
    const busy = await s.startTestEmulator({ ingestDelayMs: 0 });
    busy.injectBusy({ count: 1000, status: 503, retryAfterSeconds: 0, pathContains: '/asset/upload' });
    try {
      const busyClient = new AssetClient({ baseUrl: busy.url, cookie: s.COOKIE, timeout: 20000 });
      const client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE, timeout: 20000 });
      let poisonTries = 0;
      const { hot, folder, events } = hotFolder({
        retries: 1,
        upload: (file, signal) => {
          if (file.relativePath === 'poison.txt') poisonTries++;
          return (file.relativePath === 'poison.txt' ? busyClient : client)
            .upload({ file: { path: file.path }, destination: '/poison', wait: true, signal });
        }
      });
      fs.writeFileSync(path.join(folder, 'poison.txt'), 'always busy for this one');
      hot.start();
      await waitFor(() => poisonTries >= 3, 'poison.txt tried past its Retries');
      events.failed.should.eql([]); // alone, it cannot be told from an outage
      fs.writeFileSync(path.join(folder, 'fine.txt'), 'goes through');
      await waitFor(() => events.failed.length === 1, 'poison.txt failed');
      events.ingested.map(e => e.relativePath).should.eql(['fine.txt']);
      events.failed[0].relativePath.should.equal('poison.txt');
      events.failed[0].attempts.should.be.above(3);
      JSON.parse(fs.readFileSync(events.failed[0].errorFile, 'utf8')).status.should.equal(503);
      // Its last failure started a hold (it cannot be told from an outage); the next file is its probe.
      hot.unavailable.status.should.equal(503);
    } finally {
      await busy.close();
    }
  });

  it('a hold with no file left stays on until a probe gets through: the next file dropped is the probe', async function () {
    const server = await awayServer();
    try {
      const away = new AssetClient({ baseUrl: server.url, cookie: s.COOKIE, timeout: 20000 });
      const outage = [];
      const { hot, folder, events } = hotFolder({ upload: (file, signal) => away.upload({ file: { path: file.path }, destination: '/gone', signal }) });
      hot.on('unavailable', () => outage.push('unavailable'));
      hot.on('available', () => outage.push('available'));
      fs.writeFileSync(path.join(folder, 'removed.txt'), 'taken away by hand');
      hot.start();
      await waitFor(() => hot.unavailable !== undefined, 'the outage');
      fs.rmSync(path.join(folder, 'removed.txt'));
      await hot.rescan();
      hot.counts().should.containEql({ waiting: 0, failed: 0 });
      (hot.unavailable === undefined).should.be.false(); // what is known of the server: away
      await server.back();
      fs.writeFileSync(path.join(folder, 'next.txt'), 'the probe');
      await waitFor(() => events.ingested.length === 1, 'next.txt ingested');
      (hot.unavailable === undefined).should.be.true();
      outage.should.eql(['unavailable', 'available']);
    } finally {
      await server.close();
    }
  });

  it('behind nginx, the server stopped: the gateway\'s 502 holds the folder as a refused connection does; none fails', async function () {
    const { installed, startNginx } = require('../reliability/lib/servers');
    if (!installed('nginx')) {
      if (process.env.CI) throw new Error('nginx is not installed (.ci/run installs it)');
      this.skip();
    }
    const server = await awayServer();
    const nginx = await startNginx(path.join(tmp.dir, `nginx-${n + 1}`), [Number(new URL(server.url).port)]);
    stopAfter.push(nginx);
    try {
      const ref = {};
      const seen = counting(new AssetClient({ baseUrl: nginx.url, cookie: s.COOKIE, timeout: 20000 }), ref, '/gateway');
      const { hot, folder, events } = hotFolder({ retries: 1, upload: seen.upload });
      ref.hot = hot;
      for (const name of ['a.txt', 'b.txt']) fs.writeFileSync(path.join(folder, name), `${name} bytes`);
      hot.start();
      await waitFor(() => Object.values(seen.tries).reduce((x, y) => x + y, 0) >= 5, 'probes through the gateway');
      hot.unavailable.status.should.equal(502);
      events.failed.should.eql([]);
      seen.mostDuringOutage.should.equal(1);
      await server.back();
      await waitFor(() => events.ingested.length === 2, 'both ingested through nginx');
      events.failed.should.eql([]);
      (hot.unavailable === undefined).should.be.true();
    } finally {
      await server.close();
    }
  });

  it('a gateway\'s 504 after the whole file holds too, but counts for a probe (the server may have it): no file is sent for ever', async function () {
    const sends = {};
    let running = 0;
    let most = 0;
    const { hot, folder, events } = hotFolder({
      retries: 1,
      upload: async (file) => {
        sends[file.relativePath] = (sends[file.relativePath] || 0) + 1;
        running++;
        if (hot.unavailable) most = Math.max(most, running);
        await s.delay(5);
        running--;
        throw new AssetApiError('http', 'upload: HTTP 504 Gateway Time-out', { status: 504, bodySent: true }); // after the whole file, as nginx answers
      }
    });
    const outage = [];
    hot.on('unavailable', () => outage.push('unavailable'));
    for (const name of ['a.txt', 'b.txt', 'c.txt']) fs.writeFileSync(path.join(folder, name), `${name} bytes`);
    hot.start();
    await waitFor(() => events.failed.length === 3, 'the three failed');
    // Retries + 1 counted sends each; the one sent beside the first met the outage uncounted once more.
    Object.values(sends).sort().should.eql([2, 2, 3]);
    outage.should.eql(['unavailable']); // one hold, probes spaced by its waits
    most.should.equal(1);
  });

  it('a probe\'s failure after the whole file went out counts (a reset, a timeout): none is sent for ever; one before it (a dead host, a proxy\'s CONNECT 504) does not', async function () {
    const sends = {};
    const failing = () => ({
      retries: 1,
      upload: async (file) => {
        sends[file.relativePath] = (sends[file.relativePath] || 0) + 1;
        if (file.relativePath === 'reset.mov') throw new AssetApiError('network', 'upload: socket hang up', { code: 'ECONNRESET', bodySent: true });
        if (file.relativePath === 'slow.mov') throw new AssetApiError('timeout', 'upload: no answer within 60 s', { bodySent: true });
        if (file.relativePath === 'dead-host.txt') throw new AssetApiError('timeout', 'upload: no answer within 60 s'); // never connected
        // A forward proxy that cannot reach the server answers CONNECT 504: the server never saw it.
        throw new AssetApiError('network', 'upload: the HTTP proxy refused to open a tunnel (HTTP 504)', { status: 504, code: 'PROXY_TUNNEL_REFUSED' });
      }
    });
    const counted = hotFolder(failing());
    for (const name of ['reset.mov', 'slow.mov']) fs.writeFileSync(path.join(counted.folder, name), `${name}: the server may have it`);
    counted.hot.start();
    await waitFor(() => counted.events.failed.length === 2, 'both failed');
    // Retries + 1 counted sends each, the one sent beside the first met the outage uncounted once more.
    [sends['reset.mov'], sends['slow.mov']].sort().should.eql([2, 3]);
    // Its error file says the server may have it (moved back, it may arrive twice).
    JSON.parse(fs.readFileSync(counted.events.failed[0].errorFile, 'utf8')).bodySent.should.be.true();

    const notCounted = hotFolder(failing());
    for (const name of ['dead-host.txt', 'tunnel.txt']) fs.writeFileSync(path.join(notCounted.folder, name), `${name}: never reached the server`);
    notCounted.hot.start();
    await waitFor(() => sends['dead-host.txt'] >= 3 && sends['tunnel.txt'] >= 3, 'both probed past their Retries');
    notCounted.events.failed.should.eql([]);
  });

  it('a probe that gets through while a failed file is read again (a slow share): no crash, the file goes by age at once', async function () {
    const fsp = require('fs/promises');
    const realStat = fsp.stat;
    let aSent = false;
    // After a.txt's failed send, reading it takes 300 ms (a slow network share).
    fsp.stat = async (p, ...rest) => {
      if (aSent && String(p).endsWith('a.txt')) await s.delay(300);
      return realStat(p, ...rest);
    };
    const rejections = [];
    const onRejection = (err) => rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      const { hot, folder, events } = hotFolder({
        maxParallel: 1,
        upload: async (file) => {
          if (file.relativePath === 'a.txt' && !aSent) { aSent = true; throw new AssetApiError('http', 'upload: HTTP 503', { status: 503, retryAfterMs: 0 }); }
          return { fuids: [1] };
        }
      });
      const old = Date.now() / 1000 - 60;
      fs.writeFileSync(path.join(folder, 'a.txt'), 'fails once');
      fs.utimesSync(path.join(folder, 'a.txt'), old, old);
      fs.writeFileSync(path.join(folder, 'b.txt'), 'the probe');
      hot.start();
      await waitFor(() => events.ingested.length === 2, 'both ingested');
      events.ingested.map(e => e.relativePath).should.eql(['b.txt', 'a.txt']);
      await s.delay(50);
      rejections.should.eql([]);
    } finally {
      fsp.stat = realStat;
      process.removeListener('unhandledRejection', onRejection);
    }
  });

  it('a Retry-After of 0 does not make probes run back to back (at least the base wait between them)', async function () {
    let sends = 0;
    const { hot, folder, events } = hotFolder({
      retryBaseMs: 300,
      upload: async () => { sends++; throw new AssetApiError('http', 'upload: HTTP 503', { status: 503, retryAfterMs: 0 }); }
    });
    fs.writeFileSync(path.join(folder, 'busy.txt'), 'busy for ever');
    hot.start();
    await waitFor(() => sends >= 1, 'the first send');
    await s.delay(1000);
    sends.should.be.belowOrEqual(5); // 1 + at most one probe per 300 ms; without a floor, hundreds
    events.failed.should.eql([]);
  });

  it('an upload sent before an outage that came and went says nothing new: its failure starts no hold and does not count', async function () {
    let release;
    const gate = new Promise((resolve) => { release = resolve; });
    let bTries = 0;
    const attempts = [];
    const { hot, folder, events } = hotFolder({
      retries: 1,
      upload: async (file) => {
        attempts.push(`${file.relativePath} ${file.attempt}`);
        if (file.relativePath === 'a.txt' && file.attempt === 1) {
          await gate; // under way through the whole outage
          throw new AssetApiError('timeout', 'upload: no answer within 20 s');
        }
        if (file.relativePath === 'b.txt' && ++bTries === 1) throw new AssetApiError('network', 'upload: connect ECONNREFUSED', { code: 'ECONNREFUSED' });
        return { fuids: [1] };
      }
    });
    const outage = [];
    hot.on('unavailable', () => outage.push('unavailable'));
    hot.on('available', () => { outage.push('available'); release(); });
    fs.writeFileSync(path.join(folder, 'a.txt'), 'sent first, slow');
    fs.writeFileSync(path.join(folder, 'b.txt'), 'meets the outage');
    hot.start();
    await waitFor(() => events.ingested.length === 2, 'both ingested');
    // a.txt's timeout came after the outage it met had ended: sent again at once, no second hold.
    outage.should.eql(['unavailable', 'available']);
    attempts.filter(a => a.startsWith('a.txt')).should.eql(['a.txt 1', 'a.txt 2']);
    events.retry.map(r => r.relativePath).should.eql(['b.txt']); // only b.txt's failure counted
    events.failed.should.eql([]);
  });

  it('Retries 0: the file that meets an outage fails, the others (and one dropped later) are held and go once the server is back', async function () {
    const server = await awayServer();
    try {
      const ref = {};
      const seen = counting(new AssetClient({ baseUrl: server.url, cookie: s.COOKIE, timeout: 20000 }), ref, '/retries-0');
      const { hot, folder, events } = hotFolder({ retries: 0, upload: seen.upload });
      ref.hot = hot;
      for (const name of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) fs.writeFileSync(path.join(folder, name), `${name} bytes`);
      hot.start();
      await waitFor(() => Object.values(seen.tries).reduce((a, b) => a + b, 0) >= 6, 'probes after the first failure');
      events.failed.should.have.length(1); // the one whose failure showed the outage; one in flight beside it met it too
      hot.unavailable.kind.should.equal('network');
      // A file dropped alone during the outage is held too (a probe), not failed.
      fs.writeFileSync(path.join(folder, 'e.txt'), 'dropped while away');
      await waitFor(() => seen.tries['e.txt'] >= 1, 'e.txt probed');
      events.failed.should.have.length(1);
      await server.back();
      await waitFor(() => events.ingested.length === 4, 'the four others ingested');
      events.failed.should.have.length(1);
    } finally {
      await server.close();
    }
  });

  it('an outage: a file that failed goes by age again once it is over; an empty file beside it stays', async function () {
    const server = await awayServer();
    try {
      const away = new AssetClient({ baseUrl: server.url, cookie: s.COOKIE, timeout: 20000 });
      const order = [];
      const { hot, folder, events } = hotFolder({
        maxParallel: 1,
        upload: (file, signal) => { order.push(file.relativePath); return away.upload({ file: { path: file.path }, destination: '/order', wait: true, signal }); }
      });
      const old = Date.now() / 1000 - 3600;
      fs.writeFileSync(path.join(folder, 'old.txt'), 'the oldest');
      fs.utimesSync(path.join(folder, 'old.txt'), old, old);
      fs.writeFileSync(path.join(folder, 'empty.txt'), '');
      hot.start();
      await waitFor(() => hot.unavailable !== undefined && events.empty.length === 1, 'the outage, the empty file seen');
      // Newer files while away: probes take them before old.txt, which failed.
      fs.writeFileSync(path.join(folder, 'new-1.txt'), 'newer');
      await waitFor(() => order.includes('new-1.txt'), 'new-1.txt probed');
      fs.writeFileSync(path.join(folder, 'new-2.txt'), 'newer still');
      await waitFor(() => hot.counts().waiting === 3, 'three waiting');
      await server.back();
      await waitFor(() => events.ingested.length === 3, 'the three ingested');
      // Back in age order once the server answered: old.txt right after the probe that got through.
      const after = events.ingested.map(e => e.relativePath);
      after[1].should.equal('old.txt', after.join(', '));
      (hot.unavailable === undefined).should.be.true();

      fs.existsSync(path.join(folder, 'empty.txt')).should.be.true(); // never uploaded
    } finally {
      await server.close();
    }
  });

  /**
   * A file in a hot folder whose first upload (on a slow emulator) is followed, while the server
   * ingests it, by `change(filePath, folder)`; resolves once it is done, with what it took.
   */
  async function changedDuringUpload(name, content, destination, change) {
    const slow = await s.startTestEmulator({ ingestDelayMs: 400 });
    const client = new AssetClient({ baseUrl: slow.url, cookie: s.COOKIE, timeout: 20000 });
    let uploads = 0;
    const { hot, folder, events } = hotFolder({
      upload: async (file, signal) => {
        uploads++;
        const result = client.upload({ file: { path: file.path }, destination, wait: true, signal });
        if (uploads === 1) {
          await s.delay(50); // its body is on the server
          change(file.path, folder);
        }
        return result;
      }
    });
    try {
      fs.writeFileSync(path.join(folder, name), content);
      hot.start();
      await waitFor(() => events.ingested.length === 1);
      const found = await s.emulatorGet(`${slow.url}/emulator/assets?path=${encodeURIComponent(`${destination}/${name}`)}`);
      const onServer = (await client.downloadToBuffer({ fuid: found.body.asset.fuid })).data.toString();
      return { uploads, changed: events.changed, done: fs.readFileSync(path.join(folder, '.done', name), 'utf8'), onServer };
    } finally {
      await slow.close();
    }
  }

  it('a file changed during its upload is not done: it is uploaded again once untouched', async function () {
    const got = await changedDuringUpload('grows.txt', 'first part', '/changing', (file) => fs.appendFileSync(file, ' and more'));
    got.should.eql({ uploads: 2, changed: ['grows.txt'], done: 'first part and more', onServer: 'first part and more' });
  });

  it('a file renamed over during its upload with the same size and time (an atomic save) is uploaded again, not taken for the one sent', async function () {
    const got = await changedDuringUpload('same.bin', 'A'.repeat(4096), '/swapped', (file, folder) => {
      const temp = path.join(folder, '.swap.tmp');
      fs.writeFileSync(temp, 'B'.repeat(fs.statSync(file).size));
      require('child_process').execFileSync('touch', ['-r', file, temp]); // the same time to the nanosecond
      fs.renameSync(temp, file);
    });
    got.should.eql({ uploads: 2, changed: ['same.bin'], done: 'B'.repeat(4096), onServer: 'B'.repeat(4096) });
  });

  it('an empty file waits (never uploaded) until it has content', async function () {
    const { hot, folder, dest, events } = hotFolder();
    fs.writeFileSync(path.join(folder, 'empty.txt'), '');
    hot.start();
    await waitFor(() => events.empty.length === 1);
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 0, failed: 0, stuck: 0 });
    fs.writeFileSync(path.join(folder, 'empty.txt'), 'filled later');
    await waitFor(() => events.ingested.length === 1);
    (await serverBytes(`${dest}/empty.txt`)).toString().should.equal('filled later');
  });

  it('a folder missing at start, removed and created again: error state, then files are taken again', async function () {
    const { hot, folder, events } = hotFolder({ create: false, polling: true });
    hot.start();
    await waitFor(() => events.folderError.length === 1);
    events.folderError[0].should.match(/does not exist: create it \(or tick "create it when it is missing"\); it is looked for again every \d+ s/);
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'one.txt'), '1');
    await waitFor(() => events.ingested.length === 1, 'one.txt');
    events.folderOk.should.equal(1);
    fs.rmSync(folder, { recursive: true });
    await waitFor(() => events.folderError.length === 2);
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'two.txt'), '2');
    await waitFor(() => events.ingested.length === 2, 'two.txt');
    events.folderOk.should.equal(2);
  });

  it('Create the folder when missing: made at start (folders above it too), no error state; removed later, it is missing (not made again)', async function () {
    // A new-user audit: example 03 logged "… does not exist" on every first deploy, until its inject made the folder.
    const { hot, folder, events } = hotFolder({ create: false, polling: true, createFolder: true });
    const deepFolder = path.join(tmp.dir, `above-${n}`, 'inbox');
    const deep = hotFolder({ create: false, createFolder: true, folder: deepFolder });
    hot.start();
    deep.hot.start();
    await waitFor(() => fs.existsSync(folder), 'the folder made');
    fs.writeFileSync(path.join(folder, 'one.txt'), '1');
    await waitFor(() => events.ingested.length === 1, 'one.txt');
    events.folderError.should.eql([]);
    await waitFor(() => fs.existsSync(deepFolder), 'the folder below a missing one');
    deep.events.folderError.should.eql([]);
    // A share not mounted later must not get a local folder in its place.
    fs.rmSync(folder, { recursive: true });
    await waitFor(() => events.folderError.length === 1, 'the folder missing');
    fs.existsSync(folder).should.be.false();

    // It cannot be made (a file is in the way of a folder above it): the error says so.
    const blocked = path.join(tmp.dir, `blocker-file-${n}`);
    fs.writeFileSync(blocked, 'not a folder');
    const cannot = hotFolder({ create: false, createFolder: true, folder: path.join(blocked, 'inbox') });
    cannot.hot.start();
    await waitFor(() => cannot.events.folderError.length === 1, 'the error');
    cannot.events.folderError[0].should.match(/cannot be created \(ENOTDIR\)/);
  });

  it('recursive, polling only, include pattern: subfolders kept below the destination and in .done', async function () {
    const { hot, folder, dest, events } = hotFolder({ recursive: true, polling: true, include: ['*.pdf'] });
    fs.mkdirSync(path.join(folder, 'scans', '2026'), { recursive: true });
    fs.mkdirSync(path.join(folder, '.git'));
    fs.writeFileSync(path.join(folder, 'scans', '2026', 'page 1 ü.pdf'), 'pdf bytes');
    fs.writeFileSync(path.join(folder, 'scans', 'notes.txt'), 'not included');
    fs.writeFileSync(path.join(folder, '.git', 'hidden.pdf'), 'in a hidden folder');
    hot.start();
    await waitFor(() => events.ingested.length === 1);
    events.ingested[0].relativePath.should.equal('scans/2026/page 1 ü.pdf');
    (await serverBytes(`${dest}/scans/2026/page 1 ü.pdf`)).toString().should.equal('pdf bytes');
    fs.existsSync(path.join(folder, '.done', 'scans', '2026', 'page 1 ü.pdf')).should.be.true();
    await hot.rescan();
    fs.existsSync(path.join(folder, 'scans', 'notes.txt')).should.be.true();
    fs.existsSync(path.join(folder, '.git', 'hidden.pdf')).should.be.true();
    events.ingested.length.should.equal(1);
  });

  it('a file without read permission goes to .failed naming the reason (run as an unprivileged user)', async function () {
    const folder = path.join(tmp.dir, `unreadable-${++n}`);
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'secret.txt'), 'nobody may read this');
    fs.chmodSync(path.join(folder, 'secret.txt'), 0o000);
    fs.writeFileSync(path.join(folder, 'open.txt'), 'readable');
    if (asRoot) {
      // root reads anything: the hot folder runs as nobody, owning its folder (so it may move files).
      fs.chmodSync(tmp.dir, 0o755);
      for (const f of [folder, path.join(folder, 'open.txt')]) fs.chownSync(f, 65534, 65534);
    }
    const { spawn } = require('child_process');
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'hot-folder-child.js'), folder, emulator.url, s.COOKIE, '2'],
      { stdio: ['ignore', 'pipe', 'inherit'], ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
    let out = '';
    child.stdout.on('data', d => { out += d; });
    const exited = new Promise(resolve => child.on('exit', resolve));
    let code;
    try {
      code = await Promise.race([exited, waitFor(() => false, 'the child to report both files').catch(e => e)]);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    if (code instanceof Error) throw new Error(`${code.message}; it printed: ${out}`);
    code.should.equal(0);
    const lines = out.trim().split('\n').map(l => JSON.parse(l));
    const failed = lines.find(l => l.failed === 'secret.txt');
    failed.should.containDeep({ kind: 'invalid-input', attempts: 1, movedTo: path.join(folder, '.failed', 'secret.txt') });
    failed.message.should.match(/EACCES/);
    JSON.parse(fs.readFileSync(failed.errorFile, 'utf8')).code.should.equal('EACCES');
    lines.find(l => l.ingested === 'open.txt').movedTo.should.equal(path.join(folder, '.done', 'open.txt'));
  });

  it('delete instead of done when doneFolder is null; at most maxParallel uploads at once, oldest first', async function () {
    let running = 0;
    let most = 0;
    const order = [];
    const client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE, timeout: 20000 });
    const { hot, folder, events } = hotFolder({
      doneFolder: null, maxParallel: 2,
      upload: async (file, signal) => {
        running++; most = Math.max(most, running); order.push(file.relativePath);
        try { return await client.upload({ file: { path: file.path }, destination: '/parallel', wait: true, signal }); } finally { running--; }
      }
    });
    const t = Date.now() / 1000;
    for (let i = 0; i < 8; i++) {
      const file = path.join(folder, `f${i}.txt`);
      fs.writeFileSync(file, `file ${i}`);
      fs.utimesSync(file, t - 100 + (7 - i), t - 100 + (7 - i)); // f7 oldest
    }
    hot.start();
    await waitFor(() => events.ingested.length === 8);
    most.should.be.belowOrEqual(2);
    order.slice(0, 2).sort().should.eql(['f6.txt', 'f7.txt']);
    fs.readdirSync(folder).should.eql([]);
  });

  it('a file uploaded but not movable stays in place, is not uploaded again, and goes again once changed', async function () {
    // The done folder below a regular file: mkdir fails (ENOTDIR), as it would with EACCES or ENOSPC.
    const blocker = path.join(tmp.dir, `blocker-${n + 1}`);
    fs.writeFileSync(blocker, 'a regular file');
    const sent = [];
    const { hot, folder, events } = hotFolder({
      polling: true, doneFolder: path.join(blocker, 'done'),
      upload: async (file) => { sent.push(fs.readFileSync(file.path, 'utf8')); return { fuids: [1] }; }
    });
    const warnings = [];
    hot.on('warning', w => warnings.push(w));
    fs.writeFileSync(path.join(folder, 'a.txt'), 'first');
    hot.start();
    await waitFor(() => warnings.length === 1, 'the warning');
    warnings[0].should.match(/uploaded, but could not be moved to the done folder/);
    // Full scans read it but do not take it as a new file (before: uploaded again at every rescan).
    await hot.rescan();
    await hot.rescan();
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 0, failed: 0, stuck: 1 });
    sent.should.eql(['first']);
    // A new version is a new file: uploaded once untouched (and stuck again: warned once more).
    fs.appendFileSync(path.join(folder, 'a.txt'), ' and second');
    await waitFor(() => warnings.length === 2, 'the second warning');
    sent.should.eql(['first', 'first and second']);
    fs.readFileSync(path.join(folder, 'a.txt'), 'utf8').should.equal('first and second');
    // Renamed over with the same size and time (an atomic save): a new version too.
    const temp = path.join(folder, '.swap.tmp');
    fs.writeFileSync(temp, 'FIRST AND SECOND');
    require('child_process').execFileSync('touch', ['-r', path.join(folder, 'a.txt'), temp]);
    fs.renameSync(temp, path.join(folder, 'a.txt'));
    await waitFor(() => warnings.length === 3, 'the third warning');
    sent.should.eql(['first', 'first and second', 'FIRST AND SECOND']);
    events.ingested.length.should.equal(0);
    // Removed by someone: forgotten.
    fs.unlinkSync(path.join(folder, 'a.txt'));
    await hot.rescan();
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 0, failed: 0, stuck: 0 });
  });

  it('a failed file that cannot be moved to the failed folder stays in place and is not uploaded again', async function () {
    const blocker = path.join(tmp.dir, `blocker-${n + 1}`);
    fs.writeFileSync(blocker, 'a regular file');
    let uploads = 0;
    const { hot, folder } = hotFolder({
      polling: true, failedFolder: path.join(blocker, 'failed'),
      upload: async () => { uploads++; throw new AssetApiError('permission', 'denied', { status: 403, operation: 'upload' }); }
    });
    const warnings = [];
    hot.on('warning', w => warnings.push(w));
    fs.writeFileSync(path.join(folder, 'denied.txt'), 'no permission');
    hot.start();
    await waitFor(() => warnings.length === 1, 'the warning');
    warnings[0].should.match(/could not be moved to the failed folder/);
    await hot.rescan();
    await hot.rescan();
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 0, failed: 0, stuck: 1 });
    uploads.should.equal(1);
  });

  it('a move whose source cannot be removed takes its copy back (no `name (n)` left per try)', function () {
    const { execFileSync } = require('child_process');
    const dir = path.join(tmp.dir, `unmovable-${++n}`);
    const source = path.join(dir, 'in', 'a.pdf');
    const target = path.join(dir, 'done');
    fs.mkdirSync(path.dirname(source), { recursive: true });
    fs.mkdirSync(target);
    fs.writeFileSync(source, 'pdf');
    fs.chmodSync(source, 0o666); // linkable by anyone (fs.protected_hardlinks)
    // Its folder read-only for the mover: the link into done works, the unlink of the source does not.
    if (asRoot) {
      // root may unlink anything: the move runs as nobody, owning only the done folder.
      fs.chmodSync(tmp.dir, 0o755);
      fs.chownSync(target, 65534, 65534);
    } else {
      fs.chmodSync(path.dirname(source), 0o555);
    }
    const script = `const { moveWithoutOverwrite } = require(${JSON.stringify(path.join(root, 'dist', 'nodes', 'asset-hot-folder', 'files'))});
      (async () => { const out = []; for (let i = 0; i < 2; i++) { try { out.push(await moveWithoutOverwrite(process.argv[1], process.argv[2])); } catch (e) { out.push(e.code); } } console.log(JSON.stringify(out)); })();`;
    try {
      const out = execFileSync(process.execPath, ['-e', script, source, target], { encoding: 'utf8', ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
      JSON.parse(out).should.eql(['EACCES', 'EACCES']);
      fs.readdirSync(target).should.eql([]);
      fs.readFileSync(source, 'utf8').should.equal('pdf');
    } finally {
      fs.chmodSync(path.dirname(source), 0o755);
    }
  });

  it('the done folder reached through another spelling (the watched folder a symbolic link) is never scanned', async function () {
    const base = path.join(tmp.dir, `aliased-${++n}`);
    const real = path.join(base, 'real');
    fs.mkdirSync(real, { recursive: true });
    fs.symlinkSync(real, path.join(base, 'hot'));
    const sent = [];
    const { hot, events } = hotFolder({
      folder: path.join(base, 'hot'), create: false, recursive: true, polling: true, doneFolder: path.join(real, 'done'),
      upload: async (file) => { sent.push(file.relativePath); return { fuids: [1] }; }
    });
    fs.writeFileSync(path.join(real, 'a.txt'), 'once');
    hot.start();
    await waitFor(() => events.ingested.length === 1, 'the file ingested');
    fs.readFileSync(path.join(real, 'done', 'a.txt'), 'utf8').should.equal('once');
    // Full scans do not see done/a.txt (before: taken as a new file, uploaded, moved to done/done).
    await hot.rescan();
    await hot.rescan();
    hot.counts().should.eql({ waiting: 0, uploading: 0, done: 1, failed: 0, stuck: 0 });
    sent.should.eql(['a.txt']);
  });

  it('a done folder that is, links resolved, the watched folder or above it is a folder error naming the setting', async function () {
    const base = path.join(tmp.dir, `aliased-${++n}`);
    const real = path.join(base, 'real');
    fs.mkdirSync(real, { recursive: true });
    fs.symlinkSync(real, path.join(base, 'hot'));
    fs.writeFileSync(path.join(real, 'a.txt'), 'must stay');
    let uploads = 0;
    const { hot, events } = hotFolder({
      folder: path.join(base, 'hot'), create: false, polling: true, doneFolder: real,
      upload: async () => { uploads++; return { fuids: [1] }; }
    });
    hot.start();
    await hot.rescan();
    events.folderError.should.have.length(1);
    events.folderError[0].should.match(/is inside the done folder .*real once symbolic links are resolved: doneFolder \(Done folder\) must not be the watched folder or a folder above it/);
    hot.error.should.equal(events.folderError[0]);
    uploads.should.equal(0);
    fs.existsSync(path.join(real, 'a.txt')).should.be.true();
  });

  it('a file rewritten while queued is read again before its upload: it waits until untouched, then goes whole', async function () {
    const jobs = [];
    const { hot, folder, events } = hotFolder({
      polling: true, maxParallel: 1,
      upload: async (file) => {
        jobs.push({ file: file.relativePath, size: file.size, onDisk: fs.statSync(file.path).size, text: fs.readFileSync(file.path, 'utf8') });
        // While b.txt (the oldest) is sent, a.txt waits in the queue and is written to (no event: rescan only).
        if (file.relativePath === 'b.txt') fs.appendFileSync(path.join(folder, 'a.txt'), ' and more');
        return { fuids: [1] };
      }
    });
    fs.writeFileSync(path.join(folder, 'b.txt'), 'oldest');
    const old = Date.now() / 1000 - 100;
    fs.utimesSync(path.join(folder, 'b.txt'), old, old);
    fs.writeFileSync(path.join(folder, 'a.txt'), 'v1');
    hot.start();
    await waitFor(() => events.ingested.length === 2, 'both files ingested');
    // Before: a.txt was sent as found (2 bytes recorded) while it held more.
    jobs.map(j => [j.file, j.size, j.onDisk, j.text]).should.eql([['b.txt', 6, 6, 'oldest'], ['a.txt', 11, 11, 'v1 and more']]);
    events.changed.should.eql(['a.txt']);
    events.ingested.find(e => e.relativePath === 'a.txt').should.containDeep({ size: 11, attempts: 1 });
  });

  it('a file rewritten while it waits for a retry is a new version: it waits until untouched, then goes whole', async function () {
    const jobs = [];
    const { hot, folder, events } = hotFolder({
      retryBaseMs: 5000, // the retry would come long after the change is seen
      upload: async (file) => {
        jobs.push({ size: file.size, text: fs.readFileSync(file.path, 'utf8'), attempt: file.attempt });
        if (jobs.length === 1) throw new AssetApiError('network', 'upload: connection reset', { code: 'ECONNRESET' });
        return { fuids: [1] };
      }
    });
    hot.on('retry', () => fs.writeFileSync(path.join(folder, 'a.txt'), 'version two'));
    fs.writeFileSync(path.join(folder, 'a.txt'), 'v1');
    hot.start();
    await waitFor(() => events.ingested.length === 1, 'ingested');
    // Before: the change only updated the recorded size, and the retry sent the file as a retry
    // (attempt 2) whenever it came, however recently it had changed.
    jobs.map(j => [j.text, j.attempt]).should.eql([['v1', 1], ['version two', 1]]);
  });

  it('symbolic links are never taken, whether found by a scan or named by an event', async function () {
    const target = path.join(tmp.dir, `link-target-${n + 1}.txt`);
    fs.writeFileSync(target, 'outside');
    const old = Date.now() / 1000 - 100;
    fs.utimesSync(target, old, old); // older than the marker: were it taken, it would go first
    const sent = [];
    const { hot, folder, events } = hotFolder({
      rescanMs: 3600000, maxParallel: 1, // no rescan after the first: only events name the later link
      upload: async (file) => { sent.push(file.relativePath); return { fuids: [1] }; }
    });
    fs.symlinkSync(target, path.join(folder, 'there-at-start.txt'));
    hot.start();
    await hot.rescan();
    fs.symlinkSync(target, path.join(folder, 'dropped-later.txt'));
    fs.writeFileSync(path.join(folder, 'marker.txt'), 'a real file, dropped after the link');
    await waitFor(() => events.ingested.some(e => e.relativePath === 'marker.txt'), 'the marker ingested');
    sent.should.eql(['marker.txt']);
    fs.readFileSync(target, 'utf8').should.equal('outside');
    fs.lstatSync(path.join(folder, 'dropped-later.txt')).isSymbolicLink().should.be.true();
  });
});
