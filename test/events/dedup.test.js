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
});
