'use strict';
// `--only hotfolder`: asset-hot-folder in a real Node-RED against `curl -F` run over the same files
// with the same parallelism (`xargs -P N`), both to the emulator (its own process). Two sets: many
// small files (2,000 × 100 kB) and a few big ones (10 × 256 MiB); --quick: 200 × 100 kB and 4 × 16 MiB.
// Runs of curl and of the node alternate. For the node the clock starts when the files are renamed
// into the watched folder (one atomic rename each, as a scanner or a copy-then-rename does) and
// stops when the last file's message left output 1; its untouched interval is set to 0.1 s (the
// node's default is 5 s, a fixed delay per file that would measure the setting, not the node).
// Node-RED's CPU (user + system) and peak RSS growth are read from /proc during each run.
// Before each node run one warm-up file (WARM_UP_BYTES, big enough for the client's transfer
// thread) goes through the freshly deployed flow and is measured apart: the thread's start (a
// worker with its own V8 heap, once per deploy) is a fixed cost of the first big file, not a cost
// per file or per byte; counted inside a 4 × 16 MiB batch it was most of the time and memory.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { MiB, median, formatSize, request } = require('./util');
const { measurePeak } = require('./rss');
const { makeFile, checkDiskSpace } = require('./files');
const { startEmulator } = require('./emulator');
const { startNodeRed } = require('./nodered');

const PARALLEL = 4;
const UNTOUCHED_S = 0.1;
/** The warm-up file: above the client's 4 MiB threshold for the transfer thread. */
const WARM_UP_BYTES = 5 * MiB;
const WARM_UP_NAME = 'warm-up.bin';

function sets(quick) {
  return quick
    ? [{ name: 'small', files: 200, size: 100 * 1000 }, { name: 'big', files: 4, size: 16 * MiB }]
    : [{ name: 'small', files: 2000, size: 100 * 1000 }, { name: 'big', files: 10, size: 256 * MiB }];
}

/** The flow: a hot folder on `watched` -> a function that reports once `expected` files are in. */
function hotFlow({ emulatorUrl, cookie, watched, done, expected, tag }) {
  const z = 'b0000000000000h1';
  return [
    { id: z, type: 'tab', label: 'hot folder bench' },
    { id: 'b0000000000000h2', type: 'asset-server', name: 'bench', baseUrl: emulatorUrl, timeout: 300, credentials: { cookie } },
    { id: 'b0000000000000h3', type: 'asset-hot-folder', z, server: 'b0000000000000h2', folder: watched, recursive: false, mode: 'events',
      untouchedSeconds: UNTOUCHED_S, rescanSeconds: 1, include: '', exclude: '', afterUpload: 'move', doneFolder: done, failedFolder: '',
      subfolders: 'keep', destination: '/hot', destinationType: 'str', wait: 'true', waitType: 'bool', expandZip: 'false', expandZipType: 'bool',
      maxParallel: PARALLEL, retries: 0, x: 0, y: 0, wires: [['b0000000000000h4'], ['b0000000000000h4']] },
    { id: 'b0000000000000h4', type: 'function', z, name: 'count', outputs: 0, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [],
      func: [
        `if (msg.relativePath === ${JSON.stringify(WARM_UP_NAME)}) { global.get("benchReport")({ tag: ${JSON.stringify(tag + '-warm')}, failed: msg.assetError ? 1 : 0 }); return null; }`,
        // When the first upload started (msg.durationMs runs from the upload's start): splits the batch's time
        // into the wait before any upload (the untouched interval, the scan) and the uploads themselves.
        'if (typeof msg.durationMs === "number") context.set("firstStart", Math.min(context.get("firstStart") || Infinity, Date.now() - msg.durationMs));',
        `const n = (context.get(${JSON.stringify(tag)}) || 0) + 1;`,
        `context.set(${JSON.stringify(tag)}, n);`,
        'if (msg.assetError) context.set("failed", (context.get("failed") || 0) + 1);',
        `if (n === ${expected}) global.get("benchReport")({ tag: ${JSON.stringify(tag)}, failed: context.get("failed") || 0, firstStart: context.get("firstStart") });`,
        'return null;'
      ].join('\n'), x: 0, y: 0, wires: [] }
  ];
}

