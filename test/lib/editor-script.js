'use strict';
/**
 * The editor's own files run outside a browser, for tests that compare the editor's copies of
 * runtime rules with the source: resources/dam-editor.js, and a node's <script type="text/javascript">
 * block (its registerType). The block first calls DamEditor.fillRows, which rewrites the node's
 * template through jQuery: `$` here serves the node's real template text, so the rows are filled
 * as in the editor (a broken row builder fails these tests too).
 */
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const ROOT = path.join(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The templates of the nodes whose script ran last (data-template-name -> text), served by `$`. */
const templates = {};
/** The little of jQuery the row builder uses: a node's template, read and rewritten. */
function $(selector) {
  // A dialog's field: no dialog is open here (validators then read the node's saved value).
  if (selector === undefined || /^#node-(config-)?input-/.test(String(selector))) return { length: 0, val: () => undefined, is: () => false };
  const name = /data-template-name='([^']+)'/.exec(String(selector));
  if (!name || !(name[1] in templates)) throw new Error(`$(${selector}) is not served by test/lib/editor-script.js`);
  return { text: (value) => (value === undefined ? templates[name[1]] : (templates[name[1]] = value)) };
}

/** window.DamEditor from the real resources/dam-editor.js. */
function loadDamEditor(RED = { _: (key) => key }, window = {}) {
  vm.runInNewContext(read('resources/dam-editor.js'), { window, URL, RED, $ });
  return window.DamEditor;
}

/**
 * Runs nodes/<type>.html's script with `RED` (registerType is the test's), DamEditor and window;
 * returns the node's templates (data-template-name -> text) as fillRows left them.
 */
function runEditorScript(type, { RED, DamEditor = loadDamEditor(RED), window = {} }) {
  const html = read(`nodes/${type}.html`);
  const script = /<script type="text\/javascript">([\s\S]*?)<\/script>/.exec(html)[1];
  const own = {};
  for (const m of html.matchAll(/<script type="text\/html" data-template-name="([^"]+)">([\s\S]*?)<\/script>/g)) own[m[1]] = templates[m[1]] = m[2];
  vm.runInNewContext(script, { RED, DamEditor, window, $ });
  for (const name of Object.keys(own)) own[name] = templates[name];
  return own;
}

module.exports = { loadDamEditor, runEditorScript };
