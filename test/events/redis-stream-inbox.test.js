'use strict';
// The Redis Streams inbox against a real redis-server (Debian's, started on a free port): two
// inboxes with connections of their own stand for two Node-RED copies sharing one stream.
require('should');
const path = require('path');
const Redis = require('ioredis');
const { RedisStreamInbox, InboxFullError, StreamUnavailableError } = require('../../dist/events/inbox');
const { tempDir, rmDir } = require('../reliability/lib/support');
const { installed, startRedis } = require('../reliability/lib/servers');

describe('events: at-least-once inbox on a Redis Stream (real redis-server)', function () {
  this.timeout(30000);
  let work, server, admin;
  const clients = [];
  const inboxes = [];
  const PREFIX = 'dam:{n1}:in:';

  function connect(url = server.url) {
    const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(n * 50, 500) });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  }
  const ready = (client) => new Promise((resolve) => (client.status === 'ready' ? resolve() : client.once('ready', resolve)));
  /** One copy's inbox, on a connection of its own. */
  async function copy(extra = {}, url) {
    const client = connect(url);
    await ready(client);
    const inbox = new RedisStreamInbox(client, {
      prefix: PREFIX, windowMs: 60000, timeoutMs: 2000, pollMs: 20, maxEntries: 100, maxInFlight: 10,
      visibilityTimeoutMs: 60000, maxDeliveries: 3, backoffMs: 0, ...extra
    });
    await inbox.ensureGroup();
    inboxes.push(inbox);
    return inbox;
  }
  const entry = (assetId, rrn, extra = {}) => ({
    key: `asset:${assetId}`, entry: { assetId, rrn, action: 'modified', ...extra }, revision: rrn,
    receivedAt: '2026-01-01T00:00:00.000Z', subscriptionId: 'sub-stream-test'
  });
  const names = (taken) => taken.deliveries.map((d) => `${d.entry.assetId}/${d.entry.rrn}`);
  /** Takes until `test` holds for what was taken in one call (the other copy's poll may come first). */
  async function takeUntil(inbox, test, what) {
    const deadline = Date.now() + 20000;
    for (;;) {
      const taken = await inbox.take(10);
      if (test(taken)) return taken;
      if (Date.now() > deadline) throw new Error(`not seen: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  before(async function () {
    if (!installed('redis-server')) { if (process.env.CI) throw new Error('redis-server is not installed'); this.skip(); }
    work = tempDir('dam-redis-stream-');
    server = await startRedis(path.join(work, 'redis'));
    admin = connect();
    await ready(admin);
  });
  after(async function () {
    for (const c of clients) c.disconnect();
    if (server) await server.stop();
    rmDir(work);
  });
  beforeEach(() => admin.flushall());
  afterEach(async () => { for (const inbox of inboxes.splice(0)) await inbox.close(); });

  it('stores, hands out with the entry and its subscription, and an acknowledged entry leaves the stream', async function () {
    const a = await copy();
    (await a.store([entry(1, 10), entry(2, 20)])).should.equal(0);
    (await admin.xlen(`${PREFIX}s`)).should.equal(2);
    const taken = await a.take(10);
    names(taken).should.eql(['1/10', '2/20']);
    taken.deliveries[0].should.match({ key: 'asset:1', delivery: 1, subscriptionId: 'sub-stream-test', receivedAt: '2026-01-01T00:00:00.000Z' });
    for (const d of taken.deliveries) (await a.acknowledge(d.id, d.delivery)).should.be.true();
    (await admin.xlen(`${PREFIX}s`)).should.equal(0, 'acknowledged entries are deleted from the stream');
    (await admin.xpending(`${PREFIX}s`, 'g'))[0].should.equal(0);
    (await a.acknowledge(taken.deliveries[0].id, 1)).should.be.false('an acknowledged entry is unknown');
  });

  it('leaves out a repeat within the duplicate window and a revision older than one stored (also acknowledged)', async function () {
    const a = await copy();
    (await a.store([entry(1, 10), entry(1, 10)])).should.equal(1, 'the same entry twice in one callback');
    (await a.store([entry(1, 10)])).should.equal(1, 'the server sending it again');
    const taken = await a.take(10);
    await a.acknowledge(taken.deliveries[0].id, 1);
    (await a.store([entry(1, 12)])).should.equal(0);
    (await a.store([entry(1, 11)])).should.equal(1, 'older than 12, stored before');
    names(await a.take(10)).should.eql(['1/12']);
  });

  it("an asset's newest revision is forgotten once the revision horizon has passed since its last store, not before", async function () {
    const a = await copy({ revisionHorizonMs: 300 });
    await a.store([entry(1, 12)]);
    const ttl = await admin.pttl(`${PREFIX}v:asset:1`);
    ttl.should.be.above(0).and.belowOrEqual(300);
    (await a.store([entry(1, 11)])).should.equal(1, 'older than 12, within the horizon');
    await a.store([entry(1, 13)]);
    (await admin.pttl(`${PREFIX}v:asset:1`)).should.be.above(0, 'a newer store restarts the horizon');
    const deadline = Date.now() + 20000;
    while (await admin.exists(`${PREFIX}v:asset:1`)) {
      if (Date.now() > deadline) throw new Error('the newest revision was never forgotten');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    (await a.store([entry(1, 5)])).should.equal(0, 'past the horizon no re-send can come: a new entry');
    (await admin.exists(`${PREFIX}v`)).should.equal(0, 'no hash that grows with every asset');
  });

  it('acknowledgements of one turn go in one script (more than one slice of 500 ids): each counts once, a repeat or another delivery does not', async function () {
    const a = await copy({ maxEntries: 2000, maxInFlight: 1200 });
    const many = [];
    for (let i = 1; i <= 1200; i++) many.push(entry(i, 1));
    many.push(entry(1, 2)); // asset 1 twice: its second waits for the first's acknowledgement
    await a.store(many);
    const taken = await a.take(1200);
    taken.deliveries.length.should.equal(1200);
    (await admin.hlen(`${PREFIX}n`)).should.equal(1200, 'a count per first delivery');
    const first = taken.deliveries[0];
    const acks = taken.deliveries.map((d) => a.acknowledge(d.id, d.delivery));
    acks.push(a.acknowledge(first.id, first.delivery), a.acknowledge(taken.deliveries[1].id, 2));
    const results = await Promise.all(acks);
    results.slice(0, 1200).every((ok) => ok === true).should.be.true();
    results.slice(1200).should.eql([false, false], 'the same acknowledgement twice, and a delivery that never was');
    (await admin.xlen(`${PREFIX}s`)).should.equal(1, 'only the second entry of asset 1 is left');
    (await admin.xpending(`${PREFIX}s`, 'g'))[0].should.equal(0);
    (await admin.hlen(`${PREFIX}n`)).should.equal(0);
    names(await a.take(10)).should.eql(['1/2'], 'the line of asset 1 moved on by one');
  });

  // The store script has two ways: one pass that writes as it checks (below the bound) and, when
  // full, a checking pass that writes nothing: a callback of repeats and older revisions only is
  // answered, any new entry refuses it. Both must leave out the same entries.
  it('repeats and older revisions within one callback, below the bound: one pass', async function () {
    const a = await copy({ maxEntries: 100 });
    (await a.store([entry(1, 12), entry(1, 11), entry(2, 5), entry(2, 5), entry(1, 13)])).should.equal(2, 'asset 1 rev 11 and the second 2/5');
    (await admin.get(`${PREFIX}v:asset:1`)).should.equal('13');
    (await a.store([entry(1, 12, { path: '/other' }), entry(2, 5)])).should.equal(2, 'older than 13 (not a repeat: another path), and a repeat');
    (await admin.get(`${PREFIX}v:asset:1`)).should.equal('13', 'the newest revision put back');
    (await admin.pttl(`${PREFIX}v:asset:1`)).should.be.above(0);
    (await a.store([entry(1, 13, { path: '/other' }), entry(2, 5)])).should.equal(1, 'the same revision, another entry: stored');
    const taken = await a.take(10);
    names(taken).should.eql(['1/12', '2/5']);
    (await admin.xlen(`${PREFIX}s`)).should.equal(4);
    (await admin.lrange(`${PREFIX}l:asset:1`, 0, -1)).length.should.equal(3);
  });

  it('repeats and older revisions within one callback, full: the checking pass answers them and writes nothing', async function () {
    const a = await copy({ maxEntries: 3 });
    (await a.store([entry(1, 12), entry(2, 5), entry(1, 13)])).should.equal(0);
    (await a.store([entry(1, 12, { path: '/other' }), entry(2, 5), entry(1, 11)])).should.equal(3, 'older than 13 twice, and a repeat');
    (await admin.get(`${PREFIX}v:asset:1`)).should.equal('13');
    await a.store([entry(1, 12, { path: '/other' }), entry(1, 14)]).should.be.rejectedWith(InboxFullError);
    (await admin.get(`${PREFIX}v:asset:1`)).should.equal('13', 'nothing written by a refused callback');
    (await admin.xlen(`${PREFIX}s`)).should.equal(3);
  });

  // An rrn beyond 2^53 comes as the nearest number (asset-event-in's inboxEntry); one below -1 is
  // odd but a revision all the same: the first of an asset is new either way (the checking pass
  // took "none stored" for -1, and left out a first revision below it).
  it('revisions beyond 2^53 and below -1, below the bound: one pass', async function () {
    const a = await copy({ maxEntries: 100 });
    (await a.store([entry(3, -5), entry(4, Number('9007199254741001')), entry(4, Number('9007199254741001'))])).should.equal(1, 'the repeat');
    (await a.store([entry(3, -7), entry(4, Number('9007199254740993'))])).should.equal(2, 'both older');
    names(await a.take(10)).should.eql(['3/-5', '4/9007199254741000']);
  });

  it('revisions beyond 2^53 and below -1, full: a first revision below -1 is new (refused), older ones are answered', async function () {
    const a = await copy({ maxEntries: 2 });
    (await a.store([entry(3, -5), entry(4, Number('9007199254741001'))])).should.equal(0);
    (await a.store([entry(3, -7), entry(4, Number('9007199254740993'))])).should.equal(2, 'both older');
    await a.store([entry(9, -5)]).should.be.rejectedWith(InboxFullError); // the first of asset 9: new, not "older than none"
  });

  it('full: refuses the whole callback, writes nothing, and takes it once there is room', async function () {
    const a = await copy({ maxEntries: 3 });
    await a.store([entry(1, 1), entry(2, 1), entry(5, 1)]);
    await a.store([entry(3, 1), entry(4, 1)]).should.be.rejectedWith(InboxFullError);
    (await admin.xlen(`${PREFIX}s`)).should.equal(3, 'none of the refused callback was written');
    (await admin.exists(`${PREFIX}l:asset:3`)).should.equal(0);
    (await a.store([entry(1, 1)])).should.equal(1, 'a callback of nothing new is answered when full');
    const taken = await a.take(10);
    await a.acknowledge(taken.deliveries[0].id, 1);
    (await a.store([entry(3, 1), entry(4, 1)])).should.equal(0, 'not a duplicate: the refused one was not remembered');
  });

  it('Inbox size: a callback of more entries than one slice of a script command (600) counts every entry\'s bytes', async function () {
    const a = await copy({ maxEntries: 10000, maxBytes: 1e9 });
    const entries = Array.from({ length: 600 }, (_, i) => entry(i + 1, 1));
    (await a.store(entries)).should.equal(0);
    const sizes = await admin.hvals(`${PREFIX}z`);
    sizes.length.should.equal(600);
    Number(await admin.get(`${PREFIX}b`)).should.equal(sizes.reduce((sum, z) => sum + Number(z), 0));
  });

  it('Inbox size: a callback whose data would pass the byte bound is refused (nothing written, repeats still answered); acknowledging, discarding and draining make room; an empty inbox takes any size', async function () {
    // Before: bounded by entries only; Redis grew until maxmemory, where the take script's HSET fails (OOM) and nothing leaves.
    const blob = (assetId, rrn, size) => entry(assetId, rrn, { blob: 'x'.repeat(size) });
    const a = await copy({ maxBytes: 25000, maxDeliveries: 1 });
    await a.store([blob(1, 1, 10000)]);
    await a.store([blob(2, 1, 10000)]);
    const bytes = Number(await admin.get(`${PREFIX}b`));
    bytes.should.be.within(20000, 20600);
    const err = await a.store([blob(3, 1, 10000)]).then(() => undefined, (e) => e);
    err.should.be.instanceOf(InboxFullError);
    err.unit.should.equal('bytes');
    (await admin.xlen(`${PREFIX}s`)).should.equal(2, 'none of the refused callback was written');
    Number(await admin.get(`${PREFIX}b`)).should.equal(bytes);
    (await a.store([blob(1, 1, 10000)])).should.equal(1, 'a callback of nothing new is answered when full');
    await a.store([blob(4, 1, 10)]); // fits
    const taken = await a.take(10);
    const byAsset = (id) => taken.deliveries.find((d) => d.entry.assetId === id);
    (await a.acknowledge(byAsset(1).id, 1)).should.be.true();
    Number(await admin.get(`${PREFIX}b`)).should.be.below(bytes);
    await a.store([blob(3, 1, 10000)]); // room again
    await a.store([blob(5, 1, 10000)]).should.be.rejectedWith(InboxFullError);
    // Parked (its last delivery rejected): still counted; delivered again: still; discarded: gone.
    const parked = await a.reject(byAsset(2).id, 1, 'no');
    await a.store([blob(5, 1, 10000)]).should.be.rejectedWith(InboxFullError);
    const again = await a.deliverAgain(parked.id);
    again.should.be.true();
    await a.store([blob(5, 1, 10000)]).should.be.rejectedWith(InboxFullError);
    const t2 = await takeUntil(a, (x) => x.deliveries.some((d) => d.entry.assetId === 2), 'asset 2 again');
    const p2 = await a.reject(t2.deliveries.find((d) => d.entry.assetId === 2).id, 1, 'no');
    (await a.discard(p2.id)).should.be.true();
    await a.store([blob(5, 1, 10000)]);
    // Everything leaves (a drain, as for a node switched back to at most once): the count goes with the keys.
    for (let start = '-'; ;) {
      const batch = await a.drain(start, 100);
      await a.drained(batch.entries);
      if (batch.next === '-') break;
      start = batch.next;
    }
    (await admin.exists(`${PREFIX}b`, `${PREFIX}z`)).should.equal(0);
    const empty = await copy({ maxBytes: 1000 });
    await empty.store([blob(6, 1, 5000)]);
    await empty.store([blob(7, 1, 10)]).should.be.rejectedWith(InboxFullError);
  });

  it('below its bound takes a whole callback of more entries than the bound (a bulk ingest is never refused for ever)', async function () {
    // Before: refused unless all of it fitted; a callback larger than the bound got 503 at every retry.
    const a = await copy({ maxEntries: 3 });
    (await a.store([1, 2, 3, 4, 5].map((id) => entry(id, 1)))).should.equal(0);
    (await admin.xlen(`${PREFIX}s`)).should.equal(5);
    await a.store([entry(6, 1)]).should.be.rejectedWith(InboxFullError);
  });

  it('two copies: an asset is in flight on one copy at a time and its entries leave in order; other assets go on the other copy', async function () {
    const a = await copy();
    const b = await copy();
    await a.store([entry(1, 1)]);
    const first = await a.take(10);
    names(first).should.eql(['1/1']);
    await b.store([entry(1, 2), entry(2, 1), entry(1, 3)]);
    const second = await takeUntil(b, (t) => t.deliveries.length > 0, 'asset 2 on copy b');
    names(second).should.eql(['2/1'], 'asset 1 waits while copy a holds its entry');
    names(await a.take(10)).should.eql([], 'nor does copy a start the next of asset 1 before it acknowledged');
    await a.acknowledge(first.deliveries[0].id, 1);
    const next = await takeUntil(b, (t) => t.deliveries.length > 0, 'asset 1 rev 2 on copy b');
    names(next).should.eql(['1/2']);
    names(await a.take(10)).should.eql([]);
    await b.acknowledge(next.deliveries[0].id, 1);
    names(await takeUntil(b, (t) => t.deliveries.length > 0, 'asset 1 rev 3')).should.eql(['1/3']);
  });

  it('a copy that does not acknowledge within the visibility timeout: another copy claims the entry, delivered again; the late acknowledgement does not count', async function () {
    const a = await copy({ visibilityTimeoutMs: 300 });
    const b = await copy({ visibilityTimeoutMs: 300 });
    await a.store([entry(1, 1), entry(1, 2)]);
    const held = await a.take(10);
    names(held).should.eql(['1/1']);
    // Copy a stops here (killed): copy b gets it once the timeout passed, with the count.
    const again = await takeUntil(b, (t) => t.deliveries.length > 0, 'the timed-out entry on copy b');
    again.deliveries.map((d) => [d.entry.rrn, d.delivery]).should.eql([[1, 2]]);
    (await a.acknowledge(held.deliveries[0].id, 1)).should.be.false('in flight with another delivery');
    (await b.acknowledge(again.deliveries[0].id, 2)).should.be.true();
    names(await takeUntil(b, (t) => t.deliveries.length > 0, 'rev 2 after the redelivered rev 1')).should.eql(['1/2']);
  });

  it('a copy that stalls past the timeout: the other copy claims what it started and what it held; the stalled copy then hands out neither', async function () {
    const a = await copy({ visibilityTimeoutMs: 300 });
    const b = await copy({ visibilityTimeoutMs: 300 });
    await a.store([entry(1, 1), entry(1, 2)]);
    const first = await a.take(10);
    names(first).should.eql(['1/1'], 'rev 2 is read and held by copy a');
    // Copy a does nothing for longer than the timeout (a blocked event loop); copy b claims both.
    const claimed = await takeUntil(b, (t) => t.deliveries.length > 0, 'rev 1 on copy b');
    claimed.deliveries.map((d) => [d.entry.rrn, d.delivery]).should.eql([[1, 2]]);
    names(await a.take(10)).should.eql([], 'copy a checks what it held: claimed by b, not handed out');
    (await a.acknowledge(first.deliveries[0].id, 1)).should.be.false('delivered again since');
    (await b.acknowledge(claimed.deliveries[0].id, 2)).should.be.true();
    names(await takeUntil(b, (t) => t.deliveries.length > 0, 'rev 2 on copy b')).should.eql(['1/2']);
    names(await a.take(10)).should.eql([]);
  });

  it('a late acknowledgement counts while the entry has not started again', async function () {
    const a = await copy({ visibilityTimeoutMs: 200, pollMs: 60000 });
    await a.store([entry(3, 1)]);
    const t = await a.take(10);
    // Timed out (idle past the timeout in Redis), but nobody claimed it yet.
    for (;;) {
      const [[, , idle]] = await admin.xpending(`${PREFIX}s`, 'g', '-', '+', 1);
      if (idle > 200) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    (await a.acknowledge(t.deliveries[0].id, 1)).should.be.true();
    (await admin.xlen(`${PREFIX}s`)).should.equal(0);
  });

  it('a copy that held entries it had not started lets them go on close: the other copy takes them at once', async function () {
    const a = await copy({ maxInFlight: 1 });
    const b = await copy({ maxInFlight: 10 });
    await a.store([entry(1, 1), entry(2, 1), entry(3, 1)]);
    names(await a.take(10)).should.eql(['1/1'], 'room for one; the others are read and held');
    await a.close();
    const got = await takeUntil(b, (t) => t.deliveries.length === 3, 'all three on copy b, long before the 60 s timeout');
    names(got).should.eql(['1/1', '2/1', '3/1']);
    got.deliveries[0].delivery.should.equal(2);
  });

  it('parks after the last rejection; every copy lists it; deliver again and discard', async function () {
    const a = await copy({ maxDeliveries: 2 });
    const b = await copy({ maxDeliveries: 2 });
    await a.store([entry(1, 1), entry(1, 2), entry(5, 1)]);
    let t = await a.take(10);
    names(t).should.eql(['1/1', '5/1']);
    (await a.reject(t.deliveries[0].id, 1, 'disk full')).should.equal('again');
    t = await takeUntil(a, (x) => x.deliveries.length > 0, 'the rejected entry again');
    t.deliveries.map((d) => [d.entry.rrn, d.delivery]).should.eql([[1, 2]]);
    const parked = await a.reject(t.deliveries[0].id, 2, 'disk full');
    parked.should.match({ key: 'asset:1', deliveries: 2, reason: 'disk full', entry: { assetId: 1, rrn: 1 } });
    (await b.parked()).map((p) => p.entry.rrn).should.eql([1], 'listed by the other copy');
    // Copy a read the next entry of asset 1 with the first take: it holds it and hands it out now.
    names(await takeUntil(a, (x) => x.deliveries.length > 0, 'the next entry of the parked asset')).should.eql(['1/2']);
    (await b.deliverAgain(parked.id)).should.be.true();
    (await b.parked()).should.eql([]);
    (await b.discard(parked.id)).should.be.false('not parked any more');
  });

  it('a rejection because the server was away does not count: never parked, delivered again at once with the same count', async function () {
    const a = await copy({ maxDeliveries: 2 });
    const b = await copy({ maxDeliveries: 2 });
    await a.store([entry(1, 1), entry(1, 2)]);
    let d = (await takeUntil(a, (x) => x.deliveries.length > 0, 'the entry')).deliveries[0];
    for (let i = 0; i < 4; i++) {
      [d.entry.rrn, d.delivery].should.eql([1, 1]);
      (await a.reject(d.id, d.delivery, 'ECONNREFUSED', true)).should.equal('again');
      d = (await takeUntil(a, (x) => x.deliveries.length > 0, 'the entry again')).deliveries[0];
    }
    (await b.parked()).should.eql([]);
    // Counted again from there: a rejection of its own parks it at the set number.
    (await a.reject(d.id, 1, 'disk full')).should.equal('again');
    d = (await takeUntil(a, (x) => x.deliveries.length > 0, 'the second delivery')).deliveries[0];
    d.delivery.should.equal(2);
    (await a.reject(d.id, 2, 'disk full')).should.match({ deliveries: 2, reason: 'disk full' });
  });

  it('an entry whose last delivery times out is parked by the copy that finds it', async function () {
    const a = await copy({ visibilityTimeoutMs: 200, maxDeliveries: 1 });
    const b = await copy({ visibilityTimeoutMs: 200, maxDeliveries: 1 });
    await a.store([entry(7, 1), entry(7, 2)]);
    names(await a.take(10)).should.eql(['7/1']);
    const t = await takeUntil(b, (x) => x.parked.length > 0, 'parked after the timeout');
    t.parked[0].should.match({ deliveries: 1, reason: /visibility timeout/ });
    names(t).should.eql(['7/2'], 'the next entry of asset 7, claimed from copy a too, goes in the same take');
    (await a.parked()).length.should.equal(1);
    (await a.discard(t.parked[0].id)).should.be.true();
    (await a.parked()).should.eql([]);
  });

  it('a parked entry a drain gave out, its copy killed before it took it out: parked again by a copy in at least once after the visibility timeout', async function () {
    const a = await copy({ maxDeliveries: 1 });
    await a.store([entry(3, 1)]);
    const [first] = (await takeUntil(a, (x) => x.deliveries.length > 0, 'the entry')).deliveries;
    await a.reject(first.id, 1, 'disk full');
    const drainer = await copy({ visibilityTimeoutMs: 100 });
    (await drainer.drain('-', 10)).entries.map((d) => d.entry.rrn).should.eql([1], 'given out'); // never drained: killed
    (await a.parked()).should.eql([], 'out of the sidebar while given out');
    // A copy in at least once sweeps at its first take: once the entry was given out longer than its visibility timeout.
    let parked = [];
    for (let i = 0; i < 1000 && parked.length === 0; i++) {
      const b = await copy({ visibilityTimeoutMs: 100 });
      await b.take(10);
      parked = await b.parked();
      if (parked.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    parked.map((p) => [p.entry.rrn, p.reason]).should.eql([[1, 'disk full']]);
    (await admin.hlen(`${PREFIX}q`)).should.equal(0);
  });

  /** Parks `n` entries of asset 1 (revisions 1..n) with copy `a` (maxDeliveries 1). */
  async function parkMany(a, n) {
    for (let rrn = 1; rrn <= n; rrn++) {
      await a.store([entry(1, rrn)]);
      const [d] = (await takeUntil(a, (x) => x.deliveries.length > 0, `entry ${rrn}`)).deliveries;
      await a.reject(d.id, 1, 'disk full');
    }
  }
  /** Drains with batches of `count` until nothing is stored; the rrns of each batch. */
  async function drainAll(drainer, count) {
    const batches = [];
    let start = '-';
    for (let i = 0; i < 100; i++) {
      const r = await drainer.drain(start, count);
      batches.push(r.entries.map((d) => d.entry.rrn));
      const left = r.entries.length > 0 ? await drainer.drained(r.entries) : r.left;
      if (left === 0) return batches;
      start = r.next;
    }
    throw new Error('no end');
  }

  it('a drain gives out at most a batch per call: many parked entries; whole lines of assets, in order (a longer one alone)', async function () {
    const a = await copy({ maxDeliveries: 1 });
    await parkMany(a, 12);
    const drainer = await copy();
    let batches = await drainAll(drainer, 5);
    batches.forEach((b) => b.length.should.be.belowOrEqual(5));
    batches.flat().sort((x, y) => x - y).should.eql([...Array(12).keys()].map((i) => i + 1), 'each parked entry once');
    for (let rrn = 100; rrn < 112; rrn++) await a.store([entry(2 + (rrn % 3), rrn)]); // three assets, four entries each
    batches = await drainAll(drainer, 5);
    batches.filter((b) => b.length > 0).map((b) => [b.length, new Set(b.map((rrn) => rrn % 3)).size]).should.eql([[4, 1], [4, 1], [4, 1]], 'one whole asset per batch: the next line does not fit');
    batches.flat().sort((x, y) => x - y).should.eql([...Array(12).keys()].map((i) => i + 100), 'each once');
    batches.forEach((b) => b.should.eql([...b].sort((x, y) => x - y)));
    // A line longer than a batch: claimed whole by the first drain, given out a batch at a time, in order; another drain gets none of it.
    for (let rrn = 200; rrn < 212; rrn++) await a.store([entry(6, rrn)]);
    const other = await copy();
    const first = await drainer.drain('-', 5);
    first.entries.map((d) => d.entry.rrn).should.eql([200, 201, 202, 203, 204]);
    (await other.drain('-', 5)).entries.should.eql([], 'the asset stays with the first drain');
    await drainer.drained(first.entries);
    (await drainAll(drainer, 5)).filter((b) => b.length > 0).should.eql([[205, 206, 207, 208, 209], [210, 211]]);
  });

  it('parked entries given out by a drain: counted in the bound; back in the sidebar when the drain lets go', async function () {
    const a = await copy({ maxDeliveries: 1, maxEntries: 3 });
    await parkMany(a, 2);
    const drainer = await copy({ maxEntries: 3 });
    (await drainer.drain('-', 10)).entries.length.should.equal(2);
    (await a.parked()).should.eql([]);
    (await a.store([entry(5, 1)])).should.equal(0, 'one more fits: 2 given out + 1 = 3');
    await a.store([entry(5, 2)]).should.be.rejectedWith(InboxFullError); // full: the 2 given out count
    await drainer.letGoDrained();
    (await a.parked()).map((p) => [p.entry.rrn, p.reason]).should.eql([[1, 'disk full'], [2, 'disk full']]);
  });

  // The first take of a copy sweeps (SWEEP, once a minute): that is what met the missing stream.
  it('a drain that finds nothing deletes the empty stream: a copy in at least once takes on without an error', async function () {
    const a = await copy();
    const drainer = await copy();
    (await drainer.drain('-', 10)).left.should.equal(0);
    (await admin.exists(`${PREFIX}s`)).should.equal(0);
    (await a.take(10)).deliveries.should.eql([]);
    a.problem.should.equal('');
    await a.store([entry(9, 1)]);
    names(await takeUntil(a, (x) => x.deliveries.length > 0, 'the new entry')).should.eql(['9/1']);
  });

  it('Redis down: store rejects (the callback gets 503), take says why and hands out nothing; after the restart the stored entries are all there', async function () {
    const own = await startRedis(path.join(work, 'redis-down'));
    const warned = [];
    const a = await copy({ warn: (text) => warned.push(text) }, own.url);
    await a.store([entry(1, 1), entry(2, 1)]);
    await own.stop();
    await a.store([entry(3, 1)]).should.be.rejectedWith(StreamUnavailableError);
    const none = await a.take(10);
    none.deliveries.should.eql([]);
    a.problem.should.match(/Redis/);
    warned.length.should.equal(1);
    await own.start();
    const all = await takeUntil(a, (x) => x.deliveries.length === 2, 'both entries after the restart');
    names(all).should.eql(['1/1', '2/1']);
    a.problem.should.equal('');
    await own.stop();
  });
});
