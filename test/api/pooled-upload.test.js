'use strict';
// Uploads from a path read the file into pooled, reused buffers (src/api/pooled-file-reader.ts).
// A buffer reused before the socket took its bytes would send another chunk's bytes: four
// uploads at once to a server that reads slowly (so the sockets' queues fill) must still deliver
// every byte of files whose every 64 KiB differ, and the pool must really be reused.
const crypto = require('crypto');
const fs = require('fs');
const fsp = require('fs/promises');
const http = require('http');
const path = require('path');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { poolCounts } = require('../../dist/api/pooled-file-reader');
const { COOKIES, tempDir } = require('./helpers');

const MiB = 1024 * 1024;
const SIZE = 24 * MiB + 12345; // not a whole number of chunks

/** A file whose every 64 KiB block starts with its seed and index, then pseudo-random bytes. */
async function writeDistinctFile(file, seed) {
  const handle = await fsp.open(file, 'w');
  try {
    for (let offset = 0; offset < SIZE; offset += MiB) {
      const block = crypto.createHash('sha256').update(`${seed}:${offset}`).digest();
      const chunk = Buffer.alloc(Math.min(MiB, SIZE - offset));
      for (let i = 0; i < chunk.length; i += 32) block.copy(chunk, i, 0, Math.min(32, chunk.length - i));
      for (let i = 0; i < chunk.length; i += 64 * 1024) chunk.writeUInt32BE((offset + i) ^ seed, i);
      await handle.write(chunk);
    }
  } finally {
    await handle.close();
  }
}

/** Hashes of the uploaded file parts, by file name: reads in small bites with pauses (backpressure). */
function startSlowServer() {
  const received = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      chunks.push(chunk);
      size += chunk.length;
      req.pause();
      setImmediate(() => req.resume());
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks, size);
      const boundary = /boundary=(\S+)/.exec(req.headers['content-type'])[1];
      const name = /name="file"; filename="([^"]+)"/.exec(body.subarray(0, 4096).toString('latin1'))[1];
      const start = body.indexOf('\r\n\r\n', body.indexOf('name="file"')) + 4;
      const end = body.lastIndexOf(`\r\n--${boundary}--`);
      received.set(name, crypto.createHash('sha256').update(body.subarray(start, end)).digest('hex'));
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ success: true, data: { fuids: [1] } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    server, received, url: `http://127.0.0.1:${server.address().port}`
  })));
}

const sha256File = (file) => new Promise((resolve, reject) => {
  const hash = crypto.createHash('sha256');
  fs.createReadStream(file).on('data', (c) => hash.update(c)).on('end', () => resolve(hash.digest('hex'))).on('error', reject);
});

describe('api client: uploads from pooled read buffers', function () {
  this.timeout(180000);
  let dir;
  let slow;
  const files = [];
  before(async () => {
    dir = await tempDir('dam-api-pool-');
    for (let i = 0; i < 4; i++) {
      files.push(path.join(dir, `distinct-${i}.bin`));
      await writeDistinctFile(files[i], i + 1);
    }
    slow = await startSlowServer();
  });
  after(async () => {
    if (slow) await new Promise((resolve) => slow.server.close(resolve));
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('four at once, twice, through slowly read sockets: every byte of every file arrives, and buffers are reused', async () => {
    const api = new AssetClient({ baseUrl: slow.url, cookie: COOKIES.editor, transferThread: 'main' });
    try {
      const before = { ...poolCounts };
      for (let round = 0; round < 2; round++) {
        await Promise.all(files.map((file) => api.upload({ file: { path: file }, destination: '/pool' })));
        for (const file of files) slow.received.get(path.basename(file)).should.equal(await sha256File(file), `${file}, round ${round + 1}`);
        slow.received.clear();
      }
      const reads = (poolCounts.reused - before.reused) + (poolCounts.allocated - before.allocated);
      reads.should.be.aboveOrEqual(8 * 24);
      // Most chunks went into a buffer that had been sent before.
      (poolCounts.reused - before.reused).should.be.above(reads / 2);
    } finally {
      api.close();
    }
  });

  it('the same on the transfer thread (the default for files of 4 MiB or more): every byte of every file arrives', async () => {
    const api = new AssetClient({ baseUrl: slow.url, cookie: COOKIES.editor, transferThread: 'worker' });
    try {
      for (let round = 0; round < 2; round++) {
        await Promise.all(files.map((file) => api.upload({ file: { path: file }, destination: '/pool' })));
        for (const file of files) slow.received.get(path.basename(file)).should.equal(await sha256File(file), `${file}, round ${round + 1}`);
        slow.received.clear();
      }
    } finally {
      api.close();
    }
  });
});
