'use strict';
// The young generation's work per entry in the event rows: one Node-RED (V8's --trace-gc-nvp),
// bursts of each VARIANT in turn at N entries per callback; per variant, scavenges and their ms
// per 1000 entries, bytes promoted to the old generation per entry, major GCs, entries/s per burst.
// A whole-run CPU profile says how much time the collector takes; this says why (how often, how much survives).
//   node bench/events-gc.js [N=100] [bursts=4] [variants=ours,hop,inbox] [seconds=2]
// docs/performance.md (Follow-up 5) has results.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { burst, calibrate } = require('./lib/events');

const [n = '100', bursts = '4', variantsText = 'ours,hop,inbox', seconds = '2'] = process.argv.slice(2);
const VARIANTS = variantsText.split(',');

/** V8's name=value pairs of one --trace-gc-nvp line (gc=s: a scavenge). */
function nvp(line) {
  const fields = {};
  for (const pair of line.split(/\s+/)) {
    const at = pair.indexOf('=');
    if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return fields;
}

(async () => {
  process.env.BENCH_NODE_RED_ARGS = `--trace-gc-nvp ${process.env.BENCH_NODE_RED_ARGS || ''}`;
  const { startNodeRed } = require('./lib/nodered');
  const { buildFlows } = require('./lib/flows');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'events-gc-'));
  let current; // the variant whose burst is under way: its GC lines count for it
  const totals = Object.fromEntries(VARIANTS.map((v) => [v, { entries: 0, scavenges: 0, scavengeMs: 0, promoted: 0, majors: 0, majorMs: 0, other: 0, rates: [] }]));
  const nr = await startNodeRed({
    userDir: path.join(tmp, 'nr'),
    log: (line) => {
      if (!current || !line.includes('pause=')) return;
      const f = nvp(line);
      const t = totals[current];
      // s: a scavenge, mc: a full mark-compact (Node 20's V8); any other kind is counted apart.
      if (f.gc === 's') { t.scavenges++; t.scavengeMs += Number(f.pause); t.promoted += Number(f.promoted || 0); } else if (f.gc === 'mc') { t.majors++; t.majorMs += Number(f.pause); } else t.other++;
    }
  });
  try {
    const { types } = await nr.nodeTypes();
    await nr.deploy(buildFlows({ emulatorUrl: 'http://127.0.0.1:1', cookie: 'x', types, parts: new Set(['events']) }));
    const amounts = {};
    for (const v of VARIANTS) amounts[v] = Math.max(20, Math.round(await calibrate(nr, v, Number(n), 0.5) * Number(seconds)));
    for (let i = 0; i < Number(bursts); i++) {
      for (const v of VARIANTS) {
        current = v;
        const b = await burst(nr, v, Number(n), amounts[v]);
        await nr.nodeTypes(); // a round trip: the burst's last GC lines are in before the next variant's
        current = undefined;
        totals[v].entries += b.counted;
        totals[v].rates.push(Math.round(b.entriesPerSec));
      }
    }
  } finally {
    await nr.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  for (const [v, t] of Object.entries(totals)) {
    if (t.entries === 0) { console.log(`${v} ${n}/callback: no entry counted`); continue; }
    const per1000 = (x) => (x / t.entries * 1000).toFixed(2);
    console.log(`${v} ${n}/callback: ${t.entries} entries; per 1000 entries ${per1000(t.scavenges)} scavenges, ${per1000(t.scavengeMs)} ms; ` +
      `${Math.round(t.promoted / t.entries)} B/entry promoted; ${t.majors} major GCs (${Math.round(t.majorMs)} ms)${t.other ? `, ${t.other} of another kind` : ''}; entries/s ${t.rates.join(' ')}`);
  }
})().catch((err) => { console.error(err); process.exit(1); });
