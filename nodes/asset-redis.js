// Node-RED entry for the asset-redis node: the runtime is compiled from src/nodes/asset-redis.ts.
module.exports = require('../dist/nodes/asset-redis.js').default;
