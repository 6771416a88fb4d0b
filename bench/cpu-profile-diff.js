#!/usr/bin/env node
'use strict';
// Two V8 CPU profiles side by side, self time per file (or per function) in µs per unit of work:
//   node bench/cpu-profile-diff.js A.cpuprofile UNITS_A B.cpuprofile UNITS_B [function] [top]
// (e.g. units = entries processed; bench/ab-events.js --profile prints them). Idle time left out.
const fs = require('fs');

function selfTimes(file, byFunction) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map();
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') return;
    const shortUrl = (url || '').replace(/^file:\/\//, '').replace(/.*node_modules\//, 'node_modules/').replace(/.*\/(dist|src|bench)\//, '$1/');
    const key = byFunction ? `${functionName || '(anonymous)'} ${shortUrl}${url ? ':' + (lineNumber + 1) : ''}` : shortUrl || `(${functionName})`;
    out.set(key, (out.get(key) || 0) + (profile.timeDeltas[i] || 0));
  });
  return out;
}

const [a, unitsA, b, unitsB, mode, top] = process.argv.slice(2);
if (!b) { console.error('usage: node bench/cpu-profile-diff.js A.cpuprofile UNITS_A B.cpuprofile UNITS_B [function] [top]'); process.exit(2); }
const ta = selfTimes(a, mode === 'function');
const tb = selfTimes(b, mode === 'function');
const per = (m, units) => new Map([...m].map(([k, us]) => [k, us / Number(units)]));
const pa = per(ta, unitsA); const pb = per(tb, unitsB);
const keys = [...new Set([...pa.keys(), ...pb.keys()])].map((k) => [k, (pa.get(k) || 0), (pb.get(k) || 0)]);
keys.sort((x, y) => Math.abs(y[2] - y[1]) - Math.abs(x[2] - x[1]));
const sum = (m) => [...m.values()].reduce((s, v) => s + v, 0);
console.log(`total (not idle) µs/unit: A ${sum(pa).toFixed(1)}  B ${sum(pb).toFixed(1)}  B-A ${(sum(pb) - sum(pa)).toFixed(1)}`);
console.log('      A       B     B-A');
for (const [k, x, y] of keys.slice(0, Number(top) || 30)) console.log(`${x.toFixed(2).padStart(7)} ${y.toFixed(2).padStart(7)} ${(y - x).toFixed(2).padStart(7)}  ${k}`);
