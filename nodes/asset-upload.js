// Node-RED entry for the asset-upload node: the runtime is compiled from src/nodes/asset-upload/index.ts.
module.exports = require('../dist/nodes/asset-upload/index.js').default;
