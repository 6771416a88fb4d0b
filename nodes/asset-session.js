// Node-RED entry for the asset-session node: the runtime is compiled from src/nodes/asset-session/index.ts.
module.exports = require('../dist/nodes/asset-session/index.js').default;
