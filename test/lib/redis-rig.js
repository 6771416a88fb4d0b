'use strict';
// For node tests that run asset-event-in with an asset-redis node under the Node-RED test helper:
// one real redis-server on a free port for the whole describe, a direct ioredis client beside it,
// and the helper's server. Without redis-server the describe is skipped (an error in CI).
const path = require('path');
const Redis = require('ioredis');
const { tempDir, rmDir } = require('../reliability/lib/support');
const { installed, startRedis } = require('../reliability/lib/servers');

/**
 * Call inside a describe, before its own hooks. Returns an object whose `server` (url, stop(),
 * running) and `direct` (ioredis client) are set once the describe's first before hook ran.
 */
function useRedisRig(helper, { tempPrefix, password } = {}) {
  const rig = {};
  before(async function () {
    if (!installed('redis-server')) { if (process.env.CI) throw new Error('redis-server is not installed'); this.skip(); }
    rig.work = tempDir(tempPrefix || 'dam-redis-rig-');
    rig.server = await startRedis(path.join(rig.work, 'redis'), password ? { password } : undefined);
    rig.direct = new Redis(rig.server.url, { password, maxRetriesPerRequest: 0 });
    rig.direct.on('error', () => undefined);
    await helper.startServer();
  });
  after(async function () {
    await helper.stopServer();
    if (rig.direct) rig.direct.disconnect();
    if (rig.server) await rig.server.stop();
    if (rig.work) rmDir(rig.work);
  });
  return rig;
}

module.exports = { useRedisRig };
