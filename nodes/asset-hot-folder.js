// Node-RED entry for the asset-hot-folder node: the runtime is compiled from src/nodes/asset-hot-folder/.
module.exports = require('../dist/nodes/asset-hot-folder/index.js').default;
