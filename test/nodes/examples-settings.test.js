'use strict';
// Node-RED's import (Menu > Import > Examples) keeps a node's properties as the file has them and
// fills in no editor default, and the runtime reads a missing setting as a flow saved before it
// existed (Retries: 0). So each DAM node of an example carries every setting its editor defaults
// name: imported, it behaves as the same node dragged from the palette. (A new-user audit found
// the upload, download, export and subscribe nodes of the examples with no retries.)
require('should');
const fs = require('fs');
const path = require('path');
const { runEditorScript } = require('../lib/editor-script');

const EXAMPLES = path.join(__dirname, '..', '..', 'examples');

function editorDefaults(type) {
  const registered = {};
  const RED = { _: (key) => key, validators: { typedInput: () => () => true, number: () => () => true, regex: () => () => true }, nodes: { registerType: (name, def) => { registered[name] = def; } } };
  runEditorScript(type, { RED });
  return registered[type].defaults;
}

describe('examples: every DAM node carries every editor setting', function () {
  for (const file of fs.readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'))) {
    it(file, function () {
      const missing = [];
      for (const node of JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8'))) {
        if (!node.type.startsWith('asset-')) continue;
        const defaults = editorDefaults(node.type);
        // A configuration node reference with no default (an optional proxy or Redis) stays unset.
        for (const [key, def] of Object.entries(defaults)) if (!(key in node) && def.value !== undefined) missing.push(`${node.type} ${node.id}: ${key}`);
      }
      missing.should.eql([]);
    });
  }
});
