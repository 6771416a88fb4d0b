'use strict';
// asset-event-in with an asset-redis node: the rules of issue 24 item 5 for the Redis Stream inbox
// (test helper and a real redis-server on a free port).
// - Switched back to "at most once", the node sends what the stream holds first, once each, in
//   order per asset, then the stream's keys go. Two copies draining at once never both send one.
// - Removed from one copy's flows, the stream stays (other copies may run it), with a warning
//   naming how many entries not acknowledged stay and the keys to delete by hand.
require('should');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const redisNode = require('../../nodes/asset-redis.js');
const { RedisStreamInbox } = require('../../dist/events/inbox');
const Redis = require('ioredis');
const { useRedisRig } = require('../lib/redis-rig');

helper.init(require.resolve('node-red'));

const PREFIX = 'dam:dedup:{n1}:in:';
const entry = (assetId, rrn) => ({ assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action: 'modified' });
const payload = (entries) => ({ success: true, data: { entry: entries }, id: 'sub-stream-0001' });
const name = (m) => `${m.payload.assetId}/${m.payload.rrn}`;

describe('asset-event-in, Redis Stream inbox: switched back to at most once, and removed (test helper, real redis-server)', function () {
  this.timeout(30000);
  let server, direct, app, hooks, seen, onDeliver;

  const rig = useRedisRig(helper, { tempPrefix: 'dam-event-in-leftovers-' });
  before(() => { ({ server, direct } = rig); });
  afterEach(() => { onDeliver = undefined; if (hooks) hooks.remove('*.leftoversTest'); return helper.unload(); });
  beforeEach(async () => { await direct.flushall(); });

  /** The work node holds every msg (nothing acknowledged) and records what reaches it. */
  const flow = (extra = {}) => [
    { id: 'f1', type: 'tab' },
    { id: 'r1', type: 'asset-redis', name: 'shared', url: server.url, timeout: 2000, lease: 5 },
    { id: 'n1', z: 'f1', x: 1, y: 1, type: 'asset-event-in', path: '/dam/leftovers', redis: 'r1', delivery: 'atLeastOnce', visibilityTimeout: 60, outputs: 2, wires: [['w1'], []], ...extra },
    { id: 'w1', z: 'f1', x: 1, y: 1, type: 'helper' } // x and y: Node-RED takes a node without them for a config node
  ];
  // What reaches w1, recorded by a runtime hook: it also sees what a node sends while the flows
  // start, before a listener could be put on the new helper node.
  function wire() {
    seen = [];
  }
  async function load() {
    await helper.load([redisNode, eventAck, (RED) => {
      app = RED.httpNode;
      hooks = require('@node-red/util').hooks; // the runtime's (the test helper's RED has none)
      hooks.add('postDeliver.leftoversTest', (event) => { if (event.destination.id === 'w1') { seen.push(event.msg); onDeliver?.(event); } });
      return eventIn(RED);
    }], flow());
    wire();
  }
  const post = (body) => request(app).post('/dam/leftovers').set('Content-Type', 'application/json').send(body).expect(200);
  async function until(check, what) {
    for (let i = 0; i < 2000; i++) { if (await check()) return; await new Promise((r) => setTimeout(r, 10)); }
    throw new Error(`timed out waiting for ${what}`);
  }
  const inboxKeys = async () => (await direct.keys(`${PREFIX}*`)).filter((k) => !/:in:[vd]:/.test(k)).sort(); // v: and d: expire by themselves
  const warnings = (from) => helper.log().args.slice(from).map((a) => a[0]).filter((m) => m && m.level === 30).map((m) => String(m.msg));

  it('switched back to "at most once": every stored entry is sent once, in order per asset, then the stream keys are gone', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20), entry(1, 11)]));
    await post(payload([entry(3, 30), entry(1, 12), entry(2, 21)]));
    await until(() => seen.length === 3, 'the first entry of each asset in flight');
    (await direct.xlen(`${PREFIX}s`)).should.equal(6);
    const from = helper.log().args.length;
    wire();
    await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }), 'full');
    await until(() => seen.length >= 6, 'the six stored entries');
    await until(async () => (await inboxKeys()).length === 0, 'the stream, its lines and counts removed');
    seen.length.should.equal(6, 'each once');
    const of = (asset) => seen.filter((m) => m.payload.assetId === asset).map(name);
    of(1).should.eql(['1/10', '1/11', '1/12']);
    of(2).should.eql(['2/20', '2/21']);
    of(3).should.eql(['3/30']);
    seen.forEach((m) => (m._inbox === undefined).should.be.true('no handle: at most once'));
    seen.find((m) => name(m) === '1/10').redelivered.should.equal(1, 'it was delivered once before');
    (seen.find((m) => name(m) === '1/11').redelivered === undefined).should.be.true();
    await until(() => warnings(from).some((w) => /the 6 entries left in the Redis inbox were sent and taken out of it/.test(w)), 'the warning with the count');
    // Still at most once: a new callback goes straight through, nothing is stored.
    await post(payload([entry(4, 40)]));
    await until(() => seen.length === 7, 'the new entry');
    (await inboxKeys()).should.eql([]);
  });

  /** A direct inbox on a connection of its own: another copy of Node-RED still in "at least once". */
  async function otherCopy(options = {}) {
    const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    const inbox = new RedisStreamInbox(client, { prefix: PREFIX, windowMs: 0, timeoutMs: 5000, maxEntries: 10000, maxInFlight: 10, visibilityTimeoutMs: 60000, maxDeliveries: 5, backoffMs: 0, ...options });
    return { inbox, disconnect: () => client.disconnect() };
  }
  /** Takes until `count` deliveries started (the inbox reads Redis at its poll interval). */
  async function takeAll(inbox, count) {
    const held = [];
    await until(async () => { held.push(...(await inbox.take(10)).deliveries); return held.length >= count; }, `${count} deliveries`);
    return held;
  }
  /** Replaces the drain of every Redis Stream inbox for one test (put back by `restore`). */
  function wrapDrain(wrapper) {
    const original = RedisStreamInbox.prototype.drain;
    RedisStreamInbox.prototype.drain = function (...args) { return wrapper.call(this, original.bind(this), ...args); };
    return () => { RedisStreamInbox.prototype.drain = original; };
  }

  /** Deploys `flows` and waits until the node's drain has had a first answer from Redis. */
  async function drainLooking(flows) {
    let answered = 0;
    const restore = wrapDrain(async (drain, ...args) => { const reply = await drain(...args); answered++; return reply; });
    try {
      await helper.setFlows(flows, 'full');
      await until(() => answered > 0, 'the drain looking at what the other copy holds');
    } finally { restore(); }
  }

  it('a drain whose answer is lost (Redis ran it, the reply timed out): its entries are given out again at the next pass, none lost', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20), entry(1, 11)]));
    await until(() => seen.length === 2, 'in flight');
    let lost = 0;
    const restore = wrapDrain(async (drain, ...args) => {
      const reply = await drain(...args);
      if (lost === 0 && reply.entries.length > 0) { lost = reply.entries.length; throw new Error('Redis did not answer within 2000 ms'); }
      return reply;
    });
    try {
      wire();
      await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }), 'full'); // Ack within 60 s: not waited for
      await until(() => lost > 0, 'a drain that took entries and lost its answer');
      await until(async () => (await inboxKeys()).length === 0, 'the stream, its lines and counts removed');
      seen.map(name).sort().should.eql(['1/10', '1/11', '2/20'], 'each sent once');
      seen.find((m) => name(m) === '1/10').redelivered.should.equal(1, 'delivered once before (a give-out is not a delivery)');
    } finally { restore(); }
  });

  it('closed while a drain is under way: nothing is sent after the close began, and the node redeployed "at least once" delivers every entry', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20), entry(1, 11)]));
    await until(() => seen.length === 2, 'in flight');
    let reached, open;
    const atGate = new Promise((r) => { reached = r; });
    const gate = new Promise((r) => { open = r; });
    // Sent to Redis at once, answered to the node only once its close began.
    const restore = wrapDrain(async (drain, ...args) => { const reply = drain(...args); reached(); await gate; return reply; });
    let closing = false;
    const late = [];
    onDeliver = (event) => { if (closing && event.source.node === drained) late.push(event.msg); };
    let drained;
    try {
      wire();
      await helper.setFlows(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }), 'nodes');
      await atGate;
      drained = helper.getNode('n1');
      drained.on('close', () => { closing = true; open(); });
      await helper.setFlows(flow(), 'nodes');
    } finally { restore(); open(); }
    await until(() => seen.filter((m) => m._inbox).length === 2, 'the first entry of each asset delivered at least once by the new node');
    late.should.eql([], 'nothing sent by the closed node');
    seen.filter((m) => m._inbox).map(name).sort().should.eql(['1/10', '2/20']);
  });

  it('closed in a deploy that restarts asset-redis, a drain answered after its QUIT: what it gave out goes back at once', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20), entry(1, 11)]));
    await until(() => seen.length === 2, 'in flight');
    await helper.setFlows(flow().filter((n) => n.id !== 'n1' && n.id !== 'w1'), 'full'); // released: idle = Ack within
    const other = await otherCopy();
    const pauser = new Redis(server.url, { maxRetriesPerRequest: 0 });
    pauser.on('error', () => undefined);
    const quit = Redis.prototype.quit;
    let reached, go;
    const atGate = new Promise((r) => { reached = r; });
    const gate = new Promise((r) => { go = r; });
    let armed = false;
    const restore = wrapDrain(async (drain, ...args) => { if (armed) { armed = false; reached(); await gate; } return drain(...args); });
    try {
      await takeAll(other.inbox, 2); // held elsewhere: the node's drain finds nothing to give out yet
      wire();
      await drainLooking(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }));
      armed = true;
      await atGate;
      await other.inbox.close(); // the entries are free now, for the drain held at the gate
      // Writes paused: the drain waits in Redis, and what its connection sends after it (QUIT included) waits behind it.
      await pauser.client('PAUSE', 60000, 'WRITE');
      go();
      // asset-redis's QUIT, sent after the node's last commands, lets Redis go on: the drain is answered after it.
      Redis.prototype.quit = function (...args) { const quitting = quit.apply(this, args); pauser.client('UNPAUSE').catch(() => undefined); return quitting; };
      wire();
      await helper.setFlows(flow(), 'full');
    } finally {
      Redis.prototype.quit = quit;
      restore();
      go();
      await pauser.client('UNPAUSE').catch(() => undefined);
      pauser.disconnect();
      other.disconnect();
    }
    await until(() => seen.filter((m) => m._inbox).length === 2, 'the first entry of each asset delivered at once by the node redeployed at least once (Ack within: 60 s)');
    seen.filter((m) => m._inbox).map(name).sort().should.eql(['1/10', '2/20']);
    seen.filter((m) => !m._inbox).should.eql([], 'nothing sent by the closed node');
  });

  it('redeployed "at least once" in a deploy that restarts asset-redis while a take is under way: what it held is let go before the QUIT', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20), entry(1, 11)]));
    await until(() => seen.length === 2, 'in flight');
    const pauser = new Redis(server.url, { maxRetriesPerRequest: 0 });
    pauser.on('error', () => undefined);
    const proto = RedisStreamInbox.prototype;
    const { script, close } = proto;
    let taking;
    const takeSent = new Promise((r) => { taking = r; });
    let armed = false;
    try {
      // Writes paused: the next take waits in Redis, so its pipeline is under way when the node closes.
      await pauser.client('PAUSE', 60000, 'WRITE');
      proto.script = function (name, ...args) { const out = script.call(this, name, ...args); if (armed && name === 'take') taking(); return out; };
      armed = true;
      await takeSent;
      for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r)); // auto-pipelining writes it one setImmediate later
      // Redis goes on once the node's release is queued behind that take (asset-redis's QUIT follows within two setImmediates).
      proto.close = function (...args) { const out = close.apply(this, args); pauser.client('UNPAUSE').catch(() => undefined); return out; };
      wire();
      await helper.setFlows(flow(), 'full');
    } finally {
      Object.assign(proto, { script, close });
      await pauser.client('UNPAUSE').catch(() => undefined);
      pauser.disconnect();
    }
    await until(() => seen.filter((m) => m._inbox).length === 2, 'the first entry of each asset delivered at once by the redeployed node (Ack within: 60 s)');
    seen.map(name).sort().should.eql(['1/10', '2/20']);
  });

  it('a parked entry drained while another copy still in "at least once" holds its asset: that copy never gets it', async function () {
    const other = await otherCopy({ maxDeliveries: 1 });
    try {
      await load();
      await helper.setFlows(flow().filter((n) => n.id !== 'n1' && n.id !== 'w1'), 'full');
      const stored = (e) => other.inbox.store([{ key: `asset:${e.assetId}`, entry: e, revision: e.rrn, receivedAt: 'now' }]);
      await stored(entry(1, 10));
      const [first] = await takeAll(other.inbox, 1);
      (await other.inbox.reject(first.id, first.delivery, 'test: the flow failed')).should.have.property('reason'); // parked: its one delivery
      await stored(entry(1, 11));
      const [second] = await takeAll(other.inbox, 1);
      second.entry.rrn.should.equal(11);
      wire();
      await drainLooking(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }));
      await until(() => seen.length === 1, 'the parked entry sent');
      (await other.inbox.acknowledge(second.id, second.delivery)).should.be.true();
      const taken = [];
      await until(async () => { taken.push(...(await other.inbox.take(10)).deliveries); return (await inboxKeys()).length === 0; }, 'the keys removed');
      taken.map((d) => d.entry.rrn).should.eql([], 'the other copy took nothing');
      seen.map(name).should.eql(['1/10']);
    } finally { other.disconnect(); }
  });

  it('an entry parked by another copy while the node drains: it is sent too, and the drain ends', async function () {
    await load();
    await post(payload([entry(1, 10), entry(2, 20)]));
    await until(() => seen.length === 2, 'in flight');
    await helper.setFlows(flow().filter((n) => n.id !== 'n1' && n.id !== 'w1'), 'full'); // released: idle = Ack within
    const other = await otherCopy({ maxDeliveries: 2 }); // the second delivery is its last
    try {
      const held = await takeAll(other.inbox, 2);
      wire();
      const from = helper.log().args.length;
      await drainLooking(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }));
      (await other.inbox.reject(held[0].id, held[0].delivery, 'test: the flow failed')).should.have.property('reason'); // parked
      (await other.inbox.acknowledge(held[1].id, held[1].delivery)).should.be.true();
      await until(async () => (await inboxKeys()).length === 0, 'the parked entry drained, the keys removed');
      seen.map(name).should.eql([`${held[0].entry.assetId}/${held[0].entry.rrn}`]);
      await until(() => warnings(from).some((w) => /the 1 entries left in the Redis inbox were sent and taken out of it/.test(w)), 'the end of the drain');
    } finally { other.disconnect(); }
  });

  it('removed while "at most once" with entries another copy holds: a warning names the count and the keys', async function () {
    await load();
    await post(payload([entry(1, 10), entry(1, 11)]));
    await until(() => seen.length === 1, 'in flight');
    await helper.setFlows(flow().filter((n) => n.id !== 'n1' && n.id !== 'w1'), 'full');
    const other = await otherCopy();
    try {
      await takeAll(other.inbox, 1);
      wire();
      await drainLooking(flow({ delivery: 'atMostOnce', outputs: 1, wires: [['w1']] }));
      const from = helper.log().args.length;
      await helper.setFlows(flow().filter((n) => n.id !== 'n1'), 'full');
      const said = warnings(from).join('\n');
      said.should.match(/node removed: 2 entries not acknowledged stay in Redis for it/);
      said.should.containEql(`delete the keys ${PREFIX}* by hand`);
      seen.should.eql([], 'the asset held by the other copy stays with it');
    } finally { other.disconnect(); }
  });

  it('removed from this copy\'s flows: the stream stays for the other copies, with a warning naming the count and the keys', async function () {
    await load();
    await post(payload([entry(1, 10), entry(1, 11), entry(2, 20)]));
    await until(() => seen.length === 2, 'in flight');
    const from = helper.log().args.length;
    await helper.setFlows(flow().filter((n) => n.id !== 'n1'), 'full');
    const said = warnings(from).join('\n');
    said.should.match(/node removed: 3 entries not acknowledged stay in Redis for it; other copies running this node still deliver them/);
    said.should.containEql(`delete the keys ${PREFIX}* by hand`);
    (await direct.xlen(`${PREFIX}s`)).should.equal(3, 'kept for the other copies');
    // What it held was let go in the same deploy (asset-redis closing too): another copy takes it at once, not after "Ack within".
    const other = await otherCopy();
    try {
      (await takeAll(other.inbox, 2)).map((d) => `${d.entry.assetId}/${d.entry.rrn}`).sort().should.eql(['1/10', '2/20']);
    } finally { other.disconnect(); }
  });

  it('two copies draining the same stream at once: each entry taken by one only, an asset\'s entries in order by one copy', async function () {
    const options = { prefix: PREFIX, windowMs: 0, timeoutMs: 5000, maxEntries: 10000, maxInFlight: 10, visibilityTimeoutMs: 60000, maxDeliveries: 5, backoffMs: 0 };
    const clients = [0, 1, 2].map(() => { const c = new Redis(server.url, { maxRetriesPerRequest: 0 }); c.on('error', () => undefined); return c; });
    try {
      const [storer, a, b] = clients.map((c) => new RedisStreamInbox(c, options));
      const stored = [];
      for (let i = 0; i < 300; i++) stored.push({ key: `asset:${i % 17}`, entry: { assetId: i % 17, rrn: i }, revision: i, receivedAt: 'now' });
      // The first entry of asset 5 in flight on a copy still in at least once: its asset is left to it until acknowledged.
      const holder = storer;
      await storer.store([stored[5]]);
      let held;
      for (let i = 0; i < 50 && !held; i++) held = (await holder.take(10)).deliveries[0];
      held.entry.should.eql({ assetId: 5, rrn: 5 });
      const others = stored.filter((_, i) => i !== 5);
      for (let i = 0; i < others.length; i += 50) await storer.store(others.slice(i, i + 50));
      const drained = { a: [], b: [] };
      const drainAll = async (inbox, into) => {
        let start = '-';
        for (let pass = 0; pass < 1000; pass++) {
          const r = await inbox.drain(start, 7);
          into.push(...r.entries.map((d) => d.entry));
          const left = r.entries.length > 0 ? await inbox.drained(r.entries) : r.left;
          if (left === 0 || (r.next === '-' && r.entries.length === 0)) return left;
          start = r.next;
        }
        throw new Error('no end');
      };
      await Promise.all([drainAll(a, drained.a), drainAll(b, drained.b)]);
      const all = [...drained.a, ...drained.b];
      const asset5 = stored.filter((s) => s.entry.assetId === 5).length;
      all.length.should.equal(300 - asset5, 'all but the held asset, each once');
      new Set(all.map((e) => e.rrn)).size.should.equal(all.length);
      (await direct.xlen(`${PREFIX}s`)).should.equal(asset5, 'the held asset stays stored');
      for (const side of [drained.a, drained.b]) {
        for (let asset = 0; asset < 17; asset++) {
          const rrns = side.filter((e) => e.assetId === asset).map((e) => e.rrn);
          rrns.should.eql([...rrns].sort((x, y) => x - y), `asset ${asset} in order`);
          if (rrns.length > 0) all.filter((e) => e.assetId === asset).length.should.equal(rrns.length, `asset ${asset} on one copy only`);
        }
      }
      // Acknowledged by its holder: the rest of its asset goes, then the keys.
      (await holder.acknowledge(held.id, held.delivery)).should.be.true();
      const rest = [];
      (await drainAll(a, rest)).should.equal(0);
      rest.map((e) => e.rrn).should.eql(stored.filter((s) => s.entry.assetId === 5).map((s) => s.entry.rrn).slice(1));
      (await inboxKeys()).should.eql([]);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });
});
