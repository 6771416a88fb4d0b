// Node-RED entry for the asset-event-ack node: the runtime is compiled from src/nodes/asset-event-ack/index.ts.
module.exports = require('../dist/nodes/asset-event-ack/index.js').default;
