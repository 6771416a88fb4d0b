// Node-RED entry for the asset-download node: the runtime is compiled from src/nodes/asset-download.ts.
module.exports = require('../dist/nodes/asset-download.js').default;
