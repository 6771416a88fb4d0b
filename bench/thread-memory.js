'use strict';
// RSS of one client process (no Node-RED) around 4 parallel uploads of SIZE MiB to an emulator
// (its own process): idle, after the transfer thread's first job (WARM=1), and three rounds.
// How docs/performance.md's hot-folder memory figures were split into the transfer thread's start,
// its first uploads and later ones. THREAD=main runs the uploads on the main thread instead.
// Try also: node --trace-gc bench/thread-memory.js (the worker's heap), MALLOC_ARENA_MAX=1 (glibc arenas).
//   node bench/thread-memory.js            SIZE=64 WARM=1 node bench/thread-memory.js
const fs = require('fs');
const os = require('os');
const path = require('path');
const { startEmulator } = require('./lib/emulator');
const { makeFile } = require('./lib/files');
const { readMemory, resetPeak } = require('./lib/rss');
const { AssetClient } = require('../dist/api/client');

const MiB = 1 << 20;
const SIZE = Number(process.env.SIZE || 16) * MiB;
const THREAD = process.env.THREAD || 'worker';
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function show(label) {
  const m = readMemory(process.pid);
  const u = process.memoryUsage();
  console.log(`${label}: RSS ${(m.rss / MiB).toFixed(1)} MiB, peak ${(m.hwm / MiB).toFixed(1)}; main thread heap used ${(u.heapUsed / MiB).toFixed(1)}, ` +
    `external ${(u.external / MiB).toFixed(1)}, array buffers ${(u.arrayBuffers / MiB).toFixed(1)}`);
  return m;
}

(async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'thread-memory-'));
  const emulator = await startEmulator({ dataDir: path.join(tmp, 'emulator'), cookie: 'thread-memory' });
  const client = new AssetClient({ baseUrl: emulator.url, cookie: 'JSESSIONID=thread-memory', timeout: 300000, transferThread: THREAD });
  try {
    const files = [];
    for (let i = 0; i < 4; i++) { files.push(path.join(tmp, `f${i}.bin`)); await makeFile(files[i], SIZE); }
    const warmUpFile = path.join(tmp, 'warm-up.bin');
    await makeFile(warmUpFile, 5 * MiB);
    await client.getSubscription('thread-memory-1').catch(() => undefined);
    await pause(500);
    const idle = show('idle (client made, one small call)');
    if (process.env.WARM === '1') {
      resetPeak(process.pid);
      await client.upload({ file: { path: warmUpFile }, destination: '/warm', wait: true });
      await pause(500);
      const m = show('after one 5 MiB upload (the transfer thread started)');
      console.log(`  warm-up: peak ${((m.hwm - idle.rss) / MiB).toFixed(1)} MiB over idle`);
    }
    for (let round = 1; round <= 3; round++) {
      const before = show(`round ${round}, before`);
      resetPeak(process.pid);
      const started = Date.now();
      await Promise.all(files.map((file) => client.upload({ file: { path: file }, destination: `/round${round}`, wait: true })));
      const after = show(`round ${round}, after ${Date.now() - started} ms`);
      console.log(`  round ${round}: peak ${((after.hwm - idle.rss) / MiB).toFixed(1)} MiB over idle, ${((after.hwm - before.rss) / MiB).toFixed(1)} over the round's start`);
      await pause(500);
    }
  } finally {
    client.close();
    await emulator.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
})().catch((err) => { console.error(err); process.exit(1); });
