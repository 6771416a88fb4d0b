// Node-RED entry for the asset-server node: the runtime is compiled from src/nodes/asset-server/index.ts.
module.exports = require('../dist/nodes/asset-server/index.js').default;
