'use strict';
// Default run: everything under test/ except the long suites, benches and the Node-RED 5 run.
module.exports = {
  spec: ['test/api/**/*.test.js', 'test/emulator/**/*.test.js', 'test/events/**/*.test.js', 'test/nodes/**/*.test.js', 'test/e2e/**/*.test.js', 'test/reliability/**/*.test.js', 'test/servlet/**/*.test.js', 'test/house/**/*.test.js'],
  timeout: 20000,
  exit: true,
  reporter: 'spec'
};
