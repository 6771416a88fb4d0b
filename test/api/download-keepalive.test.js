'use strict';
// Downloads of chunked answers (no Content-Length) over one kept-alive socket: the reset watch
// that makes a close-delimited body complete only on a clean end (issue 22 item 10) must not add
// a listener to the shared socket per download (MaxListenersExceededWarning, a leak per call).
require('should');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { AssetClient } = require('../../dist/api/client');

describe('download: chunked answers on a kept-alive socket', function () {
  let server, client, dir;
  const sockets = new Set();
  const warnings = [];
  const onWarning = (w) => { if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message); };

  before(async () => {
    process.on('warning', onWarning);
    server = http.createServer((req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'attachment; filename="a.bin"' });
      res.write('chunk one ');
      res.end('chunk two'); // chunked: no Content-Length
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new AssetClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, cookie: 'c', timeout: 5000, maxSockets: 1 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-dl-keepalive-'));
  });
  after(() => {
    process.removeListener('warning', onWarning);
    client.close();
    server.closeAllConnections();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('twenty downloads on one socket: complete, and no listener piles up on it', async function () {
    for (let i = 0; i < 20; i++) {
      const result = await client.downloadToFile({ fuid: 1, path: path.join(dir, `f${i}.bin`) });
      fs.readFileSync(result.path, 'utf8').should.equal('chunk one chunk two');
    }
    sockets.size.should.equal(1, 'the downloads shared one socket');
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    warnings.should.eql([]);
  });
});
