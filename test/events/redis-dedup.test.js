'use strict';
// The Redis duplicate filter against a real redis-server (Debian's, started on a free port).
require('should');
const path = require('path');
const Redis = require('ioredis');
const { RedisDuplicateFilter, FilterUnavailableError, DuplicateFilter, memoryEntryFilter } = require('../../dist/events');
const { tempDir, rmDir } = require('../reliability/lib/support');
const { installed, startRedis } = require('../reliability/lib/servers');

describe('RedisDuplicateFilter (real redis-server)', function () {
  this.timeout(20000);
  let work, server, redis;
  const opened = [];
  /** redis-servers started by single tests, stopped after the suite (a stopped one is skipped). */
  const servers = [];

  function connect(url = server.url) {
    const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(n * 50, 500) });
    client.on('error', () => undefined);
    opened.push(client);
    return client;
  }
  const ready = (client) => new Promise((resolve) => (client.status === 'ready' ? resolve() : client.once('ready', resolve)));

  before(async function () {
    if (!installed('redis-server')) { if (process.env.CI) throw new Error('redis-server is not installed'); this.skip(); }
    work = tempDir('dam-redis-dedup-');
    server = await startRedis(path.join(work, 'redis'));
    redis = connect();
    await ready(redis);
  });
  after(async function () {
    for (const c of opened) c.disconnect();
    for (const own of servers) { own.resume(); await own.stop(); }
    if (server) await server.stop();
    rmDir(work);
  });
  beforeEach(() => redis.flushall());

  const filter = (extra = {}) => new RedisDuplicateFilter(redis, { prefix: 'test:n1:', windowMs: 60000, leaseMs: 5000, timeoutMs: 1000, ...extra });

  /** The batch markers under a prefix, with their values. */
  async function markers(prefix = 'test:n1:') {
    const keys = await redis.keys(`${prefix}b:*`);
    return Promise.all(keys.map(async (key) => ({ key, value: await redis.get(key), ttl: await redis.pttl(key) })));
  }

  it('new, then duplicate once confirmed; the entry key expires after the window', async function () {
    const f = filter({ windowMs: 300, leaseMs: 200 });
    const first = await f.claim(['a', 'b']);
    first.verdicts.should.eql(['new', 'new']);
    (await markers()).should.match([{ value: 'c', ttl: (t) => t > 0 && t <= 200 }]);
    await first.confirm();
    (await markers()).should.match([{ value: 'd', ttl: (t) => t > 0 && t <= 300 }], 'confirmed: the batch is remembered for the window');
    (await f.claim(['a', 'b', 'c'])).verdicts.should.eql(['duplicate', 'duplicate', 'new']);
    const ttl = await redis.pttl(f.redisKey('a'));
    ttl.should.be.within(1, 300);
    // After the window the key is gone: accepted again.
    await new Promise((resolve) => setTimeout(resolve, ttl + 50));
    (await f.claim(['a'])).verdicts.should.eql(['new']);
  });

  it('a claim not yet confirmed is busy for another copy, and free again after the lease', async function () {
    const copyA = filter({ leaseMs: 300 });
    const copyB = new RedisDuplicateFilter(connect(), { prefix: 'test:n1:', windowMs: 60000, leaseMs: 300, timeoutMs: 1000 });
    (await copyA.claim(['x'])).verdicts.should.eql(['new']);
    (await copyB.claim(['x'])).verdicts.should.eql(['busy']);
    const [{ ttl }] = await markers();
    ttl.should.be.within(1, 300);
    await new Promise((resolve) => setTimeout(resolve, ttl + 50));
    const byB = await copyB.claim(['x']);
    byB.verdicts.should.eql(['new'], 'copy A died without confirming: after the lease, B emits it');
    await byB.confirm();
    (await copyA.claim(['x'])).verdicts.should.eql(['duplicate']);
  });

  it('undo (closed before the flow got them): another copy emits the entries at once, without waiting for the lease', async function () {
    const copyA = filter({ leaseMs: 60000 });
    const copyB = new RedisDuplicateFilter(connect(), { prefix: 'test:n1:', windowMs: 60000, leaseMs: 60000, timeoutMs: 1000 });
    const claim = await copyA.claim(['u', 'v']);
    await claim.undo();
    (await markers()).should.eql([]);
    const byB = await copyB.claim(['u', 'v', 'w']);
    byB.verdicts.should.eql(['new', 'new', 'new']);
    await byB.confirm();
    (await copyA.claim(['u', 'v', 'w'])).verdicts.should.eql(['duplicate', 'duplicate', 'duplicate']);
  });

  it('a lease longer than the window: once the window has passed the entry is new again, though its key lives on', async function () {
    const f = filter({ windowMs: 150, leaseMs: 60000 });
    const first = await f.claim(['w']);
    await first.confirm();
    (await f.claim(['w'])).verdicts.should.eql(['duplicate']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    (await redis.pttl(f.redisKey('w'))).should.be.above(50000, 'the entry key lives for the lease');
    (await f.claim(['w'])).verdicts.should.eql(['new'], 'the window passed: emitted again');
  });

  it('a batch of only duplicates leaves no marker behind', async function () {
    const f = filter();
    const first = await f.claim(['a']);
    await first.confirm();
    (await markers()).length.should.equal(1);
    (await f.claim(['a'])).verdicts.should.eql(['duplicate']);
    (await markers()).length.should.equal(1);
  });

  it('the same entry twice in one callback: the second is a duplicate, as in memory', async function () {
    (await filter().claim(['k', 'k', 'j'])).verdicts.should.eql(['new', 'duplicate', 'new']);
    (await memoryEntryFilter(new DuplicateFilter({ windowMs: 60000, maxKeys: 10 })).claim(['k', 'k', 'j'])).verdicts.should.eql(['new', 'duplicate', 'new']);
  });

  it('keys of different nodes (prefixes) do not collide; entry keys are prefix + a fixed-size hash', async function () {
    const one = filter();
    const two = filter({ prefix: 'test:n2:' });
    (await one.claim(['same'])).verdicts.should.eql(['new']);
    (await two.claim(['same'])).verdicts.should.eql(['new']);
    const long = one.redisKey('a'.repeat(5000));
    long.length.should.equal('test:n1:'.length + 20);
    long.subarray(0, 8).toString().should.equal('test:n1:');
    (await redis.keys('test:n1:*')).length.should.equal(2, 'one entry key and its batch marker');
    (await redis.keys('test:n2:*')).length.should.equal(2);
  });

  it('1000 entries: one command and one write per step (a script over all the keys)', async function () {
    const f = filter();
    const keys = Array.from({ length: 1000 }, (_, i) => `entry-${i}`);
    // Scripts sent (the GETs and SETs inside a script count as commands too, so those are not counted).
    const stats = async () => {
      const text = await redis.info('commandstats');
      return ['evalsha', 'eval'].reduce((n, c) => n + Number((new RegExp(`cmdstat_${c}:calls=(\\d+)`).exec(text) || [0, 0])[1]), 0);
    };
        const before = await stats();
    const writes = [];
    const stream = redis.stream;
    const write = stream.write;
    stream.write = function (...args) { writes.push(args[0]); return write.apply(this, args); };
    try {
      const claim = await f.claim(keys);
      claim.verdicts.every((v) => v === 'new').should.be.true();
      writes.length.should.equal(1, 'the claim of 1000 entries goes out in one write');
      await claim.confirm();
      writes.length.should.equal(2, 'and so does their confirmation');
      writes[1].length.should.be.below(400, 'the confirmation names the batch, not its 1000 keys');
    } finally {
      stream.write = write;
    }
    const after = await stats();
    (after - before).should.equal(2, 'two scripts: claim and confirm');
    (await f.claim(keys)).verdicts.every((v) => v === 'duplicate').should.be.true();
  });

  it('the claim script without SET NX GET (Redis before 7.0): the same answers', async function () {
    const { SCRIPTS } = require('../../dist/events/redis-dedup');
    const old = SCRIPTS.claim.replace('(redis.REDIS_VERSION_NUM or 0)', '0');
    old.should.not.equal(SCRIPTS.claim);
    const crypto = require('crypto');
    const d = (k) => crypto.createHash('sha1').update(k).digest();
    const key = (k) => Buffer.concat([Buffer.from('old:'), d(k)]);
    await redis.set(key('done'), 'emitted-batch');
    await redis.set('old:b:emitted-batch', 'd');
    await redis.set(key('other'), 'pending-batch');
    await redis.set('old:b:pending-batch', 'c');
    await redis.set(key('abandoned'), 'dead-batch');
    const codes = await redis.eval(old, 1, 'old:', Buffer.concat([d('new'), d('done'), d('other'), d('abandoned')]), 'mine', '5000', '60000');
    codes.should.equal('0120');
    (await redis.get(key('new'))).should.equal('mine');
    (await redis.get(key('abandoned'))).should.equal('mine', 'taken over');
    (await redis.pttl(key('new'))).should.be.within(50000, 60000);
    (await redis.get('old:b:mine')).should.equal('c');
    (await redis.pttl('old:b:mine')).should.be.within(1, 5000);
    (await redis.eval(old, 1, 'old:', d('new'), 'yours', '5000', '60000')).should.equal('2');
  });

  it('claimGroups: one script, a marker per group; a confirmation renews the later groups\' leases; a lapsed group is refused; an entry twice is a duplicate in any group', async function () {
    const { ClaimLapsedError } = require('../../dist/events');
    const { waitFor } = require('../reliability/lib/support');
    const f = filter({ leaseMs: 60000 });
    const scripts = async () => Number((/cmdstat_eval:calls=(\d+)/.exec(await redis.info('commandstats')) || [0, 0])[1]);
    const before = await scripts();
    const claims = await f.claimGroups([['a', 'b'], ['c', 'a'], [], ['d']]);
    (await scripts() - before).should.equal(1, 'one claim script for all groups');
    claims.map((c) => c.verdicts).should.eql([['new', 'new'], ['new', 'duplicate'], [], ['new']]);
    // Batch ids end in a counter: the markers in group order (the empty group has none).
    const keys = (await redis.keys('test:n1:b:*')).sort((x, y) => parseInt(x.split('.').pop(), 36) - parseInt(y.split('.').pop(), 36));
    (await Promise.all(keys.map((k) => redis.get(k)))).should.eql(['c', 'c', 'c']);
    await waitFor('the last group\'s lease running down', async () => await redis.pttl(keys[2]) < 59900, 20000, 20);
    await claims[0].confirm();
    (await redis.get(keys[0])).should.equal('d');
    (await redis.pttl(keys[2])).should.be.above(59900, 'renewed by the first group\'s confirmation');
    const copyB = new RedisDuplicateFilter(connect(), { prefix: 'test:n1:', windowMs: 60000, leaseMs: 60000, timeoutMs: 1000 });
    (await copyB.claim(['a', 'c', 'd'])).verdicts.should.eql(['duplicate', 'busy', 'busy']);

    const g = new RedisDuplicateFilter(redis, { prefix: 'test:n2:', windowMs: 60000, leaseMs: 300, timeoutMs: 1000 });
    const lapsing = await g.claimGroups([['x'], ['y']]);
    await waitFor('the claims lapsed', async () => (await redis.keys('test:n2:b:*')).length === 0, 20000, 20);
    await lapsing[1].confirm().should.be.rejectedWith(ClaimLapsedError, { message: /lapsed/ });
    const copyC = new RedisDuplicateFilter(connect(), { prefix: 'test:n2:', windowMs: 60000, leaseMs: 300, timeoutMs: 1000 });
    (await copyC.claim(['y'])).verdicts.should.eql(['new'], 'a lapsed group is free for another copy');
  });

  it('claimGroups with the claim script of Redis before 7.0: the same verdicts and markers', async function () {
    const { SCRIPTS } = require('../../dist/events/redis-dedup');
    const crypto = require('crypto');
    const d = (k) => crypto.createHash('sha1').update(k).digest();
    const old = SCRIPTS.claim.replace('(redis.REDIS_VERSION_NUM or 0)', '0');
    await redis.set(Buffer.concat([Buffer.from('g:'), d('done')]), 'emitted-batch');
    await redis.set('g:b:emitted-batch', 'd');
    const codes = await redis.eval(old, 1, 'g:', Buffer.concat([d('x'), d('done'), d('y'), d('z')]), 'one two three', '5000', '60000', '2,2,4');
    codes.should.equal('0100');
    (await redis.get(Buffer.concat([Buffer.from('g:'), d('x')]))).should.equal('one');
    (await redis.get(Buffer.concat([Buffer.from('g:'), d('y')]))).should.equal('three', 'the empty second group is skipped');
    (await redis.get('g:b:one')).should.equal('c');
    (await redis.exists('g:b:two')).should.equal(0, 'a group that claimed nothing has no marker');
    (await redis.get('g:b:three')).should.equal('c');
  });

  it('a claim that timed out is let go: when it lands late, the retry on another copy is not kept waiting for the lease', async function () {
    const own = await startRedis(path.join(work, 'late'), { durable: false });
    servers.push(own);
    const client = connect(own.url);
    await ready(client);
    try {
      const copyA = new RedisDuplicateFilter(client, { prefix: 'p:', windowMs: 60000, leaseMs: 60000, timeoutMs: 200 });
      own.pause();
      await copyA.claim(['late']).should.be.rejectedWith(FilterUnavailableError, { message: /within 200 ms/ });
      own.resume();
      await client.ping(); // answered after the claim and what was sent behind it on this connection
      const copyB = new RedisDuplicateFilter(connect(own.url), { prefix: 'p:', windowMs: 60000, leaseMs: 60000, timeoutMs: 1000 });
      (await copyB.claim(['late'])).verdicts.should.eql(['new']);
    } finally {
      own.resume();
    }
  });

  it('window 0: every entry is new, Redis is not asked', async function () {
    const asked = () => { throw new Error('asked'); };
    const dead = new RedisDuplicateFilter({ eval: asked }, { prefix: 'p:', windowMs: 0, leaseMs: 1000, timeoutMs: 100 });
    (await dead.claim(['a', 'a'])).verdicts.should.eql(['new', 'new']);
  });

  it('Redis stopped (SIGSTOP, no answer) or down: rejects within the timeout; a claim survives a restart (append-only file)', async function () {
    const own = await startRedis(path.join(work, 'own'));
    servers.push(own);
    const client = connect(own.url);
    await ready(client);
    // A lease far longer than the restart below may take on a busy machine: the claim must still hold after it.
    const f = new RedisDuplicateFilter(client, { prefix: 'p:', windowMs: 60000, leaseMs: 60000, timeoutMs: 300 });
    (await f.claim(['a'])).verdicts.should.eql(['new']);
    own.pause();
    let started = Date.now();
    await f.claim(['b']).should.be.rejectedWith(FilterUnavailableError, { message: /within 300 ms/ });
    // Bounds far below mocha's timeout: they show no hang, not a speed (the machine may be busy).
    (Date.now() - started).should.be.below(5000);
    own.resume();
    await own.stop();
    await new Promise((resolve) => (client.status === 'ready' ? client.once('close', resolve) : resolve()));
    started = Date.now();
    await f.claim(['c']).should.be.rejectedWith(FilterUnavailableError);
    (Date.now() - started).should.be.below(5000);
    await own.start();
    await ready(client);
    (await f.claim(['a', 'c'])).verdicts.should.eql(['busy', 'new'], 'the append-only file kept the claim of a across the restart');
  });
});
