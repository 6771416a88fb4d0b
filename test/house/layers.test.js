'use strict';
// Imports point one way: api <- events <- nodes <- plugin (docs/architecture.md). This walks the
// import graph of src/ (the .ts sources, so it holds without a build) and fails on any import
// that points up a layer, or from the nodes' shared code into one node's folder.
const fs = require('fs');
const path = require('path');
require('should');

const SRC = path.join(__dirname, '..', '..', 'src');
const RANK = { api: 0, events: 1, nodes: 2, plugin: 3 };
// Code the palette loads must not reach the stand-in server or the demo.
const OUTSIDE = new Set(['emulator', 'demo']);

function tsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Relative import targets of one file: `from '...'`, `import('...')`, `require('...')`. */
function importsOf(file) {
  const text = fs.readFileSync(file, 'utf8');
  const found = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](\.[^'"]*)['"]/gm;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) found.push(path.resolve(path.dirname(file), m[1]));
  return found;
}

/** [top folder under src, and for src/nodes the node folder or 'shared'] */
function placeOf(file) {
  const parts = path.relative(SRC, file).split(path.sep);
  return { layer: parts.length > 1 ? parts[0] : '', part: parts[0] === 'nodes' && parts.length > 2 ? parts[1] : '' };
}

function upwardImports() {
  const bad = [];
  for (const file of tsFiles(SRC)) {
    const from = placeOf(file);
    if (!(from.layer in RANK)) continue;
    for (const target of importsOf(file)) {
      const to = placeOf(target);
      const where = `${path.relative(SRC, file)} -> ${path.relative(SRC, target)}`;
      if (OUTSIDE.has(to.layer)) bad.push(`${where} (reaches ${to.layer})`);
      else if (to.layer in RANK && RANK[to.layer] > RANK[from.layer]) bad.push(`${where} (${from.layer} below ${to.layer})`);
      else if (from.layer === 'nodes' && from.part === 'shared' && to.layer === 'nodes' && to.part !== 'shared') {
        bad.push(`${where} (shared node code below the node folders)`);
      }
    }
  }
  return bad;
}

describe('house: layers one way (api <- events <- nodes <- plugin)', function () {
  it('finds the imports it checks (the walker itself works)', function () {
    const count = tsFiles(SRC).reduce((n, f) => n + importsOf(f).length, 0);
    count.should.be.above(50);
  });

  it('no import in src/ points up a layer', function () {
    upwardImports().should.eql([]);
  });

  it('every node type in package.json has its folder src/nodes/<type>/index.ts', function () {
    const types = Object.keys(require('../../package.json')['node-red'].nodes);
    const missing = types.filter((t) => !fs.existsSync(path.join(SRC, 'nodes', t, 'index.ts')));
    missing.should.eql([]);
  });

  it('no source file over 400 lines outside src/emulator (split by job instead)', function () {
    const long = tsFiles(SRC)
      .filter((f) => placeOf(f).layer !== 'emulator')
      .map((f) => ({ file: path.relative(SRC, f), lines: fs.readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 400);
    long.should.eql([]);
  });
});
