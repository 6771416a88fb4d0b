'use strict';
// CPU per entry of the event rows, per thread, over bursts of the variants in turn (the order
// swapped each round) in one Node-RED: the main thread (user and system time, minor page faults)
// and the others by name (V8's helpers, libuv's pool). Ends with each variant's medians and the
// at-least-once ratios (inbox / ours): entries/s, and the main thread's CPU per entry.
//   node bench/events-threads.js [N=100] [rounds=10] [callbacks=500] [variants=ours,inbox]
// Linux only (/proc/<pid>/task). docs/performance.md (Follow-up 11) has results.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { burst } = require('./lib/events');
const { median } = require('./lib/util');
const { readThreads } = require('./lib/rss');

/** CPU time (seconds) and minor faults summed per thread name (the main thread as "main"). */
function threadTimes(pid) {
  const out = {};
  for (const [tid, thread] of readThreads(pid)) {
    const name = tid === String(pid) ? 'main' : thread.name.replace(/\d+$/, '');
    const t = out[name] || (out[name] = { user: 0, sys: 0, faults: 0 });
    t.user += thread.user;
    t.sys += thread.sys;
    t.faults += thread.faults;
  }
  return out;
}

(async () => {
  const [n = '100', rounds = '10', callbacks = '500', variantsText = 'ours,inbox'] = process.argv.slice(2);
  const variants = variantsText.split(',');
  const { startNodeRed } = require('./lib/nodered');
  const { buildFlows } = require('./lib/flows');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'events-threads-'));
  const nr = await startNodeRed({ userDir: path.join(tmp, 'nr') });
  const per = {};
  try {
    const { types } = await nr.nodeTypes();
    await nr.deploy(buildFlows({ emulatorUrl: 'http://127.0.0.1:1', cookie: 'x', types, parts: new Set(['events']) }));
    for (const v of variants) await burst(nr, v, Number(n), 200); // warm-up
    for (let round = 0; round < Number(rounds); round++) {
      for (const v of round % 2 ? [...variants].reverse() : variants) {
        const before = threadTimes(nr.pid);
        const b = await burst(nr, v, Number(n), Number(callbacks));
        const after = threadTimes(nr.pid);
        const us = (seconds) => seconds / b.counted * 1e6;
        const parts = [];
        let all = 0;
        let main = 0;
        for (const [name, t] of Object.entries(after)) {
          const was = before[name] || { user: 0, sys: 0, faults: 0 };
          const user = us(t.user - was.user);
          const sys = us(t.sys - was.sys);
          all += user + sys;
          if (name === 'main') main = user + sys;
          if (user + sys > 0) parts.push(`${name} ${user.toFixed(1)} + ${sys.toFixed(1)} µs${name === 'main' ? `, ${((t.faults - was.faults) / b.counted * 1000).toFixed(0)} faults/1000` : ''}`);
        }
        (per[v] ??= []).push({ entriesPerSec: b.entriesPerSec, main, all });
        console.log(`${v} ${n}/callback: ${Math.round(b.entriesPerSec)} entries/s, lost ${b.lost}; CPU per entry (user + system): ${parts.join('; ')}`);
      }
    }
  } finally {
    await nr.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const med = (v, key) => median(per[v].map((x) => x[key]));
  for (const v of variants) {
    console.log(`${v}: median ${Math.round(med(v, 'entriesPerSec'))} entries/s, main thread ${med(v, 'main').toFixed(1)} µs, process ${med(v, 'all').toFixed(1)} µs per entry`);
  }
  if (per.ours && per.inbox) {
    console.log(`inbox / ours: entries/s ${(med('inbox', 'entriesPerSec') / med('ours', 'entriesPerSec')).toFixed(3)}, main thread CPU per entry ${(med('inbox', 'main') / med('ours', 'main')).toFixed(3)}`);
  }
})().catch((err) => { console.error(err); process.exit(1); });
