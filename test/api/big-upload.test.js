'use strict';
// A 1 GiB upload from disk streams: the client process's RSS grows by < 64 MiB.
// The emulator runs in its own process (the real CLI), so only the client is measured.
const { spawn } = require('child_process');
const fsp = require('fs/promises');
const path = require('path');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { COOKIES, tempDir } = require('./helpers');

const GiB = 1024 * 1024 * 1024;
const MiB = 1024 * 1024;

function startEmulatorProcess(dataDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [
      path.join(__dirname, '../../dist/emulator/cli.js'),
      '--host', '127.0.0.1', '--port', '0', '--data', dataDir, '--quiet', '--session', `${COOKIES.editor}:events,add`
    ], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const onData = (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve({ child, url: match[1] });
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`emulator exited with ${code} before listening: ${out}`)));
    child.once('error', reject);
  });
}

describe('api client: 1 GiB upload from disk and back', function () {
  this.timeout(180000);
  let dir;
  let emulator;
  let file;
  let uploaded;
  before(async () => {
    dir = await tempDir('dam-api-big-');
    file = path.join(dir, 'one-gib.bin');
    const handle = await fsp.open(file, 'w');
    await handle.truncate(GiB); // sparse: no GiB of disk used for the source
    await handle.close();
    emulator = await startEmulatorProcess(path.join(dir, 'emulator-data'));
  });
  after(async () => {
    if (emulator) {
      const exited = new Promise((resolve) => emulator.child.once('exit', resolve));
      emulator.child.kill('SIGTERM');
      await exited;
    }
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('streams the file: RSS grows by less than 64 MiB, every byte arrives, progress reaches the total', async () => {
    const api = new AssetClient({ baseUrl: emulator.url, cookie: COOKIES.editor });
    // Warm up the same code path (modules, socket) with a small file; the baseline is taken after it.
    const warmup = path.join(dir, 'warmup.bin');
    await fsp.writeFile(warmup, Buffer.alloc(4 * MiB));
    await api.upload({ file: { path: warmup }, destination: '/big', wait: true });
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
    let last;
    const started = Date.now();
    let outcome;
    try {
      outcome = await api.upload({ file: { path: file }, destination: '/big', wait: true, onProgress: (p) => { last = p; } });
    } finally {
      clearInterval(sampler);
      api.close();
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const seconds = (Date.now() - started) / 1000;
    const growth = peak - baseline;
    console.log(`      1 GiB in ${seconds.toFixed(1)} s (${(1024 / seconds).toFixed(0)} MiB/s), RSS growth ${(growth / MiB).toFixed(1)} MiB`);
    outcome.result.length.should.equal(GiB);
    outcome.fuids.should.have.length(1);
    last.should.eql({ bytes: GiB, total: GiB });
    growth.should.be.below(64 * MiB);
    uploaded = outcome.fuids[0];
  });

  it('downloads it back to a file: RSS grows by less than 64 MiB, every byte arrives', async function () {
    if (uploaded === undefined) this.skip();
    const api = new AssetClient({ baseUrl: emulator.url, cookie: COOKIES.editor });
    const target = path.join(dir, 'back', 'one-gib.bin');
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
    const started = Date.now();
    let done;
    try {
      done = await api.downloadToFile({ fuid: uploaded, path: target });
    } finally {
      clearInterval(sampler);
      api.close();
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const seconds = (Date.now() - started) / 1000;
    console.log(`      1 GiB back in ${seconds.toFixed(1)} s (${(1024 / seconds).toFixed(0)} MiB/s), RSS growth ${((peak - baseline) / MiB).toFixed(1)} MiB`);
    done.bytes.should.equal(GiB);
    (await fsp.stat(target)).size.should.equal(GiB);
    (peak - baseline).should.be.below(64 * MiB);
  });
});