/** `curl -F` over every file of `dir`, `PARALLEL` at once; resolves with the seconds it took. */
function curlLoop(dir, url, cookie) {
  const script = `cd "$1" && ls -1 | xargs -d '\\n' -P ${PARALLEL} -I{} curl -sS -f -o /dev/null -H "Cookie: $2" ` +
    `-F destination=/curl -F wait=true -F expandZip=false -F "file=@{}" "$3/review/api/asset/upload"`;
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script, 'curl-loop', dir, cookie, url], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => code === 0 ? resolve(Number(process.hrtime.bigint() - started) / 1e9)
      : reject(new Error(`curl loop exited ${code}: ${err.slice(0, 300)}`)));
  });
}

/** Files in the server folder `serverPath` (emulator-only endpoint). */
async function serverFileCount(url, cookie, serverPath) {
  const r = await request('GET', `${url}/emulator/assets?path=${encodeURIComponent(serverPath)}`, { headers: { Cookie: cookie } });
  if (r.status !== 200) return 0;
  const body = r.json();
  return body.success ? (body.asset.children || []).length : 0;
}

function moveAll(from, to) {
  for (const name of fs.readdirSync(from)) fs.renameSync(path.join(from, name), path.join(to, name));
}

/**
 * Runs both variants `opts.runs` times per set. Returns rows:
 * { set, files, size, variant: 'curl' | 'node', runs: [{ seconds, cpu, growth }], filesPerSec, mibPerSec, cpu, growth }.
 */
