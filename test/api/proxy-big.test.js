'use strict';
// A 256 MiB upload and download through a real squid stream: every byte arrives, and this
// process's RSS (the client and its transfer worker; the emulator runs in a child process) grows
// by far less than the file. Plain HTTP on the caller's thread (the proxy forwards the body), and
// HTTPS on the transfer worker (through a CONNECT tunnel), as an asset-server node uses it.
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { COOKIES, tempDir } = require('./helpers');
const { startSquid, selfSignedCert } = require('./squid');

const MiB = 1024 * 1024;
const SIZE = 256 * MiB;
/** Generous: a body held whole would add at least SIZE. */
const MAX_RSS_GROWTH = 96 * MiB;

/** The emulator in its own process (optionally over TLS), so that only the client is measured. */
function startEmulatorProcess(dataDir, tls) {
  const script = `
    const { startEmulator } = require(${JSON.stringify(path.join(__dirname, '../../dist/emulator'))});
    const tls = process.env.DAM_TEST_TLS ? JSON.parse(process.env.DAM_TEST_TLS) : undefined;
    startEmulator({ port: 0, dataDir: process.argv[1], tls, sessions: [{ value: ${JSON.stringify(COOKIES.editor)}, permissions: ['events', 'add'] }] })
      .then((e) => console.log('listening on ' + e.url), (err) => { console.error(err); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, dataDir], {
      stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DAM_TEST_TLS: tls ? JSON.stringify(tls) : '' }
    });
    let out = '';
    const onData = (chunk) => {
      out += chunk;
      const match = /listening on (https?:\/\/\S+)/.exec(out);
      if (match) { child.stdout.off('data', onData); child.stdout.resume(); resolve({ child, url: match[1] }); }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`emulator exited with ${code} before listening: ${out}`)));
  });
}

/** Samples RSS while `work` runs; resolves its result and the largest growth seen. */
async function measured(work) {
  global.gc?.();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 20);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}

async function sha256(file) {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

describe('api client: 256 MiB up and down through a real proxy, flat memory', function () {
  this.timeout(600000);
  let dir;
  let squid;
  let tls;
  let file;
  let digest;
  const emulators = [];
  before(async () => {
    dir = await tempDir('dam-proxy-big-');
    tls = await selfSignedCert();
    file = path.join(dir, 'source.bin');
    // Not sparse: real, varied bytes, so that a lost or reordered chunk changes the digest.
    const block = crypto.randomBytes(MiB);
    const out = fs.createWriteStream(file);
    for (let i = 0; i < SIZE / MiB; i++) {
      block.writeUInt32LE(i, 0);
      if (!out.write(block)) await new Promise((resolve) => out.once('drain', resolve));
    }
    await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
    digest = await sha256(file);
    // Debian's squid 5.7 has Squid bug 5405 (fixed in squid-cache/squid PR 1887): a plain-HTTP upload
    // that fills its 512 KB request buffer faster than the server drains it is cut (ECONNRESET,
    // TCP_MISS_ABORTED; curl fails the same way). A buffer larger than the file avoids the bug; the
    // buffer is squid's memory, not this process's. HTTPS (a CONNECT tunnel) is not affected.
    squid = await startSquid({ extraConfig: ['client_request_buffer_max_size 300 MB'] });
  });
  after(async () => {
    for (const e of emulators) {
      const exited = new Promise((resolve) => e.child.once('exit', resolve));
      e.child.kill('SIGKILL');
      await exited;
    }
    await squid?.stop();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  for (const [scheme, transferThread] of [['http', 'main'], ['https', 'worker']]) {
    it(`${scheme} (${transferThread} thread): upload then download, every byte, RSS growth < ${MAX_RSS_GROWTH / MiB} MiB`, async () => {
      const emulator = await startEmulatorProcess(path.join(dir, `emulator-${scheme}`), scheme === 'https' ? tls : undefined);
      emulators.push(emulator);
      const api = new AssetClient({ baseUrl: emulator.url, cookie: COOKIES.editor, ca: tls.cert, transferThread, proxy: { url: squid.url } });
      try {
        if (transferThread === 'worker') {
          // The worker thread's own start (a V8 heap of its own) is not the transfer: started first.
          const small = path.join(dir, 'warm-up.bin');
          await fsp.writeFile(small, Buffer.alloc(5 * MiB, 1));
          await api.upload({ file: { path: small }, name: 'warm-up.bin', destination: '/inbox', wait: true });
        }
        const t0 = Date.now();
        const up = await measured(() => api.upload({ file: { path: file }, name: `big-${scheme}.bin`, destination: '/inbox', wait: true }));
        const t1 = Date.now();
        up.result.fuids.length.should.equal(1);
        const target = path.join(dir, `back-${scheme}.bin`);
        const down = await measured(() => api.downloadToFile({ fuid: up.result.fuids[0], path: target }));
        const t2 = Date.now();
        down.result.bytes.should.equal(SIZE);
        (await sha256(target)).should.equal(digest);
        await fsp.rm(target);
        console.log(`      ${scheme} through squid: upload ${(SIZE / MiB / ((t1 - t0) / 1000)).toFixed(0)} MiB/s, RSS +${(up.growth / MiB).toFixed(1)} MiB; ` +
          `download ${(SIZE / MiB / ((t2 - t1) / 1000)).toFixed(0)} MiB/s, RSS +${(down.growth / MiB).toFixed(1)} MiB`);
        up.growth.should.be.below(MAX_RSS_GROWTH);
        down.growth.should.be.below(MAX_RSS_GROWTH);
        // It did go through the proxy.
        const log = (await squid.accessLog()).join('\n');
        if (scheme === 'http') {
          log.should.containEql(` POST ${emulator.url}/review/api/asset/upload`);
          log.should.containEql(` GET ${emulator.url}/review/api/asset/download`);
        } else {
          api.close(); // the worker's tunnels end: squid logs them
          await squid.waitForLog((l) => l.includes(`CONNECT ${new URL(emulator.url).host} `));
        }
      } finally {
        api.close();
      }
    });
  }
});
