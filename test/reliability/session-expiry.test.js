'use strict';
// Suite 2b: sessions that expire every few seconds (the emulator's --session-max-age and
// --session-idle) while a hot-folder flow uploads and an asset-event-in flow receives, in a real
// Node-RED process. With automatic login: 0 failed operations, every file uploaded once and every
// change emitted once. The same run with login disabled: the uploads fail with `auth` errors whose
// message names the fix (a new cookie, or automatic login).
// Short mode (npm test): ~10 s of files; RELIABILITY_LONG=1: 3 minutes.
require('should');
const fs = require('fs');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const r = require('./lib/support');
const { startRealNodeRed, startCollector, reporter } = require('./lib/nodered');

const USER = { name: 'hot-folder-robot', password: 'Hot-Folder-Pass-5a1c9e', permissions: ['events', 'add'] };
const MAX_AGE_S = 2;
const IDLE_S = 1;
const FILES = r.pick(25, 360);
const EVERY_MS = 400;
const STATIC = 'static-expiring-session-61b0';

describe('reliability 2b: sessions expiring every few seconds during a hot-folder and event flow', function () {
  this.timeout(r.pick(60000, 600000));
  let work;
  let emulator;
  let nodeRed;
  let collector;
  const emulatorLog = [];

  before(async function () {
    this.timeout(90000);
    work = r.tempDir('dam-session-expiry-');
    emulator = await startEmulator({
      port: 0, dataDir: path.join(work, 'emulator'), retryDelayMs: 300, users: [USER],
      sessions: [], sessionMaxAge: MAX_AGE_S, sessionIdle: IDLE_S, log: (line) => emulatorLog.push(line)
    });
    collector = await startCollector();
    nodeRed = await startRealNodeRed();
  });

  after(async function () {
    this.timeout(30000);
    if (this.currentTest && this.currentTest.state === 'failed' && nodeRed) console.log(nodeRed.lines.slice(-40).join('\n'));
    if (nodeRed) await nodeRed.stopAndClean();
    if (collector) await collector.close();
    if (emulator) await emulator.close();
    r.rmDir(work);
  });

  /** Hot folder -> upload (-> report), catch (-> report), and an event-in owning its subscription (-> report). */
  function flows(tag, hotDir, serverProps, credentials) {
    const id = (n) => `${tag}${String(n).padStart(16 - tag.length, '0')}`;
    const z = id(1);
    const server = { id: id(2), type: 'asset-server', name: 'dam', baseUrl: emulator.url, publicBaseUrl: nodeRed.url, timeout: 10, ...serverProps, credentials };
    return [
      { id: z, type: 'tab', label: `session expiry ${tag}` },
      server,
      { id: id(3), type: 'watch', z, name: 'hot folder', files: hotDir, recursive: '', x: 0, y: 0, wires: [[id(4)]] },
      {
        id: id(4), type: 'function', z, name: 'each new file once', outputs: 2, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [],
        func: [
          'if (msg.type !== "file") return null;',
          '// A probe of the test: reported, not uploaded.',
          'if (msg.file.startsWith("probe-")) return [null, { topic: msg.file }];',
          'const seen = context.get("seen") || {};',
          'if (seen[msg.filename]) return null;',
          'seen[msg.filename] = true;',
          'context.set("seen", seen);',
          'return [{ filename: msg.filename, topic: msg.file }, { topic: msg.file }];'
        ].join('\n'),
        x: 0, y: 0, wires: [[id(5)], [`${tag}-picked`]]
      },
      { id: id(5), type: 'asset-upload', z, server: server.id, filename: 'filename', filenameType: 'msg', destination: `/${tag}`, destinationType: 'str',
        wait: 'true', waitType: 'bool', expandZip: 'false', expandZipType: 'bool', x: 0, y: 0, wires: [[`${tag}-up`]] },
      { id: id(6), type: 'catch', z, scope: null, uncaught: false, x: 0, y: 0, wires: [[`${tag}-failed`]] },
      { id: id(7), type: 'asset-event-in', z, path: `/${tag}-events`, method: 'post', manage: true, server: server.id,
        watchPath: [`* /${tag}`], x: 0, y: 0, wires: [[`${tag}-event`]] },
      ...reporter(`${tag}-up`, z, `${tag}:uploaded`, collector.url),
      ...reporter(`${tag}-failed`, z, `${tag}:failed`, collector.url),
      ...reporter(`${tag}-event`, z, `${tag}:event`, collector.url),
      ...reporter(`${tag}-picked`, z, `${tag}:picked`, collector.url)
    ];
  }

  const reports = (tag) => collector.reports.filter((rep) => rep.tag === tag).map((rep) => rep.msg);

  /** Drops `count` files into `dir`, one every EVERY_MS (each written elsewhere, then renamed in whole). */
  async function dropFiles(dir, count, prefix) {
    const staging = path.join(work, 'staging');
    fs.mkdirSync(staging, { recursive: true });
    // The watch node may start watching a little after the deploy: probe files until one is seen.
    const tag = `${path.basename(dir)}:picked`;
    for (let n = 0; !reports(tag).some((m) => /^probe-/.test(m.topic)); n++) {
      if (n === 100) throw new Error('the watch node saw none of 100 probe files');
      fs.writeFileSync(path.join(dir, `probe-${n}.txt`), 'probe');
      await r.sleep(100);
    }
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${String(i).padStart(4, '0')}.txt`;
      fs.writeFileSync(path.join(staging, name), `file ${i} of ${prefix}\n`);
      fs.renameSync(path.join(staging, name), path.join(dir, name));
      await r.sleep(EVERY_MS);
    }
  }

  it(`automatic login: ${FILES} files while sessions expire every ${MAX_AGE_S} s: 0 failed operations, every change emitted once`, async function () {
    const hotDir = path.join(work, 'loginon');
    fs.mkdirSync(hotDir);
    await nodeRed.deployAs('full', flows('loginon', hotDir, { loginEnabled: true, loginPreset: 'form' }, { username: USER.name, password: USER.password }));
    const before = emulator.sessionStats();
    await dropFiles(hotDir, FILES, 'in');
    await r.waitFor(`${FILES} uploads`, () => reports('loginon:uploaded').length + reports('loginon:failed').length >= FILES, 30000, 50)
      .catch((err) => {
        const done = new Set(reports('loginon:uploaded').map((m) => m.topic));
        const missing = fs.readdirSync(hotDir).filter((f) => !done.has(f) && !f.startsWith('probe-'));
        const picked = reports('loginon:picked').map((m) => m.topic);
        throw new Error(`${err.message}: ${done.size} uploaded, ${reports('loginon:failed').length} failed, not uploaded: ${missing.join(', ')}; ` +
          `picked up by the watch node: ${missing.filter((f) => picked.includes(f)).join(', ') || 'none of them'}`);
      });
    const failed = reports('loginon:failed');
    failed.map((m) => m.error && m.error.message).should.eql([], '0 failed operations');
    const uploaded = reports('loginon:uploaded');
    new Set(uploaded.map((m) => m.topic)).size.should.equal(FILES, 'every file uploaded once');

    // Every change reaches the flow once: one add per file (and the folder's own creation).
    const isFile = (m) => /\/in-\d{4}\.txt$/.test(m.payload.path || '');
    await r.waitFor(`${FILES} file events`, () => reports('loginon:event').filter(isFile).length >= FILES, 30000, 50);
    await r.sleep(500); // a duplicate would arrive in this time
    const events = reports('loginon:event');
    const keys = events.map((m) => `${m.payload.assetId}:${m.payload.rrn}:${m.payload.action}`);
    new Set(keys).size.should.equal(keys.length, 'no change emitted twice');
    events.filter(isFile).length.should.equal(FILES);

    const stats = emulator.sessionStats();
    const logins = stats.logins - before.logins;
    logins.should.be.above(1, 'sessions expired and were renewed during the run');
    (stats.expired - before.expired).should.be.above(0);
    (stats.failedLogins - before.failedLogins).should.equal(0);
    // asset-event-in registered its subscription again after the logins that followed a 401.
    emulatorLog.filter((l) => /^POST \/review\/api\/events\/assets\/subscribe\/nr-loginon0+7 200/.test(l)).length.should.be.above(1);
    r.figure(`session expiry with automatic login: ${FILES} uploads, ${events.length} events, ${logins} logins, ${stats.expired - before.expired} sessions expired, 0 failures`);
    nodeRed.lines.join('\n').should.not.containEql(USER.password);
    emulatorLog.join('\n').should.not.containEql(USER.password);
  });

  it('login disabled, same run: the uploads fail with auth errors that name the fix', async function () {
    const hotDir = path.join(work, 'loginoff');
    fs.mkdirSync(hotDir);
    emulator.addSession({ value: STATIC, permissions: ['events', 'add'] });
    await nodeRed.deployAs('full', flows('loginoff', hotDir, {}, { cookie: STATIC }));
    const count = Math.min(FILES, 10);
    await dropFiles(hotDir, count, 'in');
    const uploadFailures = () => reports('loginoff:failed').filter((m) => m.error && m.error.source && m.error.source.type === 'asset-upload').length;
    await r.waitFor(`${count} outcomes`, () => reports('loginoff:uploaded').length + uploadFailures() >= count, 30000, 50);
    // Upload failures (the Catch node may also see the event node's registration failing).
    const failed = reports('loginoff:failed').filter((m) => m.error && m.error.source && m.error.source.type === 'asset-upload');
    failed.length.should.be.above(0, 'the expired session made uploads fail');
    for (const m of failed) {
      m.assetError.kind.should.equal('auth');
      m.error.message.should.match(/HTTP 401/).and.match(/asset-session node/).and.match(/automatic login/);
    }
    nodeRed.lines.join('\n').should.not.containEql(STATIC);
  });
});
