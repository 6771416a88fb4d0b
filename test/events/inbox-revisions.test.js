'use strict';
// The inbox's newest revision per asset is bounded: forgotten REVISION_HORIZON_MS after it was stored,
// once nothing of the asset is in the inbox; until then a re-sent older entry stays out. Real files, a
// clock the test moves.
require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { JournalInbox, parseJournal } = require('../../dist/events/inbox');
const { InboxState, REVISION_HORIZON_MS, REVISION_KEYS_MAX, newRecord } = require('../../dist/events/inbox/inbox-state');

const H = REVISION_HORIZON_MS;

describe('events: inbox newest revisions are forgotten after the retry horizon', function () {
  let dir;
  let now;
  const opened = [];
  const options = (extra = {}) => ({ maxEntries: 5000, maxInFlight: 5000, visibilityTimeoutMs: 60000, maxDeliveries: 1, backoffMs: 0, now: () => now, ...extra });
  const revised = (assetId, rrn) => ({ key: String(assetId), entry: { assetId, rrn }, revision: rrn, receivedAt: new Date(now).toISOString() });
  async function open(file) {
    const result = await JournalInbox.open(file, options());
    opened.push(result.inbox);
    return result.inbox;
  }
  async function drain(inbox) {
    const out = [];
    for (;;) {
      const taken = await inbox.take(5000);
      if (!taken.deliveries.length) return out;
      for (const d of taken.deliveries) out.push(`${d.entry.assetId}/${d.entry.rrn}`);
      (await Promise.all(taken.deliveries.map((d) => inbox.acknowledge(d.id, d.delivery)))).should.not.containEql(false);
    }
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-rev-'));
    now = Date.parse('2026-03-01T12:00:00.000Z');
  });
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the horizon covers the server\'s retries (spec section 3: 3 retries, 1 minute apart)', function () {
    H.should.be.aboveOrEqual(3 * 60 * 1000);
  });

  it('an acknowledged asset\'s newest revision keeps an older re-send out until the horizon, then is forgotten', async function () {
    const inbox = await open(path.join(dir, 'a.journal'));
    await inbox.store([revised(1, 5)]);
    (await drain(inbox)).should.eql(['1/5']);
    now += H - 1;
    (await inbox.store([revised(1, 3)])).should.equal(1); // a re-send: left out
    now += 1;
    (await inbox.store([revised(1, 3)])).should.equal(0); // past the horizon: no re-send can come, so it is new
    (await drain(inbox)).should.eql(['1/3']);
  });

  it('an asset with an entry still in the inbox (parked) keeps its newest revision past the horizon', async function () {
    const inbox = await open(path.join(dir, 'b.journal'));
    await inbox.store([revised(1, 5)]);
    const [d] = (await inbox.take(1)).deliveries;
    (await inbox.reject(d.id, d.delivery, 'failed')).should.have.property('reason', 'failed'); // parked
    now += 3 * H;
    (await inbox.store([revised(1, 3)])).should.equal(1); // rev 5 is still in the inbox: 3 would go after it
    (await inbox.discard(d.id)).should.be.true();
    now += H - 1;
    (await inbox.store([revised(1, 3)])).should.equal(1); // kept a horizon from when it was last found in the inbox
    now += H;
    (await inbox.store([revised(1, 3)])).should.equal(0);
  });

  it('the times survive a restart, also through a compaction', async function () {
    const file = path.join(dir, 'c.journal');
    let inbox = await open(file);
    await inbox.store([revised(1, 5)]);
    await drain(inbox);
    const filler = [];
    for (let i = 100; i < 1700; i++) filler.push(revised(i, 1));
    now += 1000;
    await inbox.store(filler);
    await drain(inbox);
    await inbox.store([{ key: 'none', entry: {}, receivedAt: new Date(now).toISOString() }]);
    await drain(inbox); // a write after the acknowledgements compacts
    await inbox.close();
    const records = parseJournal(fs.readFileSync(file)).records;
    const head = records.find((r) => 'hk' in r);
    head.should.be.ok(); // compacted: the first record holds the newest revisions with their times
    const at = head.hk.indexOf('1');
    [head.hk[at], head.hv[at], head.hb + head.ho[at]].should.eql(['1', 5, now - 1000]);
    head.ho.every((t) => t >= 0 && t < 10 * 60 * 1000).should.be.true(); // offsets from the oldest time, not times
    now += H - 1001;
    inbox = await open(file);
    (await inbox.store([revised(1, 3)])).should.equal(1);
    await inbox.close();
    now += 1;
    inbox = await open(file);
    (await inbox.store([revised(1, 3)])).should.equal(0);
    (await inbox.store([revised(100, 0)])).should.equal(1); // stored 1 s later: still kept
  });

  it('the map holds only what the horizon needs: a compacted file after it carries none of the old assets', async function () {
    const file = path.join(dir, 'd.journal');
    const inbox = await open(file);
    const batch = [];
    for (let i = 1; i <= 3000; i++) batch.push(revised(i, 1));
    await inbox.store(batch);
    await drain(inbox);
    now += H;
    // Enough new entries (no revision) to compact again: the old assets are forgotten first.
    const more = [];
    for (let i = 0; i < 4000; i++) more.push({ key: `none:${i}`, entry: { i }, receivedAt: new Date(now).toISOString() });
    await inbox.store(more);
    await drain(inbox);
    await inbox.store([{ key: 'none', entry: {}, receivedAt: new Date(now).toISOString() }]);
    await drain(inbox);
    await inbox.close();
    const records = parseJournal(fs.readFileSync(file)).records;
    const head = records.find((r) => 'hk' in r);
    head.should.be.ok();
    head.hk.should.eql([]);
  });

  it('InboxState: forgetting walks the oldest first and stops at the first young one (clock given)', function () {
    const state = new InboxState({ maxInFlight: 10, visibilityTimeoutMs: 1000, maxDeliveries: 3, backoffMs: 0 });
    for (let i = 0; i < 10000; i++) state.noteRevision(`k${i}`, i, i);
    state.noteRevision('k0', 7, 20000); // newer revision stored later: moves to the young end
    state.forgetOldRevisions(H + 5000); // keys stored at 0..5000 are H old
    state.newest.size.should.equal(10000 - 5000); // k1..k5000 forgotten; k0 kept (stored at 20000)
    state.newest.isOlder('k0', 6).should.be.true();
    state.newest.isOlder('k1', 0).should.be.false();
    state.newest.isOlder('k9999', 9998).should.be.true();
    state.forgetOldRevisions(H + 20000);
    state.newest.size.should.equal(0);
  });

  it('InboxState: a flood of new assets within the horizon holds the bound; the oldest acknowledged go first, assets in the inbox stay', function () {
    REVISION_KEYS_MAX.should.be.aboveOrEqual(100000); // far above what a busy repository changes within the 10-minute horizon
    const state = new InboxState({ maxInFlight: 10, visibilityTimeoutMs: 1000, maxDeliveries: 3, backoffMs: 0, revisionKeysMax: 5 });
    state.add(newRecord(1, 'k0', { assetId: 0 }, 'x', undefined, 0)); // k0 has an entry in the inbox
    for (let i = 0; i < 12; i++) state.noteRevision(`k${i}`, i, 1000 + i);
    state.forgetOldRevisions(2000).should.equal(6); // all young: 12 keys, 5 + 1 (in the inbox) kept
    state.newest.size.should.equal(6);
    state.newest.isOlder('k0', -1).should.be.true(); // in the inbox: kept, though the oldest
    for (let i = 1; i <= 6; i++) state.newest.isOlder(`k${i}`, -1).should.be.false();
    for (let i = 7; i < 12; i++) state.newest.isOlder(`k${i}`, -1).should.be.true();
    state.forgetOldRevisions(2000).should.equal(0);
  });

  it('a flood of new assets within the horizon: the map holds its bound, said once in a warning', async function () {
    const warnings = [];
    const result = await JournalInbox.open(path.join(dir, 'f.journal'), options({ revisionKeysMax: 3, warn: (text) => warnings.push(text) }));
    opened.push(result.inbox);
    const inbox = result.inbox;
    for (let id = 1; id <= 6; id++) { await inbox.store([revised(id, 10)]); now += 1; }
    (await drain(inbox)).should.have.length(6);
    await inbox.store([revised(7, 10)]);
    warnings.should.have.length(1);
    warnings[0].should.match(/^inbox: 3 assets' newest revisions forgotten before the 10-minute horizon \(more than 3 assets within it\)/);
    (await inbox.store([revised(6, 9)])).should.equal(1); // among the newest: a re-send stays out
    (await inbox.store([revised(1, 9)])).should.equal(0); // forgotten early: taken as new (what the warning says)
    await drain(inbox);
    for (let id = 8; id <= 11; id++) await inbox.store([revised(id, 10)]);
    await drain(inbox);
    await inbox.store([revised(12, 10)]); // more forgotten early, within the minute: not said yet
    warnings.should.have.length(1);
    now += 60000;
    await inbox.store([revised(13, 10)]);
    warnings.should.have.length(2); // a minute later: what went meanwhile, counted together
    warnings[1].should.match(/^inbox: 6 assets' newest revisions forgotten/);
  });
});
