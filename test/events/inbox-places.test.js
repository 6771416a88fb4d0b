'use strict';
// The inbox's place in line across "deliver again" and a restart, on the real file system.
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { JournalInbox } = require('../../dist/events/inbox');

describe('events: inbox places in line survive a restart', function () {
  let dir;
  const opened = [];
  const options = { maxEntries: 100, maxInFlight: 10, visibilityTimeoutMs: 60000, maxDeliveries: 1, backoffMs: 0, now: () => 1000000 };
  const revised = (assetId, rrn) => ({ key: String(assetId), entry: { assetId, rrn }, revision: rrn, receivedAt: '2026-01-01T00:00:00.000Z' });
  async function open(file) {
    const { inbox } = await JournalInbox.open(file, options);
    opened.push(inbox);
    return inbox;
  }
  async function drain(inbox) {
    const out = [];
    for (;;) {
      const taken = await inbox.take(100);
      if (!taken.deliveries.length) return out;
      for (const d of taken.deliveries) { out.push(`${d.entry.assetId}/${d.entry.rrn}`); await inbox.acknowledge(d.id, d.delivery); }
    }
  }
  /** Takes the one due entry and rejects it: with maxDeliveries 1 it is parked. */
  async function park(inbox) {
    const [d] = (await inbox.take(1)).deliveries;
    (await inbox.reject(d.id, d.delivery, 'failed')).should.have.property('reason', 'failed');
    return d.id;
  }

  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-places-')); });
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // "Deliver again" gave a place from its own counter while a new entry took its id as its place:
  // after two of them a new entry's place was lower than the re-delivered one's, and a restart
  // (which orders by place) put the newer revision first.
  it('deliver again twice, then a new entry of the same asset, then a restart: the order stays', async function () {
    const file = path.join(dir, 'places.journal');
    const inbox = await open(file);
    await inbox.store([revised(1, 1)]);
    const id = await park(inbox);
    (await inbox.deliverAgain(id)).should.be.true();
    await park(inbox);
    (await inbox.deliverAgain(id)).should.be.true();
    await inbox.store([revised(1, 2)]);
    inbox.remaining().map((d) => d.entry.rrn).should.eql([1, 2]);
    await inbox.close();
    const restarted = await open(file);
    restarted.remaining().map((d) => d.entry.rrn).should.eql([1, 2]);
    (await drain(restarted)).should.eql(['1/1', '1/2']);
  });

  it('the same with more of both, in memory and after a restart', async function () {
    const file = path.join(dir, 'places-many.journal');
    const inbox = await open(file);
    await inbox.store([revised(1, 1)]);
    const id = await park(inbox);
    for (let i = 0; i < 5; i++) {
      (await inbox.deliverAgain(id)).should.be.true();
      await park(inbox);
    }
    (await inbox.deliverAgain(id)).should.be.true();
    await inbox.store([revised(1, 2), revised(2, 1)]);
    await inbox.store([revised(1, 3)]);
    await inbox.close();
    const restarted = await open(file);
    (await drain(restarted)).should.eql(['1/1', '2/1', '1/2', '1/3']);
  });
});
