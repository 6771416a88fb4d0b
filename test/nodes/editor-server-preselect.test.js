'use strict';
// Issue 23 #3: Node-RED leaves a new node's Server blank even when exactly one asset-server
// exists, so a node dropped in and deployed without opening its dialog was "not properly
// configured". Each node with a Server field picks the only asset-server in its onadd (run by
// the editor for a node dropped from the palette). This runs the real editor files' onadd.
const { loadDamEditor, runEditorScript } = require('../lib/editor-script');
require('should');

const TYPES = ['asset-subscribe', 'asset-event-in', 'asset-upload', 'asset-download', 'asset-export', 'asset-session'];

function editorDefinition(type, configNodes) {
  const RED = {
    _: (key) => key,
    validators: { typedInput: () => () => true, number: () => () => true, regex: () => () => true },
    nodes: {
      registerType: (name, def) => { registered[name] = def; },
      eachConfig: (cb) => { for (const n of configNodes) if (cb(n) === false) break; },
      eachNode: () => {}
    }
  };
  const registered = {};
  const window = {};
  runEditorScript(type, { RED, DamEditor: loadDamEditor(RED, window), window });
  return registered[type];
}

/** A new node as the editor makes it (defaults), after its onadd. */
function added(type, configNodes, preset = {}) {
  const def = editorDefinition(type, configNodes);
  const node = { type, ...Object.fromEntries(Object.entries(def.defaults).map(([k, v]) => [k, v.value])), ...preset };
  def.onadd.call(node);
  return node;
}

describe('a new node picks the only asset-server (issue 23 #3)', () => {
  const server = (id) => ({ id, type: 'asset-server' });
  for (const type of TYPES) {
    it(`${type}: the only asset-server is picked; none or two leave Server blank; a set Server stays`, () => {
      added(type, [server('s1'), { id: 'tls1', type: 'tls-config' }]).server.should.equal('s1');
      added(type, []).server.should.equal('');
      added(type, [server('s1'), server('s2')]).server.should.equal('');
      added(type, [server('s1')], { server: 's9' }).server.should.equal('s9'); // imported or pasted with its own
    });
  }
});
