// Node-RED entry for the asset-export node: the runtime is compiled from src/nodes/asset-export/index.ts.
module.exports = require('../dist/nodes/asset-export/index.js').default;
