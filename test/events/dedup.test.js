'use strict';
require('should');
const { DuplicateFilter } = require('../../dist/events');

describe('events: duplicate filter', function () {
  let now;
  const clock = () => now;
  beforeEach(() => { now = 1000000; });

  it('drops a key seen within the window and lets it through after', function () {
    const f = new DuplicateFilter({ windowMs: 1000, maxKeys: 10, now: clock });
    f.isDuplicate('a').should.be.false();
    now += 999;
    f.isDuplicate('a').should.be.true();
    now += 1; // the window counts from the first sighting, not the last
    f.isDuplicate('a').should.be.false();
    f.isDuplicate('a').should.be.true();
  });

  it('forgets expired keys, so memory follows the window', function () {
    const f = new DuplicateFilter({ windowMs: 1000, maxKeys: 100, now: clock });
    for (let i = 0; i < 50; i++) { f.isDuplicate('k' + i); now += 10; }
    f.size.should.equal(50);
    now += 600; // keys seen at t+0..t+490 have expired, t+500.. have not
    f.size.should.be.below(50);
    now += 1000;
    f.size.should.equal(0);
  });

  it('never holds more than maxKeys, dropping the oldest first', function () {
    const f = new DuplicateFilter({ windowMs: 60000, maxKeys: 3, now: clock });
    ['a', 'b', 'c', 'd'].forEach((k) => f.isDuplicate(k).should.be.false());
    f.size.should.equal(3);
    f.isDuplicate('d').should.be.true();
    f.isDuplicate('b').should.be.true();
    f.isDuplicate('a').should.be.false(); // evicted by the cap, so seen as new again
    f.size.should.equal(3);
  });

  it('stays bounded under a flood of distinct keys', function () {
    const f = new DuplicateFilter({ windowMs: 60000, maxKeys: 1000, now: clock });
    for (let i = 0; i < 20000; i++) f.isDuplicate('key-' + i);
    f.size.should.equal(1000);
    f.isDuplicate('key-19999').should.be.true();
    f.isDuplicate('key-0').should.be.false();
  });

  it('with a zero window drops nothing', function () {
    const f = new DuplicateFilter({ windowMs: 0, maxKeys: 10, now: clock });
    f.isDuplicate('a').should.be.false();
    f.isDuplicate('a').should.be.false();
  });
  it('under churn (expiry, cap and re-sightings mixed) answers like a plain list of first sightings', function () {
    // Reference: an array of [key, firstSeen] in arrival order, expired and capped from the front.
    const windowMs = 500;
    const maxKeys = 50;
    const f = new DuplicateFilter({ windowMs, maxKeys, now: clock });
    let list = [];
    let seed = 7;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    let answersTrue = 0;
    let expired = 0;
    let capped = 0;
    for (let i = 0; i < 20000; i++) {
      // bursts (often the same millisecond, the cap bites) and pauses (keys expire)
      now += random() < 0.03 ? Math.floor(random() * 400) : Math.floor(random() * 8);
      const key = 'k' + Math.floor(random() * 120); // fewer keys than calls: many re-sightings
      const before = list.length;
      list = list.filter(([, at]) => now - at < windowMs);
      expired += before - list.length;
      const expected = list.some(([k]) => k === key);
      if (!expected) {
        list.push([key, now]);
        if (list.length > maxKeys) { list.shift(); capped++; }
      } else answersTrue++;
      f.isDuplicate(key).should.equal(expected, 'call ' + i + ' key ' + key);
      if (i % 997 === 0) f.size.should.equal(list.filter(([, at]) => now - at < windowMs).length);
    }
    // the run did exercise duplicates, expiry and the cap
    answersTrue.should.be.above(1000);
    expired.should.be.above(1000);
    capped.should.be.above(1000);
    f.clear();
    f.size.should.equal(0);
    f.isDuplicate('k1').should.be.false();
  });
});

describe('events: duplicate filter clear() under an open batch', function () {
  it('keys a batch adds after a clear are still never evicted by the cap while it is open', function () {
    const f = new DuplicateFilter({ windowMs: 1e6, maxKeys: 2 });
    for (const k of ['a', 'b', 'c', 'd', 'e']) f.isDuplicate(k);
    const batch = f.begin();
    f.clear();
    ['x', 'y', 'z'].map((k) => batch.isDuplicate(k)).should.eql([false, false, false]);
    batch.isDuplicate('x').should.be.true();
    batch.end();
  });
});

describe('events: duplicate filter memory (issue 22 item 2)', function () {
  const { memoryEntryFilter, entryDigest } = require('../../dist/events');

  it('keeps the SHA-1 digest of a key (as the Redis filter), not the key itself', function () {
    const f = new DuplicateFilter({ windowMs: 60000, maxKeys: 10 });
    const big = 'x'.repeat(1e6);
    f.isDuplicate(big).should.be.false();
    f.isDuplicate(big).should.be.true();
    // What the filter holds: 20-byte digests only, the same digest the Redis filter sends.
    const held = [...f.seen];
    held.should.eql([entryDigest(big).toString('latin1')]);
    held[0].length.should.equal(20);
  });

  it('a callback with more keys than the cap keeps all its keys: sent again, all are duplicates', async function () {
    const filter = memoryEntryFilter(new DuplicateFilter({ windowMs: 60000, maxKeys: 10 }));
    const keys = Array.from({ length: 1200 }, (_, i) => `entry-${i}`);
    (await filter.claim(keys)).verdicts.every((v) => v === 'new').should.be.true();
    (await filter.claim(keys)).verdicts.every((v) => v === 'duplicate').should.be.true();
  });

  it('past the cap, the oldest callback\'s keys go first, never the current callback\'s', async function () {
    const df = new DuplicateFilter({ windowMs: 60000, maxKeys: 10 });
    const filter = memoryEntryFilter(df);
    await filter.claim(['old-1', 'old-2']);
    await filter.claim(Array.from({ length: 20 }, (_, i) => `new-${i}`));
    df.size.should.equal(20); // the current callback kept whole, the older keys evicted
    (await filter.claim(['old-1'])).verdicts.should.eql(['new']);
  });

  it('two callbacks checked at once (each yielding) keep each other\'s keys', async function () {
    const filter = memoryEntryFilter(new DuplicateFilter({ windowMs: 60000, maxKeys: 10 }));
    const a = Array.from({ length: 1500 }, (_, i) => `a-${i}`);
    const b = Array.from({ length: 1500 }, (_, i) => `b-${i}`);
    await Promise.all([filter.claim(a), filter.claim(b)]);
    (await filter.claim(b)).verdicts.every((v) => v === 'duplicate').should.be.true();
  });
});
