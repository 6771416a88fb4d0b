'use strict';
// CPU per thread over the same transfers in Node-RED (asset-download / asset-upload, whose bytes
// move on the asset-server's transfer thread) and in the API client alone (its own process), to
// see where a difference in the processes' CPU lives: the JavaScript thread moving the bytes, or
// the threads a CPU profile does not sample (V8's helpers, libuv's file-system threads).
//   node bench/thread-cpu.js [MiB=256] [runs=3] [download|upload]
// Linux only (/proc/<pid>/task). Per process: the main thread (tid = pid), the busiest other
// thread (in Node-RED the asset-server's transfer thread), and the rest summed as "helpers" (V8's
// platform threads, libuv's thread pool). A thread that ends between two readings is not counted.
const path = require('path');
const fs = require('fs');
const os = require('os');
const crypto = require('crypto');
const { fork } = require('child_process');
const { startEmulator } = require('./lib/emulator');
const { startNodeRed } = require('./lib/nodered');
const { buildFlows, ID } = require('./lib/flows');
const { readThreads } = require('./lib/rss');

const REPO = path.resolve(__dirname, '..');
const { AssetClient } = require(path.join(REPO, 'dist', 'api', 'client'));
const COOKIE_VALUE = 'bench-session';
const COOKIE = `JSESSIONID=${COOKIE_VALUE}`;

function threadCpu(pid) {
  return new Map([...readThreads(pid)].map(([tid, t]) => [tid, { cpu: t.user + t.sys }]));
}

/** CPU seconds per group between two readings: main thread, the busiest other thread, the rest. */
function groups(pid, before, after) {
  const main = String(pid);
  const used = [...after].map(([tid, t]) => ({ tid, cpu: t.cpu - (before.get(tid)?.cpu ?? 0) }));
  const others = used.filter((t) => t.tid !== main).sort((a, b) => b.cpu - a.cpu);
  const sum = (list) => list.reduce((s, t) => s + t.cpu, 0);
  return { main: sum(used.filter((t) => t.tid === main)), busiest: others[0]?.cpu ?? 0, helpers: sum(others.slice(1)), total: sum(used) };
}

const show = (label, ms, g) => console.log(`${label.padEnd(24)} ${String(Math.round(ms)).padStart(6)} ms  CPU s: total ${g.total.toFixed(2)}  ` +
  `main thread ${g.main.toFixed(2)}  busiest other thread ${g.busiest.toFixed(2)}  helpers ${g.helpers.toFixed(2)}`);

async function main() {
  const [mib = 256, runs = 3, op = 'download'] = process.argv.slice(2);
  if (!['download', 'upload'].includes(op)) throw new Error('third argument: download or upload');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-thread-cpu-'));
  const emulator = await startEmulator({ dataDir: path.join(tmp, 'emulator'), cookie: COOKIE_VALUE });
  let nr;
  try {
    const source = path.join(tmp, 'source.bin');
    const fd = fs.openSync(source, 'w');
    for (let i = 0; i < Number(mib); i++) fs.writeSync(fd, crypto.randomBytes(1 << 20));
    fs.closeSync(fd);
    const client = new AssetClient({ baseUrl: emulator.url, cookie: COOKIE });
    const fuid = (await client.upload({ file: { path: source }, destination: '/thread-cpu/source', wait: true })).fuids[0];
    const smallFile = path.join(tmp, 'small.bin');
    fs.writeFileSync(smallFile, crypto.randomBytes(64 * 1024));
    const small = (await client.upload({ file: { path: smallFile }, destination: '/thread-cpu/small', wait: true })).fuids[0];
    client.close();
    nr = await startNodeRed({ userDir: path.join(tmp, 'node-red') });
    await nr.deploy(buildFlows({ emulatorUrl: emulator.url, cookie: COOKIE, types: (await nr.nodeTypes()).types, parts: new Set(['ours']) }));
    const childFile = path.join(__dirname, 'lib', 'client-child.js');
    for (let run = 1; run <= Number(runs); run++) {
      const out = path.join(tmp, `node-red-${run}.bin`);
      let before = threadCpu(nr.pid);
      let started = Date.now();
      const tag = `thread-cpu-${run}`;
      const report = nr.waitReport(tag, 600000);
      await nr.inject(op === 'download' ? ID.downOurs : ID.upOurs, [
        { p: 'benchTag', v: tag, vt: 'str' }, { p: 'benchStart', v: '', vt: 'date' },
        ...(op === 'download'
          ? [{ p: 'fuid', v: String(fuid), vt: 'num' }, { p: 'filename', v: out, vt: 'str' }]
          : [{ p: 'filename', v: source, vt: 'str' }, { p: 'destination', v: `/thread-cpu/node-red-${run}`, vt: 'str' }])
      ]);
      const r = await report;
      if (r.error) throw new Error(r.error);
      show(`Node-RED ${op} ${run}`, Date.now() - started, groups(nr.pid, before, threadCpu(nr.pid)));
      fs.rmSync(out, { force: true });

      // The client alone, in bench/lib/client-child.js: a fresh process that first runs the same
      // operation on a small file, as the bench does (Node-RED's code is warm after its first run).
      const child = fork(childFile, [emulator.url, COOKIE], { stdio: 'inherit' });
      await new Promise((resolve) => child.once('message', resolve));
      const warmed = await new Promise((resolve) => {
        child.once('message', resolve);
        child.send(op === 'download' ? { cmd: 'warm', op, fuid: small, file: `${out}.warm-up` } : { cmd: 'warm', op, file: smallFile, destination: `/thread-cpu/warm-up-${run}` });
      });
      if (!warmed.warmed) throw new Error(warmed.error);
      before = threadCpu(child.pid);
      started = Date.now();
      const done = await new Promise((resolve) => {
        child.once('message', resolve);
        child.send(op === 'download' ? { cmd: 'go', op, fuid, file: out } : { cmd: 'go', op, file: source, destination: `/thread-cpu/client-${run}` });
      });
      if (!done.ok) throw new Error(done.error);
      show(`client alone ${op} ${run}`, Date.now() - started, groups(child.pid, before, threadCpu(child.pid)));
      child.send({ cmd: 'exit' });
      fs.rmSync(out, { force: true });
    }
  } finally {
    if (nr) await nr.stop();
    await emulator.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
