'use strict';
/**
 * Mocha root hook of the Node-RED 5 run: says which Node-RED and Node the run
 * uses, and stops it at once if they are not 5.x on Node 22.
 */
const path = require('path');

exports.mochaHooks = {
  beforeAll() {
    const RED = require('node-red');
    const helper = require('node-red-node-test-helper');
    const version = RED.version();
    const helperVersion = helper._RED ? helper._RED.version() : 'not initialised';
    console.log(`  Node-RED ${version} from ${path.dirname(require.resolve('node-red/package.json'))}`);
    console.log(`  node-red-node-test-helper runs Node-RED ${helperVersion}; Node ${process.version}`);
    if (!/^5\./.test(version)) throw new Error(`the Node-RED 5 run loaded Node-RED ${version}`);
    if (helper._RED && !/^5\./.test(helperVersion)) throw new Error(`the test helper loaded Node-RED ${helperVersion}`);
    if (!/^v22\./.test(process.version)) throw new Error(`the Node-RED 5 run uses Node ${process.version}, not 22`);
  },
};
