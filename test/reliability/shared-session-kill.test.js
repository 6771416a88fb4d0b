'use strict';
// Reliability suite 14b (issue 26 follow-up, part 2): the copy holding the shared session's login
// lock is SIGKILLed. Real parts: Debian's redis-server, two spawned Node-RED processes with the same
// flow (asset-server with Share session -> asset-redis), the emulator in one session per user mode
// behind a small HTTP relay of the test's own that can hold the next login request (so that the
// moment "copy A is logging in, its lock in Redis" is a state the test waits for, not a time).
// Copy A meets a 401, takes the lock and sends its login, which the relay holds; A is SIGKILLed at
// a random moment within a second after that while copy B serves reads that all need a session:
// B waits for the lock's lease, takes over, logs in once, and none of its operations fails. A,
// started again, takes B's cookie from Redis instead of logging in.
require('should');
const path = require('path');
const http = require('http');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { loginLeaseMs } = require('../../dist/api/shared-session');
const { tempDir, rmDir, launchNodeRed, ids } = require('./lib/rig');
const { waitFor } = require('./lib/support');
const { installed, startRedis } = require('./lib/servers');

const ROBOT = { name: 'dam-robot', password: 'Robot-Pass-77a0c2', permissions: ['events', 'add'] };
const SUB_ID = 'shared-kill-read-001';
const TIMEOUT_S = 3;
const WORKERS = 3;

