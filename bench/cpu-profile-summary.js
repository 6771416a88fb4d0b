#!/usr/bin/env node
'use strict';
// Sums the self-time of a V8 .cpuprofile (node --cpu-prof) per function and per file, so that a
// profile can be read without a browser: `node bench/cpu-profile-summary.js X.cpuprofile [top]`.
const fs = require('fs');

function summarize(file, top = 25) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  // timeDeltas[i] is the time before samples[i]; charge it to that sample's node.
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) || 0) + (profile.timeDeltas[i] || 0)));
  const perFunction = new Map();
  const perFile = new Map();
  let total = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const shortUrl = (url || '').replace(/^file:\/\//, '').replace(/.*node_modules\//, 'node_modules/').replace(/.*\/(dist|src|bench)\//, '$1/');
    const fnKey = `${functionName || '(anonymous)'} ${shortUrl}${url ? ':' + (lineNumber + 1) : ''}`;
    perFunction.set(fnKey, (perFunction.get(fnKey) || 0) + us);
    const fileKey = shortUrl || `(${functionName})`;
    perFile.set(fileKey, (perFile.get(fileKey) || 0) + us);
    total += us;
  }
  const table = (map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([k, us]) => `${(us / 1000).toFixed(1).padStart(9)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
  return `${file}: ${(total / 1000).toFixed(0)} ms sampled\n-- self time per function\n${table(perFunction)}\n-- self time per file\n${table(perFile)}\n`;
}

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) { console.error('usage: node bench/cpu-profile-summary.js X.cpuprofile [top]'); process.exit(2); }
  process.stdout.write(summarize(file, Number(top) || 25));
}
module.exports = { summarize };
