// Node-RED entry for the asset-event-in node: the runtime is compiled from src/nodes/asset-event-in/index.ts.
module.exports = require('../dist/nodes/asset-event-in/index.js').default;
