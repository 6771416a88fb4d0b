'use strict';
/**
 * Loaded with `--require` (through NODE_OPTIONS) into every Node process of the
 * Node-RED 5 run. A bare request for `node-red`, `@node-red/*` or
 * `node-red-node-test-helper` made by the project's own code (tests, dist/,
 * nodes/, scripts/) resolves to the copy in `.nr5/node_modules` instead of the
 * project's node_modules (Node-RED 4.1). NODE_PATH cannot do this: Node only
 * looks there after the node_modules folders above the requiring file.
 *
 * Requests made from inside a node_modules folder resolve as usual, so each
 * Node-RED copy keeps its own internals, and the test helper (from .nr5) finds
 * Node-RED 5 next to itself.
 */
const Module = require('module');
const path = require('path');

const nr5Dir = process.env.DAM_NR5_DIR || path.resolve(__dirname, '..', '..', '.nr5');
const redirected = /^(node-red|node-red-node-test-helper|@node-red\/[^/]+)(\/.*)?$/;
const originalResolve = Module._resolveFilename;

Module._resolveFilename = function resolveToNodeRed5(request, parent, isMain, options) {
  const from = parent && parent.filename;
  if (from && redirected.test(request) && !from.split(path.sep).includes('node_modules')) {
    return originalResolve.call(this, request, parent, isMain, { ...options, paths: [nr5Dir] });
  }
  return originalResolve.call(this, request, parent, isMain, options);
};