/** Forwards HTTP to `target`; `holdNextLogin()` resolves when the next login request (GET /command) arrives and holds it unanswered. */
async function startRelay(target) {
  const upstream = new URL(target);
  let onLogin;
  const server = http.createServer((req, res) => {
    if (onLogin && req.url.startsWith('/command')) {
      const heard = onLogin;
      onLogin = undefined;
      req.resume();
      heard();
      return; // never answered: the copy holding the lock is killed while it waits
    }
    const up = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    holdNextLogin: () => new Promise((resolve) => { onLogin = resolve; }),
    close: () => { server.closeAllConnections(); return new Promise((resolve) => server.close(resolve)); }
  };
}

describe('reliability 14b: the copy holding the shared session\'s login lock is SIGKILLed; the other takes over after the lease', function () {
  this.timeout(180000);
  let work, redis, probe, emulator, relay, client, copies;

  before(async function () {
    if (!installed('redis-server')) {
      if (process.env.CI) throw new Error('redis-server is not installed (.ci/run installs it)');
      this.skip();
    }
    work = tempDir('dam-shared-kill-');
    redis = await startRedis(path.join(work, 'redis'), { durable: false });
    const Redis = require('ioredis');
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    emulator = await startEmulator({ port: 0, dataDir: path.join(work, 'emulator'), users: [ROBOT], oneSessionPerUser: true });
    relay = await startRelay(emulator.url);
    client = new AssetClient({ baseUrl: emulator.url, cookie: 'local-dev' });
    await client.registerSubscription(SUB_ID, { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' });
    copies = [await launchNodeRed(), await launchNodeRed()];
  });

  after(async function () {
    if (client) client.close();
    if (probe) probe.disconnect();
    for (const copy of copies || []) await copy.close().catch(() => undefined);
    if (relay) await relay.close();
    if (redis) await redis.stop();
    if (emulator) await emulator.close();
    rmDir(work);
  });

  /** POST /op -> asset-subscribe (read the subscription) -> 200; a failure -> 502 with the error. */
  function flow() {
    const next = ids('sk');
    const z = next();
    const store = { id: next(), type: 'asset-redis', name: 'shared', url: redis.url, prefix: 'nr:', timeout: 1000 };
    const server = {
      id: next(), type: 'asset-server', name: 'dam', baseUrl: relay.url, timeout: TIMEOUT_S, loginEnabled: true, loginPreset: 'utility',
      redis: store.id, credentials: { username: ROBOT.name, password: ROBOT.password }
    };
    const [input, read, ok, respond, catcher, failed] = Array.from({ length: 6 }, next);
    return [
      { id: z, type: 'tab', label: 'shared session kill' }, store, server,
      { id: input, type: 'http in', z, url: '/op', method: 'post', upload: false, wires: [[read]] },
      { id: read, type: 'asset-subscribe', z, server: server.id, action: 'get', subscriptionId: SUB_ID, subscriptionIdType: 'str', wires: [[ok]] },
      { id: ok, type: 'function', z, name: 'ok', outputs: 1, libs: [], func: 'msg.payload = { ok: true }; return msg;', wires: [[respond]] },
      { id: respond, type: 'http response', z, statusCode: '', headers: {}, wires: [] },
      { id: catcher, type: 'catch', z, scope: [read], uncaught: false, wires: [[failed]] },
      { id: failed, type: 'function', z, name: 'failed', outputs: 1, libs: [],
        func: 'msg.statusCode = 502; msg.payload = { error: msg.error && msg.error.message }; return msg;', wires: [[respond]] }
    ];
  }

  async function read(copy) {
    try {
      const res = await fetch(`${copy.url}/op`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
      return { status: res.status, text: await res.text() };
    } catch (err) {
      return { status: 0, text: err.message };
    }
  }

  it('A killed while it logs in: B waits for the lease, logs in once, 0 failed operations; A, started again, takes B\'s cookie', async function () {
    const [a, b] = copies;
    for (const copy of copies) await copy.deploy(flow());
    const lockKeys = () => probe.keys('nr:session:*:lock');
    const held = relay.holdNextLogin();
    const doomed = read(a); // dies with A
    await held; // A met a 401, took the lock and sent its login, which the relay holds
    (await lockKeys()).length.should.equal(1, 'A holds the login lock');
    const loginsBefore = emulator.sessionStats().logins;

    // B's reads, all needing a session: they meet a 401 and wait for A's lock.
    const results = [];
    let stop = false;
    let afterKill = 0;
    let killed = false;
    const workers = Array.from({ length: WORKERS }, async () => {
      while (!stop) {
        const res = await read(b);
        results.push(res);
        if (killed && res.status === 200) afterKill++;
      }
    });
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 1000))); // a random moment of A's login
    const killedAt = Date.now();
    await a.kill();
    killed = true;
    await doomed;
    await waitFor('B serving reads again after taking over', () => afterKill >= 10, 120000, 50);
    stop = true;
    await Promise.all(workers);
    const tookOverMs = Date.now() - killedAt;

    const failures = results.filter((r) => r.status !== 200);
    console.log(`      lease ${loginLeaseMs(TIMEOUT_S * 1000)} ms; B: ${results.length} reads, ${failures.length} failed; ` +
      `${emulator.sessionStats().logins - loginsBefore} login(s) after A's kill; B served again ${tookOverMs} ms after the kill`);
    failures.map((f) => `${f.status} ${f.text.slice(0, 200)}`).should.eql([], 'B\'s operations failed');
    (emulator.sessionStats().logins - loginsBefore).should.equal(1, 'B logged in once (A\'s login never reached the server)');
    (await lockKeys()).length.should.equal(0, 'the lock was let go after B published its cookie');

    // A again: it takes B's cookie from Redis (no login, B's session not ended).
    await a.start();
    const endedBefore = emulator.sessionStats().endedByLogin;
    const again = await read(a);
    again.status.should.equal(200, again.text);
    (emulator.sessionStats().logins - loginsBefore).should.equal(1, 'A took B\'s cookie instead of logging in');
    emulator.sessionStats().endedByLogin.should.equal(endedBefore);
    (await read(b)).status.should.equal(200);
    for (const copy of copies) copy.lines.filter((l) => /ses1-[0-9a-f]{32}|Robot-Pass/.test(l)).should.eql([]);
  });
});
