'use strict';
// An upload with wait=true may wait waitInMinutes for the ingest (no upper bound in the spec).
// Past Node's longest timer (2^31-1 ms, ~35,791 minutes) setTimeout fires after 1 ms: the upload
// then timed out the moment its file was sent, while the server went on ingesting, and a retry
// made a second revision.
require('should');
const { AssetClient } = require('../../dist/api/client');
const { startEmulator } = require('../../dist/emulator');

describe('client: a very long waitInMinutes', function () {
  this.timeout(20000);
  let emulator, client;
  before(async () => {
    // A slow server: every ingest takes at least 300 ms.
    emulator = await startEmulator({ port: 0, ingestDelayMs: 300 });
    client = new AssetClient({ baseUrl: emulator.url, cookie: 'local-dev', timeout: 5000 });
  });
  after(async () => {
    client.close();
    await emulator.close();
  });

  it('waits for the ingest instead of timing out at once (waitInMinutes 100,000)', async () => {
    const outcome = await client.upload({
      file: { buffer: Buffer.from('long wait') }, name: 'long-wait.txt', destination: '/long', wait: true, waitInMinutes: 100000
    });
    outcome.fuids.length.should.equal(1);
  });
});
