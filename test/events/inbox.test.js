'use strict';
// The embedded at-least-once inbox on the real file system: journal, bound, compaction, order, time.
const should = require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { JournalInbox, InboxFullError, parseJournal, encodeRecord } = require('../../dist/events/inbox');

describe('events: at-least-once inbox (journal)', function () {
  let dir;
  let now;
  const opened = [];
  const clock = () => now;
  const options = (extra = {}) => ({ maxEntries: 100, maxInFlight: 10, visibilityTimeoutMs: 60000, maxDeliveries: 3, backoffMs: 1000, now: clock, ...extra });
  const entry = (assetId, rrn) => ({ key: String(assetId), entry: { assetId, rrn, action: 'modified' }, receivedAt: '2026-01-01T00:00:00.000Z', subscriptionId: 'sub-inbox-test' });
  async function open(file, extra) {
    const result = await JournalInbox.open(file, options(extra));
    opened.push(result.inbox);
    return result;
  }
  /** An entry as asset-event-in stores it: keyed by asset, its revision (rrn) given for the order check. */
  const revised = (assetId, rrn) => ({ ...entry(assetId, rrn), revision: rrn });
  /** Takes and acknowledges until the inbox is empty; the order entries left in, `asset/rrn`. */
  async function drain(inbox) {
    const out = [];
    for (;;) {
      const taken = await inbox.take(100);
      if (!taken.deliveries.length) return out;
      for (const d of taken.deliveries) { out.push(`${d.entry.assetId}/${d.entry.rrn}`); await inbox.acknowledge(d.id, d.delivery); }
    }
  }
  const ids = (taken) => taken.deliveries.map((d) => `${d.entry.assetId}/${d.entry.rrn}`);

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-'));
    now = 1000000;
  });
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('bytes bound: the stored entries\' journal bytes count (the same after a restart); past the bound InboxFullError, nothing written; acknowledgements and discards make room; an empty inbox takes any size', async function () {
    const file = path.join(dir, 'bytes.journal');
    const big = (assetId, size) => ({ ...entry(assetId, 1), entry: { assetId, rrn: 1, blob: 'x'.repeat(size) } });
    const { inbox } = await open(file, { maxBytes: 25000, maxDeliveries: 1 });
    await inbox.store([big(1, 10000)]);
    await inbox.store([big(2, 10000)]);
    const held = fs.statSync(file).size;
    const err = await inbox.store([big(3, 10000)]).then(() => undefined, (e) => e);
    err.should.be.instanceOf(InboxFullError);
    err.unit.should.equal('bytes');
    err.message.should.match(/inbox full \(0\.025 MB\)/);
    fs.statSync(file).size.should.equal(held); // refused: nothing written
    await inbox.store([big(4, 100)]); // fits
    const bytes = inbox.state.bytes;
    bytes.should.equal(fs.statSync(file).size); // the three records, nothing else written yet
    await inbox.close();
    const { inbox: again } = await open(file, { maxBytes: 25000, maxDeliveries: 1 });
    again.state.bytes.should.equal(bytes);
    (await again.store([big(3, 10000)]).then(() => 'stored', (e) => e.unit)).should.equal('bytes');
    const taken = await again.take(10);
    await again.acknowledge(taken.deliveries[0].id, 1); // asset 1: room for asset 3
    await again.store([big(3, 10000)]);
    (await again.store([big(5, 10000)]).then(() => 'stored', (e) => e.unit)).should.equal('bytes');
    // Rejected on its last delivery: parked, still counted; discarded, it goes.
    const asset2 = taken.deliveries.find((d) => d.entry.assetId === 2);
    const parked = await again.reject(asset2.id, 1, 'no');
    parked.id.should.equal(asset2.id);
    (await again.store([big(5, 10000)]).then(() => 'stored', (e) => e.unit)).should.equal('bytes');
    (await again.discard(asset2.id)).should.be.true();
    await again.store([big(5, 10000)]);
    await again.close();
    // An empty inbox takes a callback larger than the bound.
    const { inbox: empty } = await open(path.join(dir, 'empty.journal'), { maxBytes: 1000 });
    await empty.store([big(6, 5000)]);
    (await empty.store([big(7, 10)]).then(() => 'stored', (e) => e.unit)).should.equal('bytes');
  });

  it('bytes after a compaction that writes entries alone (one of a callback acknowledged, one parked) are what a restart counts', async function () {
    const file = path.join(dir, 'compacted-bytes.journal');
    const { inbox } = await open(file, { maxEntries: 100000, maxInFlight: 5000, maxDeliveries: 1 });
    for (let i = 0; i < 1500; i++) {
      const entries = [0, 1, 2].map((k) => ({ ...revised(i * 3 + k, 1), entry: { assetId: i * 3 + k, rrn: 1, action: 'modified', metadata: { title: 'x'.repeat(50) } } }));
      await inbox.store(entries, { body: JSON.stringify({ id: 's', data: { entry: entries.map((e) => e.entry) } }), indexes: [0, 1, 2], total: 3 });
    }
    const taken = await inbox.take(5000);
    let n = 0;
    for (const d of taken.deliveries) {
      if (n++ % 3 < 2) await inbox.acknowledge(d.id, d.delivery);
      else await inbox.reject(d.id, d.delivery, 'failed in the flow');
    }
    await inbox.close();
    fs.readFileSync(file, 'utf8').slice(0, 20).should.match(/^\S+ \{"i":/); // compacted: the file starts with the ids record
    const running = inbox.state.bytes;
    const { inbox: again } = await open(file, { maxEntries: 100000, maxInFlight: 5000, maxDeliveries: 1 });
    again.state.bytes.should.equal(running);
  });

  it('a journal cut at every byte offset of its last record loads every complete record, and keeps working', async function () {
    const file = path.join(dir, 'full.journal');
    const { inbox } = await open(file);
    for (let i = 1; i <= 5; i++) await inbox.store([entry(i, 10 + i)]);
    const first = await inbox.take(10);
    await inbox.acknowledge(first.deliveries[0].id, 1); // an acknowledgement among the records
    await inbox.store([entry(9, 99)]); // the last record: a stored entry
    await inbox.close();
    const whole = fs.readFileSync(file);
    const lastStart = whole.lastIndexOf(0x0a, whole.length - 2) + 1;
    lastStart.should.be.above(0);
    for (let cut = lastStart; cut < whole.length; cut++) {
      const torn = path.join(dir, `cut-${cut}.journal`);
      fs.writeFileSync(torn, whole.subarray(0, cut));
      const { inbox: again, load } = await open(torn);
      load.tornBytes.should.equal(cut - lastStart);
      load.corrupt.should.equal(0);
      // Entries 2..5 (1 was acknowledged); the cut entry 9 is not there.
      again.remaining().map((d) => d.entry.assetId).should.eql([2, 3, 4, 5]);
      fs.statSync(torn).size.should.equal(lastStart); // the torn tail is cut off
      await again.store([entry(7, 70)]); // appends after the last whole record
      await again.close();
      const { inbox: third, load: load3 } = await open(torn);
      load3.tornBytes.should.equal(0);
      third.remaining().map((d) => d.entry.assetId).should.eql([2, 3, 4, 5, 7]);
      await third.close();
    }
    const { inbox: intact } = await open(file);
    intact.remaining().map((d) => d.entry.assetId).should.eql([2, 3, 4, 5, 9]);
  });

  it('a bad record with whole records after it is skipped and counted; the records after it stay', function () {
    const good = (id) => encodeRecord({ s: id, k: String(id), e: { assetId: id }, at: 'x' });
    const bad = good(2).replace('"assetId":2', '"assetId":3'); // checksum no longer matches
    const parsed = parseJournal(Buffer.from(good(1) + bad + good(4) + '0000'));
    parsed.records.map((r) => r.s).should.eql([1, 4]);
    parsed.corrupt.should.equal(1);
    parsed.tornBytes.should.equal(4);
  });

  it('refuses a callback once it holds its bound (none of it stored) and takes it once room is made', async function () {
    const { inbox } = await open(path.join(dir, 'bound.journal'), { maxEntries: 3 });
    await inbox.store([revised(1, 2), entry(2, 1), entry(3, 1)]);
    const refused = await inbox.store([entry(4, 1), entry(5, 1)]).then(() => undefined, (err) => err);
    refused.should.be.instanceOf(InboxFullError);
    refused.message.should.match(/inbox full \(3 entries\)/);
    inbox.counts().stored.should.equal(3);
    (await inbox.store([revised(1, 1)])).should.equal(1, 'a callback of nothing new is answered when full');
    const taken = await inbox.take(10);
    (await inbox.acknowledge(taken.deliveries[0].id, 1)).should.be.true();
    await inbox.store([entry(4, 1), entry(5, 1)]);
    inbox.counts().should.eql({ stored: 4, inFlight: 2, parked: 0, capacity: 3 });
  });

  it('below its bound takes a whole callback of more entries than the bound (a bulk ingest is never refused for ever)', async function () {
    // Before: a callback was refused unless all of it fitted, so one of more entries than the
    // bound got 503 at every retry and the server gave the change up.
    const file = path.join(dir, 'bulk.journal');
    const { inbox } = await open(file, { maxEntries: 3 });
    const bulk = [1, 2, 3, 4, 5].map((id) => entry(id, 1));
    (await inbox.store(bulk)).should.equal(0);
    inbox.counts().stored.should.equal(5);
    await inbox.store([entry(6, 1)]).should.be.rejectedWith(InboxFullError);
    (await drain(inbox)).should.eql(['1/1', '2/1', '3/1', '4/1', '5/1']);
  });

  it('compacts the journal as entries are acknowledged; what is left loads with its delivery counts', async function () {
    const file = path.join(dir, 'compact.journal');
    const { inbox } = await open(file, { maxEntries: 5000, maxInFlight: 5000 });
    const batch = [];
    for (let i = 1; i <= 3000; i++) batch.push(entry(i, 1));
    await inbox.store(batch);
    const taken = await inbox.take(5000);
    taken.deliveries.length.should.equal(3000);
    for (const d of taken.deliveries) if (d.entry.assetId > 10) await inbox.acknowledge(d.id, d.delivery);
    await inbox.close();
    const records = parseJournal(fs.readFileSync(file)).records;
    records.length.should.be.below(1100); // 3000 stored + 3000 delivered + 2990 acknowledged without compaction
    const { inbox: again } = await open(file, { maxEntries: 5000 });
    again.remaining().map((d) => d.entry.assetId).should.eql([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const next = await again.take(100);
    next.deliveries.map((d) => d.delivery).should.eql(new Array(10).fill(2));
    // Ids are not handed out again after a compaction.
    await again.store([entry(11, 2)]);
    Number(again.remaining().pop().id).should.be.above(3000);
  });

  it('keeps the order per asset: one entry of an asset in flight, the next only after the acknowledgement', async function () {
    const { inbox } = await open(path.join(dir, 'order.journal'));
    await inbox.store([entry(1, 1), entry(1, 2), entry(2, 1), entry(1, 3), entry(2, 2)]);
    const a = await inbox.take(10);
    ids(a).should.eql(['1/1', '2/1']);
    ids(await inbox.take(10)).should.eql([]);
    await inbox.acknowledge(a.deliveries[1].id, 1);
    const b = await inbox.take(10);
    ids(b).should.eql(['2/2']);
    await inbox.acknowledge(a.deliveries[0].id, 1);
    const c = await inbox.take(10);
    ids(c).should.eql(['1/2']);
    await inbox.acknowledge(c.deliveries[0].id, 1);
    ids(await inbox.take(10)).should.eql(['1/3']);
  });

  it('the next entry of an asset goes only once the acknowledgement is on disk (a crash in between cannot reorder)', async function () {
    const file = path.join(dir, 'ack-durable.journal');
    const { inbox } = await open(file);
    await inbox.store([entry(1, 1), entry(1, 2)]);
    const a = await inbox.take(10);
    const acking = inbox.acknowledge(a.deliveries[0].id, 1);
    ids(await inbox.take(10)).should.eql([]); // not yet written: 1/2 waits
    (await acking).should.be.true();
    ids(await inbox.take(10)).should.eql(['1/2']);
    // And a parking rejection the same way.
    const { inbox: other } = await open(path.join(dir, 'reject-durable.journal'), { maxDeliveries: 1 });
    await other.store([entry(2, 1), entry(2, 2)]);
    const b = await other.take(10);
    const rejecting = other.reject(b.deliveries[0].id, 1, 'no');
    ids(await other.take(10)).should.eql([]);
    (await rejecting).reason.should.equal('no');
    ids(await other.take(10)).should.eql(['2/2']);
  });

  it('an acknowledgement frees its in-flight slot at once for other assets; its own asset waits for the write', async function () {
    const { inbox } = await open(path.join(dir, 'slot.journal'), { maxInFlight: 1 });
    await inbox.store([entry(1, 1), entry(1, 2), entry(2, 1)]);
    const a = await inbox.take(10);
    ids(a).should.eql(['1/1']);
    const acking = inbox.acknowledge(a.deliveries[0].id, 1);
    inbox.counts().inFlight.should.equal(0);
    const b = await inbox.take(10);
    ids(b).should.eql(['2/1']); // not 1/2: the acknowledgement of 1/1 is not on disk yet
    (await acking).should.be.true();
    (await inbox.acknowledge(a.deliveries[0].id, 1)).should.be.false(); // once only
    await inbox.acknowledge(b.deliveries[0].id, 1);
    ids(await inbox.take(10)).should.eql(['1/2']);
  });

  it('bounds the entries in flight', async function () {
    const { inbox } = await open(path.join(dir, 'flight.journal'), { maxInFlight: 2 });
    await inbox.store([entry(1, 1), entry(2, 1), entry(3, 1)]);
    const a = await inbox.take(10);
    ids(a).should.eql(['1/1', '2/1']);
    ids(await inbox.take(10)).should.eql([]);
    await inbox.acknowledge(a.deliveries[0].id, 1);
    ids(await inbox.take(10)).should.eql(['3/1']);
  });

  it('delivers again after the visibility timeout (clock moved, no sleep), then parks after the last delivery', async function () {
    const { inbox } = await open(path.join(dir, 'visibility.journal'));
    await inbox.store([entry(1, 1), entry(1, 2)]);
    const first = await inbox.take(10);
    first.deliveries[0].delivery.should.equal(1);
    inbox.nextDueAt().should.equal(now + 60000);
    now += 59999;
    ids(await inbox.take(10)).should.eql([]);
    now += 1;
    const second = await inbox.take(10);
    ids(second).should.eql(['1/1']);
    second.deliveries[0].delivery.should.equal(2);
    // The late acknowledgement of delivery 1 no longer counts while delivery 2 is in flight.
    (await inbox.acknowledge(first.deliveries[0].id, 1)).should.be.false();
    now += 60000;
    (await inbox.take(10)).deliveries[0].delivery.should.equal(3);
    now += 60000;
    const last = await inbox.take(10);
    last.parked.length.should.equal(1);
    last.parked[0].entry.should.eql({ assetId: 1, rrn: 1, action: 'modified' });
    last.parked[0].reason.should.match(/visibility timeout/);
    ids(await inbox.take(10)).should.eql(['1/2']); // the next entry of the asset goes on, once the parking is written
    inbox.counts().parked.should.equal(1);
  });

  it('rejection: delivered again after a doubling backoff; parked after the last delivery; deliver again and discard', async function () {
    const file = path.join(dir, 'reject.journal');
    const { inbox } = await open(file);
    await inbox.store([entry(1, 1), entry(2, 1)]);
    let d = (await inbox.take(10)).deliveries[0];
    (await inbox.reject(d.id, 1, 'disk full')).should.equal('again');
    inbox.nextDueAt().should.equal(now + 1000);
    now += 999;
    ids(await inbox.take(10)).should.eql([]);
    now += 1;
    d = (await inbox.take(10)).deliveries[0];
    d.delivery.should.equal(2);
    (await inbox.reject(d.id, 2, 'disk full')).should.equal('again');
    now += 1999;
    ids(await inbox.take(10)).should.eql([]);
    now += 1;
    d = (await inbox.take(10)).deliveries[0];
    const parked = await inbox.reject(d.id, 3, 'disk full');
    parked.reason.should.equal('disk full');
    parked.deliveries.should.equal(3);
    (await inbox.parked()).map((p) => p.id).should.eql([d.id]);
    await inbox.close();
    // Parked across a restart; deliver again puts it back in line with its deliveries from 0.
    const { inbox: again } = await open(file);
    (await again.parked()).map((p) => p.reason).should.eql(['disk full']);
    (await again.deliverAgain(d.id)).should.be.true();
    const back = await again.take(10);
    back.deliveries.map((x) => [x.entry.assetId, x.delivery]).should.eql([[2, 2], [1, 1]]);
    const p2 = await again.reject(back.deliveries[1].id, 1, 'x');
    p2.should.equal('again');
    await again.store([entry(5, 1)]);
    // discard only takes parked entries
    (await again.discard(back.deliveries[0].id)).should.be.false();
  });

  it('an entry due after its backoff while the in-flight bound is full: nextDueAt does not stay in the past (no 0 ms timer loop)', async function () {
    const { inbox } = await open(path.join(dir, 'due-full.journal'), { maxInFlight: 1 });
    await inbox.store([entry(1, 1), entry(2, 1)]);
    const a = (await inbox.take(10)).deliveries[0];
    (await inbox.reject(a.id, 1, 'disk full')).should.equal('again'); // due again in 1 s
    ids(await inbox.take(10)).should.eql(['2/1']); // the bound is full now
    now += 1500;
    ids(await inbox.take(10)).should.eql([]);
    inbox.nextDueAt().should.be.above(now, 'only the flight\'s visibility timeout is ahead');
  });

  it('a rejection because the server was away does not count: due at once, never parked, and the count given back is on disk', async function () {
    const file = path.join(dir, 'away.journal');
    const { inbox } = await open(file, { maxDeliveries: 2 });
    await inbox.store([entry(1, 1), entry(1, 2), entry(2, 1)]);
    let d = (await inbox.take(1)).deliveries[0];
    for (let i = 0; i < 5; i++) {
      d.delivery.should.equal(1, `delivery ${i + 1} is counted as the first`);
      (await inbox.reject(d.id, d.delivery, 'ECONNREFUSED', true)).should.equal('again');
      const t = await inbox.take(10); // no backoff; the asset's next entry still waits behind it
      ids(t).should.eql(['2/1', '1/1'].slice(i === 0 ? 0 : 1));
      d = t.deliveries.find((x) => x.entry.assetId === 1);
    }
    (await inbox.parked()).should.eql([]);
    should(await inbox.reject(d.id, d.delivery + 1, 'late', true)).be.undefined(); // another delivery: unknown
    await inbox.close();
    const { inbox: again, load } = await open(file, { maxDeliveries: 2 });
    load.parkedAtLoad.should.eql([], 'a stop with it in flight is its second delivery, not its sixth');
    const t = await again.take(10);
    t.deliveries.map((x) => [x.entry.assetId, x.delivery]).should.eql([[1, 2], [2, 2]]);
    // A counted rejection after that parks it as usual.
    (await again.reject(t.deliveries[0].id, 2, 'disk full')).should.match({ deliveries: 2, reason: 'disk full' });
  });

  it('after a restart, entries not acknowledged are delivered again with their count; spent ones are parked', async function () {
    const file = path.join(dir, 'restart.journal');
    const { inbox } = await open(file, { maxDeliveries: 2 });
    await inbox.store([entry(1, 1), entry(2, 1), entry(3, 1)]);
    const a = await inbox.take(10);
    await inbox.acknowledge(a.deliveries[2].id, 1);
    await inbox.close(); // a stop with two in flight
    const { inbox: b, load } = await open(file, { maxDeliveries: 2 });
    load.loaded.should.equal(2);
    const again = await b.take(10);
    again.deliveries.map((x) => [x.entry.assetId, x.delivery]).should.eql([[1, 2], [2, 2]]);
    await b.acknowledge(again.deliveries[1].id, 2);
    await b.close();
    // Entry 1 was in flight at two stops: its deliveries are spent, it is parked at load, not delivered a third time.
    const { inbox: c, load: load3 } = await open(file, { maxDeliveries: 2 });
    load3.parkedAtLoad.map((p) => p.entry.assetId).should.eql([1]);
    ids(await c.take(10)).should.eql([]);
    c.counts().should.eql({ stored: 1, inFlight: 0, parked: 1, capacity: 100 });
  });

  // The kill test's one order failure (revision 1929 processed after 1938): a callback carrying two
  // revisions of one asset is stored, Node-RED is killed before the answer reaches the server (the
  // records are on disk), the restarted node's in-memory duplicate filter is empty, and the server's
  // retry of the same callback stored both again behind them: old, new, old, new.
  it('a callback stored before a crash and sent again by the server is not stored behind its own newer revision', async function () {
    const file = path.join(dir, 'resent.journal');
    const callback = () => [revised(1, 1929), revised(2, 1930), revised(1, 1938)];
    const { inbox } = await open(file);
    await inbox.store(callback());
    const killed = path.join(dir, 'resent-after-kill.journal');
    fs.copyFileSync(file, killed); // SIGKILL before the answer: what is on disk is all the restart sees
    const { inbox: restarted } = await open(killed);
    const skipped = await restarted.store(callback()); // the server's retry
    const order = await drain(restarted);
    // Asset 1 never goes back from 1938 to 1929; a repeat of an asset's newest revision is allowed.
    order.should.eql(['1/1929', '2/1930', '1/1938', '2/1930', '1/1938']);
    skipped.should.equal(1); // 1/1929: older than the stored 1/1938

    // The same when the restarted node already acknowledged the stored entries before the retry
    // came, and a compaction dropped their records: the newest revision per asset outlives both.
    const { inbox: again } = await open(path.join(dir, 'resent-compacted.journal'), { maxEntries: 5000, maxInFlight: 5000 });
    await again.store(callback());
    (await drain(again)).should.eql(['1/1929', '2/1930', '1/1938']);
    const filler = [];
    for (let i = 100; i < 1700; i++) filler.push(revised(i, 5000 + i));
    await again.store(filler);
    await drain(again);
    // Compacted: about 4800 records without (1600 stored, delivered, acknowledged); a compacted file may hold twice its snapshot.
    parseJournal(fs.readFileSync(path.join(dir, 'resent-compacted.journal'))).records.length.should.be.below(2400);
    const copy = path.join(dir, 'resent-compacted-kill.journal');
    fs.copyFileSync(path.join(dir, 'resent-compacted.journal'), copy);
    const { inbox: third } = await open(copy, { maxEntries: 5000, maxInFlight: 5000 });
    const skippedThird = await third.store(callback());
    (await drain(third)).should.eql(['2/1930', '1/1938']);
    skippedThird.should.equal(1);
    // A newer revision is stored as ever.
    (await third.store([revised(1, 1940)])).should.equal(0);
    (await drain(third)).should.eql(['1/1940']);
  });

  it('an older revision re-sent while a newer one\'s store is still being written is left out, not delivered after it', async function () {
    const file = path.join(dir, 'resent-during-write.journal');
    const { inbox } = await open(file);
    await inbox.store([revised(7, 4)]);
    (await drain(inbox)).should.eql(['7/4']);
    await inbox.close();
    const { inbox: restarted } = await open(file); // the duplicate filter forgot 7/4 with the restart
    const newer = restarted.store([revised(7, 5)]); // its write is under way...
    const resent = restarted.store([revised(7, 4)]); // ...when the server's retry of 7/4 comes
    (await newer).should.equal(0);
    (await resent).should.equal(1);
    (await drain(restarted)).should.eql(['7/5']);
  });

  it('a compaction whose new file cannot be opened again: nothing goes to the old, unlinked file; stores after it are on disk', async function () {
    const fsp = require('fs/promises');
    const file = path.join(dir, 'reopen.journal');
    const { inbox } = await open(file, { maxEntries: 5000, maxInFlight: 5000 });
    await inbox.store(Array.from({ length: 1100 }, (_, i) => entry(i + 1, 1)));
    const { deliveries } = await inbox.take(1100);
    const realOpen = fsp.open;
    let refused = 0;
    fsp.open = async (p, flags, ...rest) => {
      if (p === file && flags === 'a' && refused < 2) { refused++; throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }); }
      return realOpen(p, flags, ...rest);
    };
    try {
      // Acknowledgements until the journal compacts: its rename goes through, the new file cannot be opened (twice).
      const acked = [];
      for (const d of deliveries) {
        if (refused === 2) break;
        acked.push(d);
        await inbox.acknowledge(d.id, d.delivery).catch(() => false);
      }
      refused.should.equal(2);
      (await inbox.store([entry(5000, 1)])).should.equal(0); // opened again: on disk
    } finally {
      fsp.open = realOpen;
    }
    const copy = path.join(dir, 'reopen-killed.journal');
    fs.copyFileSync(file, copy); // SIGKILL now: the file is all a restart sees
    const { inbox: again } = await open(copy, { maxEntries: 5000, maxInFlight: 5000 });
    const left = again.remaining().map((d) => d.entry.assetId);
    left.should.containEql(5000);
    left.length.should.equal(inbox.counts().stored);
    left.should.eql(inbox.remaining().map((d) => d.entry.assetId));
  });

  it('discard and deliver again whose write fails change nothing: the entry stays parked, in memory and on disk', async function () {
    const file = path.join(dir, 'admin-fails.journal');
    const { inbox } = await open(file, { maxDeliveries: 1 });
    await inbox.store([entry(1, 1)]);
    const d = (await inbox.take(10)).deliveries[0];
    (await inbox.reject(d.id, d.delivery, 'failed')).should.have.property('id'); // parked
    const handle = inbox.journal.handle;
    const appendFile = handle.appendFile;
    handle.appendFile = async () => { throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }); };
    await inbox.discard(d.id).should.be.rejectedWith(/ENOSPC/);
    await inbox.deliverAgain(d.id).should.be.rejectedWith(/ENOSPC/);
    handle.appendFile = appendFile;
    (await inbox.parked()).map((p) => p.id).should.eql([d.id]);
    (await inbox.take(10)).deliveries.should.eql([]);
    await inbox.close();
    const { inbox: again } = await open(file, { maxDeliveries: 1 });
    (await again.parked()).map((p) => p.id).should.eql([d.id]);
    (await again.deliverAgain(d.id)).should.be.true();
    (await again.discard(d.id)).should.be.false(); // not parked any more
    ids(await again.take(10)).should.eql(['1/1']);
  });

  it('discard and deliver again followed at once by a compaction: the compacted file has them done', async function () {
    const file = path.join(dir, 'admin-compacted.journal');
    const { inbox } = await open(file, { maxDeliveries: 1 });
    await inbox.store([entry(1, 1), entry(2, 1)]);
    for (const d of (await inbox.take(10)).deliveries) await inbox.reject(d.id, d.delivery, 'failed');
    const [one, two] = (await inbox.parked()).map((p) => p.id);
    const afterCrash = async (name) => { // the file as a restart sees it, once the compaction is done
      await inbox.journal.running;
      fs.copyFileSync(file, path.join(dir, name));
      return (await open(path.join(dir, name), { maxDeliveries: 1 })).inbox;
    };
    inbox.fileRecords = 5000; // the action's own record makes the journal compact right after it
    (await inbox.discard(one)).should.be.true();
    (await (await afterCrash('after-discard.journal')).parked()).map((p) => p.id).should.eql([two]);
    inbox.fileRecords = 5000;
    (await inbox.deliverAgain(two)).should.be.true();
    const again = await afterCrash('after-deliver-again.journal');
    (await again.parked()).should.eql([]);
    ids(await again.take(10)).should.eql(['2/1']);
  });

  it('destroy removes the file and says how many entries were not acknowledged', async function () {
    const file = path.join(dir, 'gone.journal');
    const { inbox } = await open(file);
    await inbox.store([entry(1, 1), entry(2, 1)]);
    (await inbox.destroy()).should.equal(2);
    fs.existsSync(file).should.be.false();
  });

  it('a closed inbox refuses to store, and hands nothing out', async function () {
    const { inbox } = await open(path.join(dir, 'closed.journal'));
    await inbox.store([entry(1, 1)]);
    await inbox.close();
    const refused = await inbox.store([entry(2, 1)]).then(() => undefined, (err) => err);
    refused.should.be.instanceOf(Error);
    ids(await inbox.take(10)).should.eql([]);
  });
});
