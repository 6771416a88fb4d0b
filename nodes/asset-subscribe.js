// Node-RED entry for the asset-subscribe node: the runtime is compiled from src/nodes/asset-subscribe.ts.
module.exports = require('../dist/nodes/asset-subscribe.js').default;
