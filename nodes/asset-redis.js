// Node-RED entry for the asset-redis node: the runtime is compiled from src/nodes/asset-redis/index.ts.
module.exports = require('../dist/nodes/asset-redis/index.js').default;
