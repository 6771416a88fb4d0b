// Node-RED entry for the DAM sidebar plugin: the runtime half is compiled from src/plugin/dam-sidebar.ts.
module.exports = require('../dist/plugin/dam-sidebar.js').default;
