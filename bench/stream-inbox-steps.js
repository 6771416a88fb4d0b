'use strict';
// Time per step of one 100-entry callback, Redis Stream inbox (store, take, acknowledge) against the
// Redis filter (claim, confirm), each awaited alone on one ioredis connection to a redis-server of
// its own (no append-only file): where an at-least-once entry's time goes, without Node-RED.
// `node bench/stream-inbox-steps.js`
const Redis = require('ioredis');
const { startRedis } = require('../test/reliability/lib/servers');

const inb = require('../dist/events/inbox');
(async () => {
  const dir = require('fs').mkdtempSync('/tmp/steps-');
  const r = await startRedis(dir, { durable: false });
  const c = new Redis(r.url, { enableAutoPipelining: true });
  const inbox = new inb.RedisStreamInbox(c, { prefix: 'b:{x}:in:', windowMs: 600000, timeoutMs: 5000, maxEntries: 1e7, maxInFlight: 100, visibilityTimeoutMs: 600000, maxDeliveries: 5, backoffMs: 1000 });
  await inbox.ensureGroup();
  const filter = new (require('../dist/events').RedisDuplicateFilter)(c, { prefix: 'f:{x}:', windowMs: 600000, leaseMs: 10000, timeoutMs: 5000 });
  let seq = 0;
  const t = { store: 0, take: 0, ack: 0, claim: 0, confirm: 0 };
  const N = 100, rounds = 50;
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  for (let i = 0; i < rounds; i++) {
    const entries = [];
    for (let k = 0; k < N; k++) { seq++; entries.push({ key: `asset:${seq}`, entry: { assetId: seq, rrn: seq, path: `/b/f${seq}`, owner: 'b', action: 'added' }, revision: seq, receivedAt: 'x', subscriptionId: 's' }); }
    let a = now(); await inbox.store(entries); t.store += now() - a;
    let got = 0;
    while (got < N) {
      a = now(); const taken = await inbox.take(100); t.take += now() - a; got += taken.deliveries.length;
      a = now(); await Promise.all(taken.deliveries.map((d) => inbox.acknowledge(d.id, d.delivery))); t.ack += now() - a;
    }
    const keys = entries.map((e) => JSON.stringify(e.entry));
    a = now(); const cl = await filter.claim(keys); t.claim += now() - a;
    a = now(); await cl.confirm(); t.confirm += now() - a;
  }
  for (const k in t) console.log(k, (t[k] / rounds).toFixed(2), 'ms per 100-entry callback');
  const info = await c.info('commandstats');
  console.log(info.split('\n').filter((l) => /evalsha|eval:|xreadgroup|xadd/.test(l)).join('\n'));
  c.disconnect(); await r.stop();
})();
