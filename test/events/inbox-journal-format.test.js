'use strict';
// The embedded inbox's journal format: one record per callback, delivery counts and
// acknowledgements gathered per write, journals of the one-record-per-entry format still load,
// compaction, and the newest-revision log. Real files, a clock the test moves.
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { JournalInbox, parseJournal, encodeRecord, orderKey } = require('../../dist/events/inbox');
const { parseCallbackPayload } = require('../../dist/events/payload');
const { withExactIntegers } = require('../../dist/api/json');
const { NewestRevisions, REVISION_HORIZON_MS, OLDER_THAN_UNDER_WAY } = require('../../dist/events/inbox/newest-revisions');

describe('events: inbox journal format', function () {
  let dir;
  let now;
  const opened = [];
  const options = (extra = {}) => ({ maxEntries: 10000, maxInFlight: 10000, visibilityTimeoutMs: 60000, maxDeliveries: 3, backoffMs: 0, now: () => now, ...extra });
  const entry = (assetId, rrn) => ({ key: String(assetId), entry: { assetId, rrn }, revision: rrn, receivedAt: '2026-01-01T00:00:00.000Z', subscriptionId: 'sub-format' });
  const callback = (from, count) => Array.from({ length: count }, (_, i) => entry(from + i, 1));
  async function open(file, extra) {
    const result = await JournalInbox.open(file, options(extra));
    opened.push(result.inbox);
    return result;
  }
  const assets = (inbox) => inbox.remaining().map((d) => d.entry.assetId);
  const records = (file) => parseJournal(fs.readFileSync(file)).records;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-format-'));
    now = 1000000;
  });
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a callback is one record; a torn last record drops that whole callback, never an entry of an earlier one', async function () {
    const file = path.join(dir, 'torn.journal');
    const { inbox } = await open(file);
    await inbox.store(callback(1, 3));
    const taken = await inbox.take(1);
    await inbox.acknowledge(taken.deliveries[0].id, 1);
    await inbox.store(callback(10, 4)); // the last record: 4 entries
    await inbox.close();
    const stores = records(file).filter((r) => r.c !== undefined);
    stores.map((r) => r.e.length).should.eql([3, 4]);
    const whole = fs.readFileSync(file);
    const lastStart = whole.lastIndexOf(0x0a, whole.length - 2) + 1;
    for (let cut = lastStart; cut < whole.length; cut++) {
      const torn = path.join(dir, `cut-${cut}.journal`);
      fs.writeFileSync(torn, whole.subarray(0, cut));
      const { inbox: again, load } = await open(torn);
      load.tornBytes.should.equal(cut - lastStart);
      assets(again).should.eql([2, 3]); // 1 acknowledged; none of 10..13
      await again.close();
    }
    const { inbox: intact } = await open(file);
    assets(intact).should.eql([2, 3, 10, 11, 12, 13]);
  });

  it('a callback stored with its text is read back from its record line in the same process: line breaks, non-ASCII text, surrogate pairs', async function () {
    const { inbox } = await open(path.join(dir, 'line.journal'));
    const text = '{"success":true,\r\n"data":{"entry":[\n{"assetId":1,"rrn":2,"n":"\u00e9\ud83d\ude00 \u2028x"},\n' +
      '{"assetId":2,"rrn":3,"n":"a\\nb"},{"assetId":3,"rrn":4,"n":"' + '\u00fc'.repeat(50) + '"}]}}';
    const all = parseCallbackPayload(JSON.parse(text)).entries;
    const places = [0, 2]; // the second one left out (as a filter would): the record names the places
    const entries = places.map((i) => ({ key: all[i].assetId, entry: all[i], revision: all[i].rrn, receivedAt: '2026-01-01T00:00:00.000Z' }));
    await inbox.store(entries, { body: text, indexes: places, total: all.length });
    const taken = await inbox.take(10);
    taken.deliveries.map((d) => d.entry).should.eql(places.map((i) => all[i]));
    taken.deliveries[0].entry.n.should.equal('\u00e9\ud83d\ude00 \u2028x');
  });

  it('a callback stored with its text keeps the text (b) and the places of its entries (x); read back and torn like any record', async function () {
    const file = path.join(dir, 'text.journal');
    const { inbox } = await open(file);
    // As asset-event-in hands them over: the text as body.ts read it, its entries as payload.ts read them.
    const stored = async (text, places) => {
      const json = withExactIntegers(text);
      const all = parseCallbackPayload(JSON.parse(json)).entries;
      const entries = places.map((i) => ({ key: orderKey(all[i].assetId), entry: all[i], revision: typeof all[i].rrn === 'number' ? all[i].rrn : undefined, receivedAt: '2026-01-01T00:00:00.000Z' }));
      await inbox.store(entries, { body: json, indexes: places, total: all.length });
      return places.map((i) => all[i]);
    };
    const first = await stored('{"success":true,"data":{"entry":[{"assetId":1,"rrn":5},{"assetId":"4","rrn":"9007199254740993"}]}}', [0, 1]);
    first[1].rrn.should.equal('9007199254740993');
    // Asset 1 at revision 3 is older than the stored 5: left out, so the record names the place of asset 2 only.
    const second = await stored('{"success":true,\n"data":{"entry":[\n{"assetId":1,"rrn":3},\n{"assetId":2,"rrn":1,"x":"a\\nb"}]}}', [0, 1]);
    await inbox.close();
    const stores = records(file).filter((r) => r.c !== undefined);
    stores.map((r) => [r.x, r.k]).should.eql([[undefined, [1, 4]], [[1], [2]]]);
    stores.forEach((r) => (r.e === undefined).should.be.true());
    const whole = fs.readFileSync(file);
    const lastStart = whole.lastIndexOf(0x0a, whole.length - 2) + 1;
    for (let cut = lastStart; cut < whole.length; cut++) {
      const torn = path.join(dir, `cut-${cut}.journal`);
      fs.writeFileSync(torn, whole.subarray(0, cut));
      const { inbox: again } = await open(torn);
      again.remaining().map((d) => d.entry).should.eql(first);
      await again.close();
    }
    const { inbox: intact } = await open(file);
    intact.remaining().map((d) => d.entry).should.eql([...first, second[1]]);
  });

  it('delivery counts and acknowledgements made while a write runs go out in one record', async function () {
    const file = path.join(dir, 'gathered.journal');
    const { inbox } = await open(file);
    await inbox.store(callback(1, 50));
    const taken = await inbox.take(50);
    (await Promise.all(taken.deliveries.map((d) => inbox.acknowledge(d.id, d.delivery)))).should.not.containEql(false);
    await inbox.close();
    const gathered = records(file).filter((r) => Array.isArray(r.a));
    gathered.length.should.be.belowOrEqual(2); // the counts may go in a write of their own
    gathered.flatMap((r) => r.a).length.should.equal(50);
    gathered.flatMap((r) => r.d).length.should.equal(50);
    const { inbox: again } = await open(file);
    assets(again).should.eql([]);
  });

  it('a journal of the one-record-per-entry format (before 0.1.0) loads: entries, counts, acknowledgements, parking, newest revisions', async function () {
    const file = path.join(dir, 'old.journal');
    const at = '2026-01-01T00:00:00.000Z';
    const sub = 'sub-old';
    fs.writeFileSync(file, [
      { i: 5, q: 5, h: [['7', 9, now - 1000]] }, // a compacted head with pairs
      { s: 5, k: '1', e: { assetId: 1, rrn: 2 }, v: 2, sub, at, n: 1 },
      { s: 6, k: '2', e: { assetId: 2, rrn: 3 }, v: 3, sub, at },
      { s: 7, k: '3', e: { assetId: 3, rrn: 4 }, v: 4, sub, at },
      { s: 8, k: '4', e: { assetId: 4, rrn: 5 }, v: 5, sub, at },
      { d: 6, n: 1 },
      { a: 6 },
      { d: 7, n: 1 },
      { p: 7, r: 'failed', pa: at },
      { d: 8, n: 3 } // deliveries spent: parked at load
    ].map(encodeRecord).join(''));
    const { inbox, load } = await open(file);
    load.loaded.should.equal(3);
    load.parkedAtLoad.map((p) => p.entry.assetId).should.eql([4]);
    assets(inbox).should.eql([1, 3, 4]);
    (await inbox.parked()).map((p) => p.entry.assetId).sort().should.eql([3, 4]);
    const next = await inbox.take(10);
    next.deliveries.map((d) => [d.entry.assetId, d.delivery, d.subscriptionId]).should.eql([[1, 2, sub]]);
    (await inbox.store([entry(7, 8)])).should.equal(1); // older than the pair's revision 9
    (await inbox.store([entry(9, 1)])).should.equal(0);
    Number(inbox.remaining().pop().id).should.be.above(8); // ids are not handed out again
  });

  it('a compacted file of before (newest revisions with whole times `ht`) loads: its revisions and times hold', async function () {
    const file = path.join(dir, 'whole-times.journal');
    fs.writeFileSync(file, encodeRecord({ i: 5, q: 5, hk: [8, 7], hv: [4, 9], ht: [now - REVISION_HORIZON_MS, now - 1000] }));
    const { inbox } = await open(file);
    (await inbox.store([{ ...entry(7, 8), key: 7 }])).should.equal(1); // older than 9, stored 1 s ago: kept out
    (await inbox.store([{ ...entry(8, 3), key: 8 }])).should.equal(0); // its time is past the horizon: forgotten
  });

  it('a journal whose keys are asset:<n> text (before keys were numbers) holds the same assets as numeric keys: order and newest revision', async function () {
    const file = path.join(dir, 'text-keys.journal');
    const at = '2026-01-01T00:00:00.000Z';
    fs.writeFileSync(file, [
      { i: 1, q: 1, hk: ['asset:7', 'asset:x'], hv: [9, 4], ht: [now - 1000, now - 1000] },
      { c: 1, k: ['asset:1', 'asset:2'], e: [{ assetId: 1, rrn: 2 }, { assetId: 2, rrn: 3 }], v: [2, 3], at }
    ].map(encodeRecord).join(''));
    const { inbox } = await open(file);
    const numeric = (assetId, rrn) => ({ ...entry(assetId, rrn), key: assetId });
    (await inbox.store([numeric(1, 5), numeric(7, 8)])).should.equal(1); // 7: older than the head's revision 9
    (await inbox.store([{ ...entry('x', 3), key: 'asset:x' }])).should.equal(1); // a text key stays text
    const first = await inbox.take(10);
    first.deliveries.map((d) => [d.key, d.entry.rrn]).should.eql([[1, 2], [2, 3]]); // the new entry of asset 1 waits behind the old one
    await inbox.acknowledge(first.deliveries[0].id, 1);
    (await inbox.take(10)).deliveries.map((d) => [d.key, d.entry.rrn]).should.eql([[1, 5]]);
  });

  // Stored as entries (`e`), or with the callback's text (`b`, as asset-event-in stores them).
  for (const withText of [false, true]) {
    const size = (r) => r.k.length;
    const store = (inbox, entries) => {
      if (!withText) return inbox.store(entries);
      const body = JSON.stringify({ success: true, data: { entry: entries.map((e) => e.entry) } });
      return inbox.store(entries, { body, indexes: entries.map((_, i) => i), total: entries.length });
    };
    it(`an entry the flow changed is delivered again, listed and compacted as stored, not as changed (${withText ? 'callback text' : 'entries'})`, async function () {
      const file = path.join(dir, 'owned.journal');
      const { inbox } = await open(file);
      await store(inbox, callback(1, 600));
      const first = await inbox.take(10000);
      // A flow changes its msg.payload in place (a change node does): the inbox's copy must not change with it.
      for (const d of first.deliveries) { d.entry.rrn = 'changed'; d.entry.added = true; }
      (await inbox.reject(first.deliveries[0].id, 1, 'failed')).should.equal('again');
      const again = await inbox.take(10);
      again.deliveries.map((d) => d.entry).should.eql([{ assetId: 1, rrn: 1 }]);
      again.deliveries[0].entry.rrn = 'changed again';
      inbox.remaining().slice(0, 2).map((d) => d.entry).should.eql([{ assetId: 1, rrn: 1 }, { assetId: 2, rrn: 1 }]);
      // Acknowledged in part, so compaction writes the others entry by entry: as stored.
      for (const d of first.deliveries) if (d.entry.assetId > 10) await inbox.acknowledge(d.id, d.delivery);
      await store(inbox, [entry(9999, 1)]);
      await inbox.close();
      records(file).some((r) => 'hk' in r).should.be.true(); // compacted
      const { inbox: reopened } = await open(file);
      reopened.remaining().map((d) => d.entry).should.eql([...callback(1, 10), entry(9999, 1)].map((e) => e.entry));
    });

    it(`compaction writes an untouched callback record as it was, the others entry by entry; what is left loads (${withText ? 'callback text' : 'entries'})`, async function () {
      const file = path.join(dir, 'compact.journal');
      const { inbox } = await open(file);
      await store(inbox, callback(1, 600)); // acknowledged in part: its entries are written one by one
      await store(inbox, callback(1000, 5)); // untouched (delivered once): its record is written again as it was
      const first = await inbox.take(10000);
      for (const d of first.deliveries) if (d.entry.assetId > 10 && d.entry.assetId < 1000) await inbox.acknowledge(d.id, d.delivery);
      await store(inbox, [entry(9999, 1)]);
      await inbox.close();
      const all = records(file);
      const head = all.findIndex((r) => 'hk' in r);
      head.should.be.aboveOrEqual(0); // compacted
      const after = all.slice(head);
      after.filter((r) => r.c !== undefined).map(size).should.eql([5, 1]); // 1000..1004 as written, then 9999
      after.filter((r) => r.c !== undefined).every((r) => (r.b !== undefined) === withText).should.be.true();
      after.filter((r) => r.s !== undefined).every((r) => r.e.assetId <= 600).should.be.true();
      const { inbox: again } = await open(file);
      assets(again).should.eql([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1000, 1001, 1002, 1003, 1004, 9999]);
      (await again.take(100)).deliveries.map((d) => d.delivery).should.eql([...new Array(15).fill(2), 1]);
    });
  }

  it('NewestRevisions: a store reserves a key\'s place at once and its revision counts once settled; one never settled leaves the revision as it was', function () {
    const newest = new NewestRevisions();
    newest.note('a', 5, 1);
    const a = newest.reserve('a', 2, 7);
    const b = newest.reserve('b', 2, 1);
    (newest.revision('a') === 5).should.be.true(); // not on disk yet: what was kept
    (newest.revision('b') === undefined).should.be.true();
    newest.isOlder('a', 6).should.be.true(); // 7 under way: an older re-send stays out
    newest.isOlder('b', 0).should.be.true();
    newest.isOlder('b', 1).should.be.false(); // a repeat of the same revision is stored
    newest.columns().keys.should.eql(['a']); // a compaction writes only revisions on disk
    newest.settle('a', a, 7, 3);
    newest.settle('b', b, 1, 3);
    newest.revision('a').should.equal(7);
    newest.revision('b').should.equal(1);
    // Two stores of one key under way at once settle to the newest, in either order.
    for (const order of [[0, 1], [1, 0]]) {
      const places = [8, 9].map((revision) => newest.reserve('c', 4, revision));
      order.forEach((i) => newest.settle('c', places[i], [8, 9][i], 5));
      newest.revision('c').should.equal(9);
    }
    // One older than a revision of the key under way (an earlier entry of the same callback) is not reserved.
    const under = newest.reserve('e', 4, 12);
    const before = newest.columns(true);
    newest.reserve('e', 4, 11).should.equal(OLDER_THAN_UNDER_WAY);
    newest.columns(true).should.eql(before);
    newest.reserve('e', 4, 12).should.not.equal(OLDER_THAN_UNDER_WAY); // the same revision again is reserved
    newest.settle('e', under, 12, 5);
    // A store that failed (never settled) leaves the key as it was; the log is rewritten meanwhile.
    newest.reserve('a', 6, 11);
    newest.release('a', 11);
    const late = newest.reserve('d', 6, 2);
    for (let t = 0; t < 10000; t++) newest.note(`k${t % 10}`, t, 7); // rewrites the log: places renumbered
    newest.revision('a').should.equal(7);
    newest.settle('d', late, 2, 8); // moved by the rewrite: settled as a note
    newest.revision('d').should.equal(2);
    newest.columns().keys.should.containDeep(['a', 'b', 'c', 'd']);
    // A log where every key has one place (columns are slices of it): a reserved new key is still left out.
    const fresh = new NewestRevisions();
    for (const k of ['k1', 'k2', 'k3']) fresh.note(k, 1, 1);
    const k4 = fresh.reserve('k4', 2, 3);
    fresh.columns().should.eql({ keys: ['k1', 'k2', 'k3'], revisions: [1, 1, 1], times: [1, 1, 1] });
    fresh.settle('k4', k4, 3, 2);
    fresh.columns().should.eql({ keys: ['k1', 'k2', 'k3', 'k4'], revisions: [1, 1, 1, 3], times: [1, 1, 1, 2] });
  });

  it('NewestRevisions: revisions under way count for isOlder until settled or released, also when stores of a key overlap or fail', function () {
    const newest = new NewestRevisions();
    newest.note(7, 4, 1);
    newest.reserve(7, 2, 5);
    newest.reserve(7, 2, 6); // a second store of the key, under way at once
    newest.isOlder(7, 5).should.be.true();
    newest.release(7, 6); // its write failed
    newest.isOlder(7, 5).should.be.false();
    newest.isOlder(7, 4).should.be.true();
    newest.release(7, 5); // failed too: back to what is on disk
    newest.isOlder(7, 4).should.be.false();
    newest.revision(7).should.equal(4);
    // One callback with two entries of a new key, failed: nothing of them counts.
    newest.reserve(8, 3, 2);
    newest.reserve(8, 3, 3);
    newest.release(8, 2);
    newest.release(8, 3);
    newest.isOlder(8, 1).should.be.false();
    (newest.revision(8) === undefined).should.be.true();
    // Settled after the log was rewritten during the write: as a note, and no longer under way.
    const nine = newest.reserve(9, 4, 9);
    for (let t = 0; t < 10000; t++) newest.note(`k${t % 10}`, t, 5);
    newest.settle(9, nine, 9, 6);
    newest.revision(9).should.equal(9);
    newest.isOlder(9, 9).should.be.false();
  });

  it('an entry older than an earlier one of its asset in the same callback is left out, as in the Redis Stream inbox (text and entries)', async function () {
    const file = path.join(dir, 'within.journal');
    const { inbox } = await open(file);
    const text = '{"success":true,"data":{"entry":[{"assetId":1,"rrn":5},{"assetId":1,"rrn":3},{"assetId":2,"rrn":1},{"assetId":1,"rrn":7},{"assetId":1,"rrn":6}]}}';
    const all = parseCallbackPayload(JSON.parse(text)).entries;
    const places = [0, 1, 2, 3, 4];
    const entries = places.map((i) => ({ key: all[i].assetId, entry: all[i], revision: all[i].rrn, receivedAt: '2026-01-01T00:00:00.000Z' }));
    (await inbox.store(entries, { body: text, indexes: places, total: all.length })).should.equal(2); // rrn 3 and 6 left out
    (await inbox.store([entry(3, 2), entry(3, 1), entry(3, 2)])).should.equal(1); // without the text; an equal one stays
    const order = [];
    for (;;) {
      const { deliveries } = await inbox.take(10);
      if (!deliveries.length) break;
      for (const d of deliveries) { order.push([d.entry.assetId, d.entry.rrn]); await inbox.acknowledge(d.id, d.delivery); }
    }
    order.should.eql([[1, 5], [2, 1], [3, 2], [1, 7], [3, 2]]);
    inbox.state.newest.revision(1).should.equal(7);
    await inbox.close();
    const stores = records(file).filter((r) => r.c !== undefined);
    stores[0].x.should.eql([0, 2, 3]); // the places of those stored in the callback's text
    const { inbox: again } = await open(file);
    again.remaining().should.eql([]);
  });

  it('a callback of few entries beside megabytes of other fields is stored as entries, not as its whole text', async function () {
    // Before: the whole text was kept in memory and in the journal until the entry was
    // acknowledged (5 such callbacks of 40 MB: 244 MB of heap and a 200 MB journal).
    const file = path.join(dir, 'padded.journal');
    const { inbox } = await open(file);
    const json = JSON.stringify({ success: true, data: { entry: [{ assetId: 1, rrn: 1 }] }, x: 'x'.repeat(1e6) });
    const all = parseCallbackPayload(JSON.parse(json)).entries;
    await inbox.store([{ ...entry(1, 1), entry: all[0] }], { body: json, indexes: [0], total: 1 });
    await inbox.close();
    fs.statSync(file).size.should.be.below(10000);
    const { inbox: again } = await open(file);
    again.remaining().map((d) => d.entry).should.eql([all[0]]);
  });

  it('a callback of which few entries are stored (a large retry) is stored as entries, not as its whole text', async function () {
    const file = path.join(dir, 'few.journal');
    const { inbox } = await open(file);
    const json = JSON.stringify({ success: true, data: { entry: [1, 2, 3, 4].map((a) => ({ assetId: a, rrn: 1 })) } });
    const all = parseCallbackPayload(JSON.parse(json)).entries;
    const stored = (places) => inbox.store(places.map((i) => entry(all[i].assetId, 1)).map((e, n) => ({ ...e, entry: all[places[n]] })), { body: json, indexes: places, total: 4 });
    await stored([3]); // 1 of 4
    await stored([0, 1]); // 2 of 4: the text
    await inbox.close();
    const stores = records(file).filter((r) => r.c !== undefined);
    stores.map((r) => [r.e !== undefined, r.b !== undefined, r.x]).should.eql([[true, false, undefined], [false, true, undefined]]);
    const { inbox: again } = await open(file);
    again.remaining().map((d) => d.entry).should.eql([all[3], all[0], all[1]]);
  });

  it('a refused callback (inbox full) leaves the newest revisions as they were', async function () {
    const file = path.join(dir, 'full.journal');
    const { inbox } = await open(file, { maxEntries: 2 });
    await inbox.store([entry(1, 5), entry(4, 1)]);
    const before = inbox.state.newest.size;
    await inbox.store([entry(2, 1), entry(3, 1)]).should.be.rejectedWith(/inbox full/);
    inbox.state.newest.size.should.equal(before);
    inbox.state.newest.columns().should.eql(inbox.state.newest.columns(true)); // nothing reserved left behind
  });

  it('a store whose write fails leaves the newest revisions\' values as they were: the server\'s retry is stored', async function () {
    const file = path.join(dir, 'failed.journal');
    const { inbox } = await open(file);
    await inbox.store([entry(1, 5)]);
    await inbox.journal.handle.close(); // the next write fails
    await inbox.store([entry(1, 7), entry(2, 1)]).should.be.rejected();
    inbox.state.newest.isOlder('1', 6).should.be.false();
    inbox.state.newest.isOlder('2', 0).should.be.false();
    inbox.state.newest.isOlder('1', 4).should.be.true();
  });

  it('NewestRevisions: one place per key, in time order, through many notes of the same keys and forgetting', function () {
    const newest = new NewestRevisions();
    for (let t = 0; t < 20000; t++) newest.note(`k${t % 10}`, t, t); // 2000 notes each: the log is rewritten on the way
    newest.size.should.equal(10);
    newest.revision('k3').should.equal(19993);
    newest.note('k3', 5, 30000); // older: no change
    newest.revision('k3').should.equal(19993);
    newest.columns().keys.should.eql(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9']);
    newest.forget(19995 + 100, 100, (key) => key === 'k1'); // k0..k5 are old; k1 is kept with the time now
    newest.columns().keys.should.eql(['k6', 'k7', 'k8', 'k9', 'k1']);
    newest.columns().times.should.eql([19996, 19997, 19998, 19999, 20095]);
    (newest.revision('k0') === undefined).should.be.true();
    newest.revision('k1').should.equal(19991);
  });
});
