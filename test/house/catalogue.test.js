'use strict';
// One catalogue: the shared status texts' English lives in STATUS_KEYS (src/nodes/shared/texts.ts)
// and `npm run build` (scripts/catalogue.js) writes it as the `dam.status` block of every node type
// whose runtime uses it. This checks, without starting Node-RED, that every key a node's runtime
// (src/nodes/<type>/) or editor (nodes/<type>.html, resources/, plugins/) uses exists in the
// catalogue Node-RED gives it, for every node type in package.json.
// (test/nodes/node-red-runtime.test.js checks the same keys as a real Node-RED serves them.)
const fs = require('fs');
const path = require('path');
require('should');
const { sharedTextUsers } = require('../../scripts/catalogue');

const root = path.join(__dirname, '..', '..');
const pkg = require(path.join(root, 'package.json'));
const MODULE = pkg.name;
const TYPES = Object.keys(pkg['node-red'].nodes);
const { STATUS_KEYS } = require(path.join(root, 'dist', 'nodes', 'shared', 'texts.js'));

function catalogueOf(ns) {
  const name = ns.slice(MODULE.length + 1);
  const dir = TYPES.includes(name) ? path.join(root, 'nodes', 'locales', 'en-US') : path.join(root, 'plugins', 'locales', 'en-US');
  return JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
}

function lookup(catalogue, key) {
  return key.split('.').reduce((node, part) => (node && typeof node === 'object' ? node[part] : undefined), catalogue);
}

/** [namespace, key] pairs of one node type: its editor file, its runtime folder, the shared status texts. */
function keysOf(type) {
  const ns = `${MODULE}/${type}`;
  const used = [];
  const add = (raw) => {
    const m = /^(@[^:]+):(.+)$/.exec(raw);
    if (m) used.push([m[1], m[2]]);
    else if (!/^node-red:/.test(raw)) used.push([ns, raw]);
  };
  const html = fs.readFileSync(path.join(root, 'nodes', `${type}.html`), 'utf8');
  for (const m of html.matchAll(/data-i18n="([^"]+)"/g)) for (const part of m[1].split(';')) add(part.replace(/^\[[^\]]+\]/, ''));
  for (const m of html.matchAll(/(?:this|node)\._\(\s*["']([^"'+]+)["']\s*[,)]/g)) add(m[1]);
  const dir = path.join(root, 'src', 'nodes', type);
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    for (const m of source.matchAll(/(?:RED\._\(|localText\(RED, )\s*'([^'$`]+)'\s*[,)]/g)) add(m[1]);
    // asset-event-in's t(key, english) looks up `<type>.<key>`.
    if (/localText\(RED, `\$\{?[^`]*`?/.test(source) || type === 'asset-event-in') {
      for (const m of source.matchAll(/\bt\(\s*'([^'$`]+)'\s*,/g)) add(`${type}.${m[1]}`);
    }
  }
  if (sharedTextUsers().includes(type)) for (const name of Object.keys(STATUS_KEYS)) add(`dam.status.${name}`);
  return used;
}

/** Keys of editor code that names its catalogue in `var NS = "<namespace>:<prefix>"` and looks keys up with t("..."). */
function keysOfEditorScript(file) {
  const js = fs.readFileSync(path.join(root, file), 'utf8');
  const [ns, prefix] = /var NS = "([^"]+)"/.exec(js)[1].split(':');
  return [...js.matchAll(/\bt\("([^"+]+)"[,)]/g)].map((m) => [ns, prefix + m[1]]);
}

describe('house: one catalogue', function () {
  it('the shared status texts are used by the request nodes, asset-session and asset-event-in', function () {
    sharedTextUsers().should.containDeep(['asset-subscribe', 'asset-upload', 'asset-download', 'asset-export', 'asset-session', 'asset-event-in']);
  });

  it('every catalogue that needs the shared status texts has them exactly as STATUS_KEYS says', function () {
    const wrong = [];
    for (const type of sharedTextUsers()) {
      const block = lookup(catalogueOf(`${MODULE}/${type}`), 'dam.status') || {};
      for (const [name, english] of Object.entries(STATUS_KEYS)) {
        if (block[name] !== english) wrong.push(`${type}: dam.status.${name}`);
      }
    }
    wrong.should.eql([]);
  });

  it('every key used by a node\'s runtime or editor exists, for every node type in package.json', function () {
    const pairs = TYPES.flatMap(keysOf)
      .concat(keysOfEditorScript('resources/dam-editor.js'), keysOfEditorScript('resources/dam-connection-test.js'), keysOfEditorScript('plugins/dam-sidebar.html'));
    pairs.length.should.be.above(300);
    TYPES.forEach((type) => pairs.some(([ns]) => ns === `${MODULE}/${type}`).should.be.true(`${type} uses no key?`));
    const missing = pairs.filter(([ns, key]) => { const v = lookup(catalogueOf(ns), key); return typeof v !== 'string' || v === ''; })
      .map(([ns, key]) => `${ns}:${key}`);
    [...new Set(missing)].should.eql([]);
  });
});
