'use strict';
// The shared session (issue 26, part 2) with real parts: redis-server, the emulator in one
// session per user mode, and clients that each stand for a Node-RED copy (each its own Redis
// connection), sharing their session through RedisSessionStore. The node wiring (asset-server's
// Share session field) is in the second describe, through the test helper.
require('should');
const path = require('path');
const Redis = require('ioredis');
const helper = require('node-red-node-test-helper');
const { startEmulator } = require('../../dist/emulator');
const { AssetClient } = require('../../dist/api/client');
const { RedisSessionStore, sessionKey } = require('../../dist/nodes/asset-redis/session');
const { installed, startRedis } = require('../reliability/lib/servers');
const { tempDir, rmDir } = require('../reliability/lib/support');

const USER = { name: 'robot', password: 'Robot-Pass-5c1', permissions: ['events', 'add'] };
const SUB = 'shared-session-0001';
const login = { preset: 'utility', username: USER.name, password: USER.password };

describe('shared session through Redis (real redis-server, emulator with one session per user)', function () {
  this.timeout(60000);
  let work, redis, emulator;
  const connections = [];
  const clients = [];

  before(async function () {
    if (!installed('redis-server')) {
      if (process.env.CI) throw new Error('redis-server is not installed (.ci/run installs it)');
      this.skip();
    }
    work = tempDir('dam-shared-session-');
    redis = await startRedis(path.join(work, 'redis'), { durable: false });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const r of connections.splice(0)) r.disconnect();
    if (emulator) { await emulator.close(); emulator = undefined; }
  });
  after(async () => {
    if (redis) await redis.stop();
    rmDir(work);
  });

  async function startEmu(options = {}) {
    emulator = await startEmulator({ port: 0, dataDir: path.join(work, `emu-${Date.now()}`), users: [USER], oneSessionPerUser: true, ...options });
    return emulator;
  }

  /** A client as one copy has it: own Redis connection, own session holder. */
  function copy({ shared = true, prefix = 'ss:', problems = [] } = {}) {
    const options = { baseUrl: emulator.url, cookie: '', timeout: 5000, login };
    if (shared) {
      const connection = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, enableAutoPipelining: true });
      connection.on('error', () => undefined); // Redis stopped on purpose in one test
      connections.push(connection);
      options.sharedSession = { store: new RedisSessionStore(connection, sessionKey(prefix, emulator.url, USER.name), 2000), onProblem: (e) => problems.push(e) };
    }
    const c = new AssetClient(options);
    clients.push(c);
    return c;
  }

  /** Both copies read the subscription, `rounds` times, `parallel` at a time each: failures and the emulator's figures. */
  async function run(copies, rounds, parallel = 3) {
    await copies[0].registerSubscription(SUB, { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' });
    let failed = 0;
    const errors = [];
    for (let r = 0; r < rounds; r++) {
      await Promise.all(copies.flatMap((c) => Array.from({ length: parallel }, () => c.getSubscription(SUB).catch((err) => { failed++; errors.push(err.message); }))));
    }
    return { failed, errors, ...emulator.sessionStats() };
  }

  it('two copies: one login for both, the second copy takes the cookie from Redis without logging in', async function () {
    await startEmu();
    const [a, b] = [copy({ prefix: 'ss1:' }), copy({ prefix: 'ss1:' })];
    const result = await run([a, b], 5);
    result.failed.should.equal(0, result.errors.join('\n'));
    result.logins.should.equal(1);
    result.endedByLogin.should.equal(0);
    a.sessionCookie.should.equal(b.sessionCookie);
  });

  it('sessions expiring every second under load from both copies: no failed call, logins <= expiries + 2', async function () {
    // Not shorter: a session must outlive a login and the repeated request on a busy machine.
    await startEmu({ sessionMaxAge: 1 });
    const [a, b] = [copy({ prefix: 'ss2:' }), copy({ prefix: 'ss2:' })];
    const started = Date.now();
    let result;
    let rounds = 0;
    // Until several sessions have expired (a state, not a time); the loop's bound is only a guard.
    while (emulator.sessionStats().expired < 4 && Date.now() - started < 40000) { result = await run([a, b], 1); rounds++; if (result.failed) break; }
    result = { ...result, ...emulator.sessionStats() };
    console.log(`      shared: ${rounds} rounds, logins ${result.logins}, expired ${result.expired}, ended by a login ${result.endedByLogin}`);
    result.failed.should.equal(0, result.errors.join('\n'));
    result.expired.should.be.aboveOrEqual(4);
    result.logins.should.be.belowOrEqual(result.expired + 2);
  });

  it('without the shared session, two copies log each other out (the storm the shared session prevents)', async function () {
    await startEmu();
    const [a, b] = [copy({ shared: false }), copy({ shared: false })];
    const result = await run([a, b], 10);
    console.log(`      not shared: logins ${result.logins}, ended by a login ${result.endedByLogin}, failed calls ${result.failed} of 60`);
    result.endedByLogin.should.be.above(0);
    result.logins.should.be.above(2);
  });

  it('a copy whose 401 came with an older cookie takes the newer one from Redis; the lock lets one copy log in', async function () {
    await startEmu();
    const [a, b] = [copy({ prefix: 'ss3:' }), copy({ prefix: 'ss3:' })];
    await a.getSubscription(SUB).catch(() => undefined);
    await b.getSubscription(SUB).catch(() => undefined);
    emulator.sessionStats().logins.should.equal(1);
    const first = a.sessionCookie;
    // The session ends (as an expiry would): the first copy to meet the 401 logs in, the other takes its cookie.
    emulator.revokeSession(first.split('=')[1]);
    await Promise.all([a.getSubscription(SUB).catch(() => undefined), b.getSubscription(SUB).catch(() => undefined)]);
    emulator.sessionStats().logins.should.equal(2);
    a.sessionCookie.should.equal(b.sessionCookie);
    a.sessionCookie.should.not.equal(first);
    // Redis holds the cookie only, under a key free of the user name and password.
    const probe = new Redis(redis.url);
    connections.push(probe);
    const keys = await probe.keys('ss3:*');
    keys.should.eql([sessionKey('ss3:', emulator.url, USER.name)]);
    keys[0].should.not.containEql(USER.name);
    (await probe.get(keys[0])).should.equal(a.sessionCookie);
  });

  it('a copy that took the lock and died (lock left behind): the others wait for its lease, then one logs in', async function () {
    await startEmu();
    const a = copy({ prefix: 'ss5:' });
    const probe = new Redis(redis.url);
    connections.push(probe);
    const key = sessionKey('ss5:', emulator.url, USER.name);
    await probe.set(`${key}:lock`, 'token-of-a-dead-copy', 'PX', 400);
    await a.registerSubscription(SUB, { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' });
    emulator.sessionStats().logins.should.equal(1);
    (await probe.exists(`${key}:lock`)).should.equal(0, 'the lock freed after the login');
    (await probe.get(key)).should.equal(a.sessionCookie);
  });

  it('a cookie in Redis the server has ended (left overnight): a fresh copy takes it, meets 401, logs in once; no call fails', async function () {
    await startEmu();
    const probe = new Redis(redis.url);
    connections.push(probe);
    const key = sessionKey('ss6:', emulator.url, USER.name);
    await probe.set(key, 'JSESSIONID=ses1-ended-long-ago-0000000000000000');
    const [a, b] = [copy({ prefix: 'ss6:' }), copy({ prefix: 'ss6:' })];
    const fields = { callback: 'http://127.0.0.1:9/never', watchPath: '* /nowhere' };
    await a.registerSubscription(SUB, fields);
    await b.getSubscription(SUB);
    await a.upload({ file: { buffer: Buffer.from('x') }, name: 'x.txt', destination: '/ss6', wait: true });
    emulator.sessionStats().logins.should.equal(1);
    (await probe.get(key)).should.equal(a.sessionCookie);
    b.sessionCookie.should.equal(a.sessionCookie);
  });

  it('Redis down: each copy logs in by itself and says so (nothing fails for want of Redis)', async function () {
    await startEmu();
    const problems = [];
    const a = copy({ prefix: 'ss4:', problems });
    await redis.stop();
    try {
      const result = await run([a], 2);
      result.failed.should.equal(0, result.errors.join('\n'));
      result.logins.should.equal(1);
      problems.length.should.be.above(0);
      problems.map((e) => e.message).join('\n').should.not.containEql(USER.password);
    } finally {
      await redis.start();
    }
  });
});

describe('asset-server with Share session (test helper, real redis-server)', function () {
  this.timeout(30000);
  let work, redis, emulator;
  before(async function () {
    if (!installed('redis-server')) { if (process.env.CI) throw new Error('redis-server missing'); this.skip(); }
    work = tempDir('dam-shared-session-node-');
    redis = await startRedis(path.join(work, 'redis'), { durable: false });
    emulator = await startEmulator({ port: 0, dataDir: path.join(work, 'emu'), users: [USER], oneSessionPerUser: true });
    await helper.startServer();
  });
  afterEach(() => helper.unload());
  after(async () => {
    await helper.stopServer();
    if (emulator) await emulator.close();
    if (redis) await redis.stop();
    rmDir(work);
  });

  const serverNode = require('../../nodes/asset-server.js');
  const redisNode = require('../../nodes/asset-redis.js');

  function flow(extra = {}) {
    return [
      { id: 'r1', type: 'asset-redis', url: redis.url, prefix: 'node:' },
      { id: 's1', type: 'asset-server', baseUrl: emulator.url, loginEnabled: true, loginPreset: 'utility', redis: 'r1', ...extra }
    ];
  }
  const credentials = { s1: { username: USER.name, password: USER.password } };

  it('two asset-server nodes on one user (as two copies have): one login, one cookie in Redis', async function () {
    await helper.load([redisNode, serverNode], [...flow(), { id: 's2', type: 'asset-server', baseUrl: emulator.url, loginEnabled: true, loginPreset: 'utility', redis: 'r1' }],
      { ...credentials, s2: { username: USER.name, password: USER.password } });
    const before = emulator.sessionStats().logins;
    const [a, b] = [helper.getNode('s1').getClient(), helper.getNode('s2').getClient()];
    await a.getSubscription(SUB).catch(() => undefined);
    await b.getSubscription(SUB).catch(() => undefined);
    (emulator.sessionStats().logins - before).should.equal(1);
    a.sessionCookie.should.equal(b.sessionCookie);
  });

  it('Share session without automatic login: a configuration error naming the field', async function () {
    await helper.load([redisNode, serverNode], flow({ loginEnabled: false }), { s1: { cookie: 'x-cookie' } });
    const node = helper.getNode('s1');
    node.configError.message.should.match(/^Share session: a shared session needs automatic login/);
    node.configError.field.should.equal('redis');
  });
});
