// Node-RED entry for the asset-subscribe node: the runtime is compiled from src/nodes/asset-subscribe/index.ts.
module.exports = require('../dist/nodes/asset-subscribe/index.js').default;
