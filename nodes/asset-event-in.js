// Node-RED entry for the asset-event-in node: the runtime is compiled from src/nodes/asset-event-in.ts.
module.exports = require('../dist/nodes/asset-event-in.js').default;
