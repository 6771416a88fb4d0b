// Node-RED entry for the asset-server node: the runtime is compiled from src/nodes/asset-server.ts.
module.exports = require('../dist/nodes/asset-server.js').default;
