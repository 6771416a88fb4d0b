'use strict';
// Mocha config of `npm run test:nr5`: the node tests and the end-to-end tests
// (not the browser test), plus a check that the package loads through
// Node-RED 5's import()-based loader.
const path = require('path');

module.exports = {
  spec: ['test/nodes/**/*.test.js', 'test/e2e/**/*.test.js', 'scripts/nr5/*.test.js'],
  ignore: ['test/e2e/browser*.test.js'],
  require: [path.join(__dirname, 'hooks.js')],
  timeout: 30000,
  exit: true,
  reporter: 'spec',
};
