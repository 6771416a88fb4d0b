// Node-RED entry for the asset-download node: the runtime is compiled from src/nodes/asset-download/index.ts.
module.exports = require('../dist/nodes/asset-download/index.js').default;
