'use strict';
// The compacted journal's first record with N newest revisions (journal-records.ts snapshotText):
// times as offsets from the oldest (now) against whole times (before), encoded the same way, in
// turns in one process. `node bench/snapshot-encoding.js [N=1000000] [rounds=5]`.
const { encodeRecord } = require('../dist/events/inbox/journal-file');

const n = Number(process.argv[2] || 1e6);
const rounds = Number(process.argv[3] || 5);
const now = Date.now();
// As the bench's inbox leaves them: a new asset per entry, over the 10-minute horizon.
const hk = Array.from({ length: n }, (_, i) => 100000 + i);
const hv = Array.from({ length: n }, (_, i) => 1000 + (i % 50));
const times = Array.from({ length: n }, (_, i) => now - 600000 + Math.floor(i * 600000 / n));
const ms = (f) => { const t = process.hrtime.bigint(); const text = f(); return [Number(process.hrtime.bigint() - t) / 1e6, text.length]; };
const whole = [];
const offsets = [];
for (let r = 0; r < rounds; r++) {
  whole.push(ms(() => encodeRecord({ i: 1, q: 1, hk, hv, ht: times })));
  offsets.push(ms(() => encodeRecord({ i: 1, q: 1, hk, hv, hb: times[0], ho: times.map((t) => t - times[0]) })));
}
const median = (xs) => xs.map((x) => x[0]).sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${n} newest revisions, median of ${rounds} (JSON + crc32):`);
console.log(`  whole times (before): ${median(whole).toFixed(0)} ms, ${(whole[0][1] / 1048576).toFixed(1)} MiB`);
console.log(`  offsets (now):        ${median(offsets).toFixed(0)} ms, ${(offsets[0][1] / 1048576).toFixed(1)} MiB  (${(median(offsets) / median(whole)).toFixed(2)} ×)`);
