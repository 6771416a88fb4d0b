'use strict';
// Interleaved A/B of the asset-upload node (inject -> asset-upload, transfer worker): one emulator,
// two Node-RED processes side by side, one with another checkout's code (built, npm ci done), one
// with this one; uploads of one file alternate old/new, new/old; CPU per thread from /proc.
//   node bench/ab-upload.js OTHER_CHECKOUT [MiB=256] [pairs=8]
// PROFILE=old|new|both adds --cpu-prof (files in $PROFILE_DIR or the temp dir, ab-prof-<name>/);
// EXTRA adds node options to both Node-REDs (e.g. --single-threaded-gc).
// Same checkout twice (A/A) shows the harness's own bias. docs/performance.md has results.
const path = require('path'); const fs = require('fs'); const os = require('os'); const crypto = require('crypto');
const NEW = path.resolve(__dirname, '..');
if (!process.argv[2]) { console.error('usage: node bench/ab-upload.js OTHER_CHECKOUT [MiB] [pairs]'); process.exit(2); }
const OLD = path.resolve(process.argv[2]);
const { startEmulator } = require(NEW + '/bench/lib/emulator');
const { CLOCK_TICKS } = require(NEW + '/bench/lib/rss');
function threadCpu(pid) {
  const out = new Map();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const rest = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ').pop().split(' ');
      out.set(tid, (Number(rest[11]) + Number(rest[12])) / CLOCK_TICKS);
    } catch { /* the thread ended */ }
  }
  return out;
}
function groups(pid, before, after) {
  const main = String(pid);
  const used = [...after].map(([tid, c]) => ({ tid, cpu: c - (before.get(tid) ?? 0) }));
  const others = used.filter((t) => t.tid !== main).sort((a, b) => b.cpu - a.cpu);
  const sum = (l) => l.reduce((s, t) => s + t.cpu, 0);
  return { main: sum(used.filter((t) => t.tid === main)), busiest: others[0]?.cpu ?? 0, helpers: sum(others.slice(1)), total: sum(used) };
}
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
async function main() {
  const mib = Number(process.argv[3] || 256), pairs = Number(process.argv[4] || 8);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pb-ab-'));
  const cookie = 'JSESSIONID=bench-session';
  const emulator = await startEmulator({ dataDir: path.join(tmp, 'emu'), cookie: 'bench-session' });
  const nrs = {};
  try {
    const source = path.join(tmp, 'source.bin');
    const fd = fs.openSync(source, 'w');
    for (let i = 0; i < mib; i++) fs.writeSync(fd, crypto.randomBytes(1 << 20));
    fs.closeSync(fd);
    for (const [name, repo] of [['old', OLD], ['new', NEW]]) {
      const prof = process.env.PROFILE === name || process.env.PROFILE === 'both';
      const profDir = path.join(process.env.PROFILE_DIR || os.tmpdir(), `ab-prof-${name}`);
      if (prof) { fs.rmSync(profDir, { recursive: true, force: true }); fs.mkdirSync(profDir, { recursive: true }); }
      process.env.BENCH_NODE_RED_ARGS = (prof ? `--cpu-prof --cpu-prof-dir=${profDir} ` : '') + (process.env.EXTRA || '');
      const { startNodeRed } = require(repo + '/bench/lib/nodered');
      const { buildFlows, ID } = require(repo + '/bench/lib/flows');
      const nr = await startNodeRed({ userDir: path.join(tmp, `nr-${name}`) });
      await nr.deploy(buildFlows({ emulatorUrl: emulator.url, cookie, types: (await nr.nodeTypes()).types, parts: new Set(['ours']) }));
      nrs[name] = { nr, ID, rows: [] };
    }
    let n = 0;
    const run = async (name, keep) => {
      const { nr, ID, rows } = nrs[name];
      const tag = `ab-${++n}`;
      const before = threadCpu(nr.pid); const t0 = Date.now();
      const report = nr.waitReport(tag, 600000);
      await nr.inject(ID.upOurs, [{ p: 'benchTag', v: tag, vt: 'str' }, { p: 'benchStart', v: '', vt: 'date' },
        { p: 'filename', v: source, vt: 'str' }, { p: 'destination', v: `/ab/${tag}`, vt: 'str' }]);
      const r = await report; if (r.error) throw new Error(r.error);
      const ms = Date.now() - t0; const g = groups(nr.pid, before, threadCpu(nr.pid));
      const perGiB = (x) => x * 1024 / mib;
      const row = { ms, mibs: mib / (ms / 1000), total: perGiB(g.total), main: perGiB(g.main), worker: perGiB(g.busiest), helpers: perGiB(g.helpers) };
      if (keep) rows.push(row);
      console.log(`${keep ? '' : '(warm) '}${name} ${ms} ms ${row.mibs.toFixed(0)} MiB/s  CPU s/GiB total ${row.total.toFixed(2)} main ${row.main.toFixed(2)} worker ${row.worker.toFixed(2)} helpers ${row.helpers.toFixed(2)}`);
    };
    await run('old', false); await run('new', false);
    for (let i = 0; i < pairs; i++) {
      const order = i % 2 ? ['new', 'old'] : ['old', 'new'];
      for (const name of order) await run(name, true);
    }
    console.log('\nmedians over', pairs, 'runs each:');
    for (const name of ['old', 'new']) {
      const rows = nrs[name].rows;
      const f = (k) => median(rows.map((r) => r[k])).toFixed(2);
      console.log(`${name}: MiB/s ${f('mibs')}  CPU s/GiB total ${f('total')} main ${f('main')} worker ${f('worker')} helpers ${f('helpers')}`);
    }
    const d = nrs.new.rows.map((r, i) => r.total - nrs.old.rows[i].total);
    console.log('pair diffs new-old total s/GiB:', d.map((x) => x.toFixed(2)).join(' '), ' new higher in', d.filter((x) => x > 0).length, 'of', d.length);
    console.log('JSON', JSON.stringify({ old: nrs.old.rows, new: nrs.new.rows }));
  } finally {
    for (const { nr } of Object.values(nrs)) await nr.stop();
    await emulator.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
