#!/usr/bin/env node
'use strict';
// Bytes allocated per unit of work (e.g. per entry) by function and by file, from a sampling heap
// profile that counts freed objects too (bench/lib/alloc-preload.js):
//   node bench/alloc-profile-summary.js X.heapprofile UNITS [top]
// Node-RED's start-up is in it too (module loading): compare two profiles function by function.
const fs = require('fs');

const [file, unitsText, topText = '30'] = process.argv.slice(2);
if (!file || !Number(unitsText)) { console.error('usage: node bench/alloc-profile-summary.js X.heapprofile UNITS [top]'); process.exit(2); }
const units = Number(unitsText);
const perFunction = new Map();
const perFile = new Map();
let total = 0;
const add = (map, key, bytes) => map.set(key, (map.get(key) || 0) + bytes);
(function walk(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  const shortUrl = (url || '').replace(/^file:\/\//, '').replace(/.*node_modules\//, 'node_modules/').replace(/.*\/(dist|src|bench)\//, '$1/');
  add(perFunction, `${functionName || '(anonymous)'} ${shortUrl}${url ? ':' + (lineNumber + 1) : ''}`, node.selfSize);
  add(perFile, shortUrl || `(${functionName || 'native'})`, node.selfSize);
  total += node.selfSize;
  for (const child of node.children) walk(child);
})(JSON.parse(fs.readFileSync(file, 'utf8')).head);
const table = (map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(topText))
  .map(([key, bytes]) => `${(bytes / units).toFixed(0).padStart(7)}  ${key}`).join('\n');
console.log(`bytes per unit: ${(total / units).toFixed(0)}\n\nby function:\n${table(perFunction)}\n\nby file:\n${table(perFile)}`);