async function runHotFolder({ opts, log, tmp, cookieValue }) {
  const cookie = `JSESSIONID=${cookieValue}`;
  const rows = [];
  for (const set of sets(opts.quick)) {
    const bytes = set.files * set.size;
    checkDiskSpace(tmp, bytes * 2 + 512 * MiB);
    log(`\n== hot folder: ${set.files} × ${formatSize(set.size)} (${PARALLEL} at once)`);
    const base = path.join(tmp, `hot-${set.name}`);
    const staging = path.join(base, 'staging');
    const watched = path.join(base, 'watched');
    const done = path.join(base, 'done');
    for (const d of [staging, watched, done]) fs.mkdirSync(d, { recursive: true });
    for (let i = 0; i < set.files; i++) {
      const file = path.join(staging, `file-${String(i).padStart(5, '0')}.bin`);
      if (set.size >= MiB) await makeFile(file, set.size);
      else fs.writeFileSync(file, crypto.randomBytes(set.size));
    }
    const warmUpStaging = path.join(base, WARM_UP_NAME);
    await makeFile(warmUpStaging, WARM_UP_BYTES);
    const runs = { curl: [], node: [] };
    let nr;
    let emulator;
    try {
      nr = await startNodeRed({ userDir: path.join(base, 'node-red'), log: () => {} });
      for (let run = 1; run <= opts.runs; run++) {
        for (const variant of ['curl', 'node']) {
          // A fresh emulator each run: its stored copies would fill the disk otherwise.
          if (emulator) { await emulator.stop(); fs.rmSync(emulator.dataDir, { recursive: true, force: true }); }
          emulator = await startEmulator({ dataDir: path.join(base, `emulator-${run}-${variant}`), cookie: cookieValue });
          if (variant === 'curl') {
            const seconds = await curlLoop(staging, emulator.url, cookie);
            const stored = await serverFileCount(emulator.url, cookie, '/curl');
            if (stored !== set.files) throw new Error(`curl loop: ${stored} of ${set.files} files stored`);
            runs.curl.push({ seconds });
            log(`  run ${run} curl -F: ${seconds.toFixed(2)} s`);
          } else {
            const tag = `hot-${set.name}-${run}`;
            await nr.deploy(hotFlow({ emulatorUrl: emulator.url, cookie, watched, done, expected: set.files, tag }));
            const warmUp = await measurePeak(nr.pid, async () => {
              const waiting = nr.waitReport(`${tag}-warm`, 600 * 1000);
              const started = process.hrtime.bigint();
              fs.copyFileSync(warmUpStaging, path.join(base, 'warm-up.tmp'));
              fs.renameSync(path.join(base, 'warm-up.tmp'), path.join(watched, WARM_UP_NAME));
              const report = await waiting;
              return { seconds: Number(process.hrtime.bigint() - started) / 1e9, failed: report.failed };
            });
            if (warmUp.result.failed) throw new Error('hot folder: the warm-up file failed');
            fs.rmSync(path.join(done, WARM_UP_NAME));
            const measured = await measurePeak(nr.pid, async () => {
              const waiting = nr.waitReport(tag, 3600 * 1000);
              const started = process.hrtime.bigint();
              const startedAt = Date.now();
              moveAll(staging, watched);
              const report = await waiting;
              return { seconds: Number(process.hrtime.bigint() - started) / 1e9, failed: report.failed, firstUploadAfter: (report.firstStart - startedAt) / 1000 };
            });
            if (measured.result.failed) throw new Error(`hot folder: ${measured.result.failed} file(s) failed`);
            const stored = await serverFileCount(emulator.url, cookie, '/hot');
            if (stored !== set.files + 1) throw new Error(`hot folder: ${stored - 1} of ${set.files} files stored`);
            runs.node.push({ seconds: measured.result.seconds, cpu: measured.cpu, growth: measured.growth,
              warmUp: { seconds: warmUp.result.seconds, growth: warmUp.growth }, growthFromDeploy: measured.peak - warmUp.idle,
              firstUploadAfter: measured.result.firstUploadAfter });
            log(`  run ${run} hot folder: warm-up file ${warmUp.result.seconds.toFixed(2)} s, RSS +${(warmUp.growth / MiB).toFixed(1)} MiB; ` +
              `batch ${measured.result.seconds.toFixed(2)} s (first upload started after ${measured.result.firstUploadAfter.toFixed(2)} s), CPU ${measured.cpu.toFixed(2)} s, RSS growth ${(measured.growth / MiB).toFixed(1)} MiB ` +
              `(${((measured.peak - warmUp.idle) / MiB).toFixed(1)} MiB over the RSS before the warm-up)`);
            moveAll(done, staging);
          }
        }
      }
    } finally {
      if (nr) await nr.stop();
      if (emulator) { await emulator.stop(); fs.rmSync(emulator.dataDir, { recursive: true, force: true }); }
      fs.rmSync(base, { recursive: true, force: true });
    }
    for (const variant of ['curl', 'node']) {
      const seconds = median(runs[variant].map((r) => r.seconds));
      rows.push({
        set: set.name, files: set.files, size: set.size, variant, runs: runs[variant], seconds,
        filesPerSec: set.files / seconds, mibPerSec: bytes / MiB / seconds,
        cpu: variant === 'node' ? median(runs.node.map((r) => r.cpu)) : undefined,
        growth: variant === 'node' ? Math.max(...runs.node.map((r) => r.growth)) : undefined,
        // The first big file after a deploy (starts the transfer thread), and the batch's peak over the RSS before it.
        warmUpSeconds: variant === 'node' ? median(runs.node.map((r) => r.warmUp.seconds)) : undefined,
        warmUpGrowth: variant === 'node' ? Math.max(...runs.node.map((r) => r.warmUp.growth)) : undefined,
        growthFromDeploy: variant === 'node' ? Math.max(...runs.node.map((r) => r.growthFromDeploy)) : undefined,
        firstUploadAfter: variant === 'node' ? median(runs.node.map((r) => r.firstUploadAfter)) : undefined
      });
    }
  }
  return { parallel: PARALLEL, untouchedSeconds: UNTOUCHED_S, warmUpBytes: WARM_UP_BYTES, rows };
}

module.exports = { runHotFolder };
