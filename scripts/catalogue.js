'use strict';
// One catalogue for the texts the nodes share: the status texts' English lives once, in
// STATUS_KEYS (src/nodes/shared/texts.ts). Node-RED gives each node type its own catalogue
// (nodes/locales/en-US/<type>.json), so `npm run build` writes the `dam.status` block into the
// catalogue of every node type whose runtime uses the shared texts. Edit STATUS_KEYS, not the
// block. `--check` only reports (exit 1) a catalogue whose block differs; test/house/catalogue.test.js does the same.
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
const SHARED_TEXT_USE = /\b(statusText|errorStatusText|handleInputAndClose|inFlightLimit)\(/;

/** Node types (package.json) whose runtime folder calls the shared status texts. */
function sharedTextUsers() {
  const types = Object.keys(require(path.join(root, 'package.json'))['node-red'].nodes);
  return types.filter((type) => {
    const dir = path.join(root, 'src', 'nodes', type);
    return fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.endsWith('.ts') && SHARED_TEXT_USE.test(fs.readFileSync(path.join(dir, f), 'utf8')));
  });
}

function catalogueFile(type) {
  return path.join(root, 'nodes', 'locales', 'en-US', `${type}.json`);
}

/** The catalogue of `type` with its dam.status block from STATUS_KEYS; [text before, text after]. */
function withSharedBlock(type, statusKeys) {
  const file = catalogueFile(type);
  const before = fs.readFileSync(file, 'utf8');
  const catalogue = JSON.parse(before);
  catalogue.dam = { ...(catalogue.dam || {}), status: { ...statusKeys } };
  return [before, JSON.stringify(catalogue, null, 4) + '\n'];
}

module.exports = { sharedTextUsers, withSharedBlock, catalogueFile };

if (require.main === module) {
  const { STATUS_KEYS } = require(path.join(root, 'dist', 'nodes', 'shared', 'texts.js'));
  const check = process.argv.includes('--check');
  const differing = [];
  for (const type of sharedTextUsers()) {
    const [before, after] = withSharedBlock(type, STATUS_KEYS);
    if (before === after) continue;
    differing.push(type);
    if (!check) fs.writeFileSync(catalogueFile(type), after);
  }
  if (check && differing.length) {
    console.error(`dam.status differs from STATUS_KEYS in: ${differing.join(', ')} (run npm run build)`);
    process.exit(1);
  }
}
