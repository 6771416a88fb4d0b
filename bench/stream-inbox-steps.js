'use strict';
// Where an at-least-once entry's Redis time goes, without Node-RED: callbacks of N entries through
// the Redis Stream inbox (store; take In flight 100 at a time; acknowledge those in one turn) and
// through the Redis filter (claim, confirm), each step awaited alone on one ioredis connection to a
// redis-server of its own (no append-only file). Per entry: wall time and redis-server CPU (/proc)
// per step, then the commands Redis ran (INFO commandstats: a script counts as EVALSHA/EVAL, and
// every redis.call() inside it as its own command).
// `node bench/stream-inbox-steps.js [N=100] [callbacks=100]`
const fs = require('fs');
const Redis = require('ioredis');
const { startRedis } = require('../test/reliability/lib/servers');
const { readCpu } = require('./lib/rss');
const inb = require('../dist/events/inbox');
const { RedisDuplicateFilter } = require('../dist/events');

const N = Number(process.argv[2] || 100);
const rounds = Number(process.argv[3] || 100);
const IN_FLIGHT = 100;
const now = () => Number(process.hrtime.bigint()) / 1e6;

function entriesOf(first) {
  const out = [];
  for (let k = 0; k < N; k++) {
    const id = first + k;
    out.push({ key: `asset:${id}`, entry: { assetId: id, rrn: id, path: `/b/f${id}`, owner: 'b', action: 'added' }, revision: id, receivedAt: 'x', subscriptionId: 's' });
  }
  return out;
}

async function commandStats(c, entries) {
  const lines = [];
  for (const l of (await c.info('commandstats')).split('\n')) {
    const m = /cmdstat_(\w+):calls=(\d+),usec=(\d+)/.exec(l);
    if (m && m[1] !== 'info' && m[1] !== 'config') lines.push(`    ${m[1].padEnd(12)} ${(m[2] / entries).toFixed(3)} calls/entry, ${(m[3] / entries).toFixed(2)} µs/entry`);
  }
  return lines.join('\n');
}

(async () => {
  const dir = fs.mkdtempSync('/tmp/steps-');
  const r = await startRedis(dir, { durable: false });
  const c = new Redis(r.url, { enableAutoPipelining: true });
  try {
    const inbox = new inb.RedisStreamInbox(c, { prefix: 'b:{x}:in:', windowMs: 600000, timeoutMs: 5000, maxEntries: 1e7, maxInFlight: IN_FLIGHT, visibilityTimeoutMs: 600000, maxDeliveries: 5, backoffMs: 1000 });
    await inbox.ensureGroup();
    const filter = new RedisDuplicateFilter(c, { prefix: 'f:{x}:', windowMs: 600000, leaseMs: 10000, timeoutMs: 5000 });
    const wall = {}; const cpu = {};
    const step = async (name, fn) => {
      const c0 = readCpu(r.pid); const a = now();
      const x = await fn();
      wall[name] = (wall[name] || 0) + now() - a; cpu[name] = (cpu[name] || 0) + readCpu(r.pid) - c0;
      return x;
    };
    const E = N * rounds;
    const report = async (names) => {
      for (const k of names) console.log(`  ${k.padEnd(8)} ${(wall[k] / E * 1000).toFixed(1)} µs wall/entry, ${(cpu[k] / E * 1e6).toFixed(1)} µs redis-server CPU/entry`);
      console.log(await commandStats(c, E));
      await c.config('RESETSTAT');
    };
    await c.config('RESETSTAT');
    let seq = 1;
    for (let i = 0; i < rounds; i++, seq += N) {
      await step('store', () => inbox.store(entriesOf(seq)));
      for (let got = 0; got < N;) {
        const taken = await step('take', () => inbox.take(IN_FLIGHT));
        got += taken.deliveries.length;
        await step('ack', () => Promise.all(taken.deliveries.map((d) => inbox.acknowledge(d.id, d.delivery))));
      }
    }
    console.log(`stream inbox, ${rounds} callbacks of ${N} entries:`);
    await report(['store', 'take', 'ack']);
    for (let i = 0; i < rounds; i++, seq += N) {
      const keys = entriesOf(seq).map((e) => JSON.stringify(e.entry));
      const claimed = await step('claim', () => filter.claim(keys));
      await step('confirm', () => claimed.confirm());
    }
    console.log(`Redis filter, ${rounds} callbacks of ${N} entries:`);
    await report(['claim', 'confirm']);
    // The floor of any at-least-once queue on a Redis Stream shared by copies, with none of the
    // inbox's rules (no duplicate window, newest revision, per-asset order, delivery count): XADD in
    // one script per callback, XREADGROUP of In flight entries, XACK + XDEL in one script per take.
    const FLOOR_STORE = "for i = 1, #ARGV, 2 do redis.call('XADD', KEYS[1], '*', 'k', ARGV[i], 'd', ARGV[i + 1]) end return 1";
    const FLOOR_ACK = "for i = 1, #ARGV do redis.call('XACK', KEYS[1], 'g', ARGV[i]); redis.call('XDEL', KEYS[1], ARGV[i]) end return 1";
    const fs1 = 'floor:{x}:s';
    await c.xgroup('CREATE', fs1, 'g', '0', 'MKSTREAM');
    for (let i = 0; i < rounds; i++, seq += N) {
      const args = entriesOf(seq).flatMap((e) => [e.key, JSON.stringify({ e: e.entry, at: e.receivedAt, s: e.subscriptionId })]);
      await step('xadd', () => c.eval(FLOOR_STORE, 1, fs1, ...args));
      for (let got = 0; got < N;) {
        const r = await step('read', () => c.xreadgroup('GROUP', 'g', 'me', 'COUNT', IN_FLIGHT, 'STREAMS', fs1, '>'));
        const ids = r ? r[0][1].map((e) => e[0]) : [];
        got += ids.length;
        await step('xack+del', () => c.eval(FLOOR_ACK, 1, fs1, ...ids));
      }
    }
    console.log(`floor (XADD, XREADGROUP, XACK + XDEL; none of the inbox's rules), ${rounds} callbacks of ${N} entries:`);
    await report(['xadd', 'read', 'xack+del']);
  } finally {
    c.disconnect();
    await r.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})();
