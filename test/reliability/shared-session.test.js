'use strict';
// Reliability suite 14 (issue 26, part 5): one session shared by two Node-RED copies. Real parts:
// Debian's redis-server and nginx (round robin), two Node-RED processes with the same flow, the
// emulator in one session per user mode with sessions that expire every few seconds. Both copies
// run uploads, downloads and subscription reads (driven through nginx) for a while:
// - with Share session (asset-server -> asset-redis): 0 failed operations, logins <= expiries + 2;
// - without it, the same load shows the login storm (each copy's login ends the other's session);
//   its figures go to docs/scale-out.md.
// Duration: SHARED_SESSION_SECONDS, else ~20 s (npm test) or 60 s (RELIABILITY_LONG=1), per mode.
require('should');
const path = require('path');
const http = require('http');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { LONG, pick, tempDir, rmDir, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis, startNginx } = require('./lib/servers');

const SECONDS = Number(process.env.SHARED_SESSION_SECONDS) || pick(20, 60);
const MAX_AGE_S = 3;
const WORKERS = 4;
const ROBOT = { name: 'dam-robot', password: 'Robot-Pass-3f9d1e', permissions: ['events', 'add'] };
const SUB_ID = 'shared-session-read-01';

describe(`reliability 14: two Node-RED copies, one user, sessions expiring every ${MAX_AGE_S} s, ${SECONDS} s per mode (${LONG ? 'long' : 'short'} mode)`, function () {
  this.timeout((SECONDS * 2 + 120) * 1000);
  let work, redis, nginx, emulator, copies, client, agent, fuid;

  before(async function () {
    for (const command of ['redis-server', 'nginx']) {
      if (!installed(command)) {
        if (process.env.CI) throw new Error(`${command} is not installed (.ci/run installs it)`);
        this.skip();
      }
    }
    work = tempDir('dam-shared-session-');
    redis = await startRedis(path.join(work, 'redis'), { durable: false });
    // The test's own client uses the given session local-dev (another user): it never ends the robot's.
    emulator = await startEmulator({
      port: 0, dataDir: path.join(work, 'emulator'), users: [ROBOT], oneSessionPerUser: true, sessionMaxAge: MAX_AGE_S
    });
    client = new AssetClient({ baseUrl: emulator.url, cookie: 'local-dev' });
    await client.registerSubscription(SUB_ID, { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' });
    fuid = (await client.upload({ file: { buffer: Buffer.from('download me') }, name: 'fixed.txt', destination: '/shared', wait: true })).fuids[0];
    copies = [await launchNodeRed(), await launchNodeRed()];
    nginx = await startNginx(path.join(work, 'nginx'), copies.map((c) => c.port));
    agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS * 2 });
  });

  after(async function () {
    if (agent) agent.destroy();
    if (client) client.close();
    for (const copy of copies || []) await copy.close().catch(() => undefined);
    if (nginx) await nginx.stop();
    if (redis) await redis.stop();
    if (emulator) await emulator.close();
    rmDir(work);
  });

  /** The flow of both copies: POST /op {op} -> upload, download or subscription read -> answer; any failure -> 502. */
  function flow(shared) {
    const next = ids(shared ? 'cb' : 'cc');
    const z = next();
    const store = { id: next(), type: 'asset-redis', name: 'shared', url: redis.url, prefix: 'nr:', timeout: 1000 };
    const server = {
      id: next(), type: 'asset-server', name: 'dam', baseUrl: emulator.url, timeout: 10, loginEnabled: true, loginPreset: 'utility',
      redis: shared ? store.id : '', credentials: { username: ROBOT.name, password: ROBOT.password }
    };
    const [input, route, upload, download, read, ok, respond, catcher, failed] = Array.from({ length: 9 }, next);
    return [
      { id: z, type: 'tab', label: 'shared session' }, store, server,
      { id: input, type: 'http in', z, url: '/op', method: 'post', upload: false, wires: [[route]] },
      {
        id: route, type: 'function', z, name: 'route', outputs: 3, libs: [],
        func: [
          'const op = msg.payload.op;',
          'if (op === "upload") { msg.name = msg.payload.name; msg.payload = "content of " + msg.payload.name; return [msg, null, null]; }',
          'if (op === "download") { msg.fuid = msg.payload.fuid; return [null, msg, null]; }',
          'return [null, null, msg];'
        ].join('\n'),
        wires: [[upload], [download], [read]]
      },
      { id: upload, type: 'asset-upload', z, server: server.id, filename: '', filenameType: 'msg', assetName: 'name', assetNameType: 'msg',
        destination: '/shared', destinationType: 'str', wait: 'true', waitType: 'bool', expandZip: 'false', expandZipType: 'bool', maxInFlight: 8, wires: [[ok]] },
      { id: download, type: 'asset-download', z, server: server.id, fuid: 'fuid', fuidType: 'msg', rrn: '', rrnType: 'msg', output: 'buffer', maxInFlight: 8, wires: [[ok]] },
      { id: read, type: 'asset-subscribe', z, server: server.id, action: 'get', subscriptionId: SUB_ID, subscriptionIdType: 'str', wires: [[ok]] },
      { id: ok, type: 'function', z, name: 'ok', outputs: 1, libs: [], func: 'msg.payload = { ok: true }; return msg;', wires: [[respond]] },
      { id: respond, type: 'http response', z, statusCode: '', headers: {}, wires: [] },
      { id: catcher, type: 'catch', z, scope: [upload, download, read], uncaught: false, wires: [[failed]] },
      { id: failed, type: 'function', z, name: 'failed', outputs: 1, libs: [],
        func: 'msg.statusCode = 502; msg.payload = { error: msg.error && msg.error.message }; return msg;', wires: [[respond]] }
    ];
  }

  function post(body) {
    return new Promise((resolve) => {
      const text = JSON.stringify(body);
      const req = http.request(`${nginx.url}/op`, {
        method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }
      }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => resolve({ status: 0, text: err.message }));
      });
      req.on('error', (err) => resolve({ status: 0, text: err.message }));
      req.end(text);
    });
  }

  /** WORKERS loops through nginx for `seconds`: upload, download, read in turn. */
  async function load(seconds, tag) {
    const ops = { upload: 0, download: 0, read: 0 };
    const failures = [];
    const before = emulator.sessionStats();
    const until = Date.now() + seconds * 1000;
    let n = 0;
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      while (Date.now() < until) {
        const i = n++;
        const op = ['upload', 'download', 'read'][i % 3];
        const res = await post({ op, name: `${tag}-${i}.txt`, fuid });
        ops[op]++;
        if (res.status !== 200) failures.push(`${op}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
      }
    }));
    const after = emulator.sessionStats();
    return {
      ops, failed: failures.length, failures,
      logins: after.logins - before.logins, expired: after.expired - before.expired, endedByLogin: after.endedByLogin - before.endedByLogin
    };
  }

  function line(name, r) {
    const total = r.ops.upload + r.ops.download + r.ops.read;
    return `${name}: ${total} operations (${r.ops.upload} uploads, ${r.ops.download} downloads, ${r.ops.read} reads), ${r.failed} failed, ` +
      `${r.logins} logins, ${r.expired} sessions expired, ${r.endedByLogin} ended by another copy's login`;
  }

  it('with Share session: 0 failed operations, logins <= expiries + 2; without it: the login storm', async function () {
    for (const copy of copies) await copy.deploy(flow(true));
    // Both copies answer through nginx before the clock starts.
    await waitFor('both copies answering', async () => (await post({ op: 'read' })).status === 200 && (await post({ op: 'read' })).status === 200, 30000, 100);
    const shared = await load(SECONDS, 'shared');
    console.log(`      ${line('shared session', shared)}`);

    for (const copy of copies) await copy.deploy(flow(false));
    const alone = await load(SECONDS, 'alone');
    console.log(`      ${line('each copy its own session', alone)}`);
    const kinds = {};
    for (const f of alone.failures) { const k = f.replace(/\d+/g, 'N').slice(0, 160); kinds[k] = (kinds[k] || 0) + 1; }
    for (const [k, count] of Object.entries(kinds).sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`        ${count} x ${k}`);

    shared.failed.should.equal(0, shared.failures.slice(0, 5).join('\n'));
    shared.expired.should.be.aboveOrEqual(Math.floor(SECONDS / MAX_AGE_S) - 2, 'sessions expired during the run');
    shared.logins.should.be.belowOrEqual(shared.expired + 2, 'logins beyond the expiries');
    shared.endedByLogin.should.be.belowOrEqual(2);
    // The storm: each copy's login ends the other's session; the calls that meet it fail (the
    // repeat after a login meets a 401 again, and the failed login's backoff holds the next ones).
    alone.endedByLogin.should.be.above(shared.endedByLogin, 'without sharing, the copies end each other\'s sessions');
    alone.failed.should.be.above(0, 'without sharing, operations fail');
    // The cookie never in a log line of either copy.
    for (const copy of copies) copy.lines.filter((l) => /ses1-[0-9a-f]{32}/.test(l)).should.eql([]);
  });
});
