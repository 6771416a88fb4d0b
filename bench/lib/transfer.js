'use strict';
// Cases 1 and 2: upload a file from disk to the emulator and download it back to disk, with
// curl, bare Node (child process), the API client (child process), asset-upload/-download in
// Node-RED, and core nodes.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { spawn, fork } = require('child_process');
const { median, sha256File, MiB } = require('./util');
const { measurePeak, readMemory, readCpu } = require('./rss');
const { ID } = require('./flows');
const { AssetClient } = require(path.join(__dirname, '..', '..', 'dist', 'api', 'client'));

const CLIENT_CHILD = path.join(__dirname, 'client-child.js');
const BARE_CHILD = path.join(__dirname, 'bare-child.js');

/** Generous time limit for one transfer: 60 s plus 10 MB/s. */
const timeLimitMs = (size) => 60000 + size / 10e3;

/**
 * Runs curl, samples its RSS, returns { ms, status, body, peak, cpu }. curl runs under bash so
 * that the `times` builtin can report the CPU time it used (it is gone before /proc can tell).
 */
function runCurl(args, size) {
  return new Promise((resolve, reject) => {
    const script = 'curl "$@"; rc=$?; echo "@@TIMES" >&2; times >&2; exit $rc';
    const child = spawn('bash', ['-c', script, 'curl', ...args, '-w', '\n@@BENCH %{http_code} %{time_total}'],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let peak = 0;
    let curlPid;
    const sample = () => {
      // curl is the child of the bash wrapper
      if (!curlPid) {
        try { curlPid = Number(fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]) || undefined; } catch { /* not yet */ }
      }
      const m = curlPid && readMemory(curlPid);
      if (m && m.rss > peak) peak = m.rss;
    };
    const timer = setInterval(sample, 20);
    const killer = setTimeout(() => child.kill('SIGKILL'), timeLimitMs(size));
    child.stdout.setEncoding('utf8').on('data', (t) => { out += t; });
    child.stderr.setEncoding('utf8').on('data', (t) => { err += t; });
    child.on('error', (e) => { clearInterval(timer); clearTimeout(killer); reject(e); });
    child.on('close', (code) => {
      clearInterval(timer);
      clearTimeout(killer);
      const m = /@@BENCH (\d+) ([\d.]+)\s*$/.exec(out);
      const [curlErr, times = ''] = err.split('@@TIMES');
      if (code !== 0 || !m) return reject(new Error(`curl exited with ${code}: ${curlErr.trim() || out.slice(-200)}`));
      // `times`: shell user/sys, then children's user/sys, e.g. "0m0.123s 0m0.456s"
      const secs = [...times.matchAll(/(\d+)m([\d.]+)s/g)].map((t) => Number(t[1]) * 60 + Number(t[2]));
      const cpu = secs.length >= 4 ? secs[2] + secs[3] : NaN;
      resolve({ status: Number(m[1]), ms: Number(m[2]) * 1000, body: out.slice(0, m.index), peak, cpu });
    });
  });
}

/**
 * Forks the client child (or, with `script` BARE_CHILD, the bare-Node one), measures its RSS over
 * one job, returns { ms, idle, peak, growth, ... }.
 */
function runClientChild(ctx, job, size, script = CLIENT_CHILD) {
  return new Promise((resolve, reject) => {
    const child = fork(script, [ctx.emulator.url, ctx.cookie], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t) => { stderr += t; });
    const killer = setTimeout(() => child.kill('SIGKILL'), timeLimitMs(size));
    let settled = false;
    const finish = (fn, v) => { if (!settled) { settled = true; clearTimeout(killer); fn(v); } };
    child.on('exit', (code) => finish(reject, new Error(`client process exited (code ${code}) ${stderr.trim().slice(-300)}`)));
    child.on('message', async (m) => {
      if (!m.ready) return;
      try {
        if (job.warm) {
          const warmed = await new Promise((res) => { child.once('message', res); child.send({ cmd: 'warm', ...job.warm }); });
          if (!warmed.warmed) throw new Error(`warm-up ${job.op}: ${warmed.error}`);
        }
        const measured = await measurePeak(child.pid, () => new Promise((res) => {
          child.once('message', res);
          child.send({ cmd: 'go', ...job });
        }));
        child.send({ cmd: 'exit' });
        const r = measured.result;
        if (!r.ok) return finish(reject, new Error(r.error));
        finish(resolve, { ...r, idle: measured.idle, peak: measured.peak, growth: measured.growth, cpu: measured.cpu });
      } catch (e) {
        child.kill('SIGKILL');
        finish(reject, e);
      }
    });
  });
}

/**
 * Presses the inject node `injectId` with `props`, measuring Node-RED's RSS until the flow reports.
 * Our flows and the core-node flows run in two Node-RED processes, so that neither's memory
 * (or garbage collection) shows up in the other's figures.
 */
async function runFlow(ctx, injectId, tag, props, size) {
  const nr = await ctx.nodeRed(injectId === ID.upCore || injectId === ID.downCore ? 'core' : 'ours');
  // No forced gc() before a run: it shrinks V8's heap limits, and the transfer that follows then
  // spends 3 to 6 times the CPU in garbage collection (measured: 256 MiB download, 0.4 s -> 2.2 s).
  const measured = await measurePeak(nr.pid, async () => {
    const report = nr.waitReport(tag, timeLimitMs(size));
    await nr.inject(injectId, [
      { p: 'benchTag', v: tag, vt: 'str' },
      { p: 'benchStart', v: '', vt: 'date' },
      ...props
    ]);
    return report;
  });
  const r = measured.result;
  if (r.error) throw new Error(`${r.source || 'flow'}: ${r.error}`);
  // Growth over the process's idle RSS right after start: what a file costs this Node-RED,
  // including memory an earlier run left behind (the core nodes' Buffers are not always
  // collected before the next run, so the RSS just before a run would understate them).
  return {
    ...r, idle: nr.idleRss, peak: measured.peak, growth: measured.peak - nr.idleRss,
    growthOverPreRun: measured.growth, preRunRss: measured.idle, cpu: measured.cpu, cpuUser: measured.cpuUser, cpuSys: measured.cpuSys
  };
}

function uploadChecked(result, size, statusCode) {
  if (statusCode !== undefined && statusCode !== 200) throw new Error(`HTTP ${statusCode}`);
  if (!result || result.success !== true) throw new Error(`upload failed: ${JSON.stringify(result).slice(0, 200)}`);
  if (result.length !== undefined && Number(result.length) !== size) throw new Error(`server received ${result.length} bytes, sent ${size}`);
  const fuid = result.data && result.data.fuids ? result.data.fuids[0] : result.fuids && result.fuids[0];
  return fuid;
}

/**
 * The warm-up job of a child process (bare Node, client): the same operation on a small file
 * (WARM_UP_BYTES), made and uploaded once per emulator by `prepareWarmUp`.
 */
const WARM_UP_BYTES = 64 * 1024;
const warmUpload = (ctx, destination) => ({ op: 'upload', file: ctx.warmUp.file, destination: `${destination}-warm-up` });
const warmDownload = (ctx, out) => ({ op: 'download', fuid: ctx.warmUp.fuid, file: `${out}.warm-up` });

async function prepareWarmUp(ctx) {
  const file = path.join(ctx.tmp, 'warm-up.bin');
  fs.writeFileSync(file, crypto.randomBytes(WARM_UP_BYTES));
  const client = new AssetClient({ baseUrl: ctx.emulator.url, cookie: ctx.cookie });
  try {
    const r = await client.upload({ file: { path: file }, destination: '/bench/warm-up', wait: true });
    ctx.warmUp = { file, fuid: r.fuids[0] };
  } finally {
    client.close();
  }
}

const UPLOADS = {
  curl: async (ctx, { file, size, destination }) => {
    const r = await runCurl(['-sS', '--noproxy', '*', '-H', `Cookie: ${ctx.cookie}`,
      '-F', `file=@${file};type=application/octet-stream`, '-F', `destination=${destination}`, '-F', 'wait=true',
      `${ctx.emulator.url}/review/api/asset/upload`], size);
    const fuid = uploadChecked(JSON.parse(r.body), size, r.status);
    return { ms: r.ms, fuid, idle: NaN, peak: r.peak, growth: NaN, cpu: r.cpu };
  },
  bare: async (ctx, { file, size, destination }) => {
    const r = await runClientChild(ctx, { op: 'upload', file, destination, warm: warmUpload(ctx, destination) }, size, BARE_CHILD);
    const fuid = uploadChecked({ success: r.result.success, length: r.result.length, fuids: r.result.fuids }, size);
    return { ...r, fuid };
  },
  client: async (ctx, { file, size, destination }) => {
    const r = await runClientChild(ctx, { op: 'upload', file, destination, warm: warmUpload(ctx, destination) }, size);
    const fuid = uploadChecked({ success: r.result.success, length: r.result.length, fuids: r.result.fuids }, size);
    return { ...r, fuid };
  },
  node: async (ctx, { file, size, destination, tag }) => {
    const r = await runFlow(ctx, ID.upOurs, tag, [
      { p: 'filename', v: file, vt: 'str' }, { p: 'destination', v: destination, vt: 'str' }
    ], size);
    return { ...r, fuid: uploadChecked(r.result, size) };
  },
  core: async (ctx, { file, size, destination, tag }) => {
    const r = await runFlow(ctx, ID.upCore, tag, [
      { p: 'filename', v: file, vt: 'str' }, { p: 'destination', v: destination, vt: 'str' },
      { p: 'cookie', v: ctx.cookie, vt: 'str' }
    ], size);
    return { ...r, fuid: uploadChecked(r.result, size, r.statusCode) };
  }
};

const DOWNLOADS = {
  curl: async (ctx, { fuid, out, size }) => {
    const r = await runCurl(['-sS', '--noproxy', '*', '-H', `Cookie: ${ctx.cookie}`, '-o', out,
      `${ctx.emulator.url}/review/api/asset/download?fuid=${fuid}&rrn=-1`], size);
    if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
    return { ms: r.ms, idle: NaN, peak: r.peak, growth: NaN, cpu: r.cpu };
  },
  bare: (ctx, { fuid, out, size }) => runClientChild(ctx, { op: 'download', fuid, file: out, warm: warmDownload(ctx, out) }, size, BARE_CHILD),
  client: (ctx, { fuid, out, size }) => runClientChild(ctx, { op: 'download', fuid, file: out, warm: warmDownload(ctx, out) }, size),
  node: (ctx, { fuid, out, size, tag }) => runFlow(ctx, ID.downOurs, tag, [
    { p: 'fuid', v: String(fuid), vt: 'num' }, { p: 'filename', v: out, vt: 'str' }
  ], size),
  core: async (ctx, { fuid, out, size, tag }) => {
    const r = await runFlow(ctx, ID.downCore, tag, [
      { p: 'url', v: `${ctx.emulator.url}/review/api/asset/download?fuid=${fuid}&rrn=-1`, vt: 'str' },
      { p: 'headers', v: JSON.stringify({ cookie: ctx.cookie }), vt: 'json' },
      { p: 'filename', v: out, vt: 'str' }
    ], size);
    if (r.statusCode !== 200) throw new Error(`HTTP ${r.statusCode}`);
    return r;
  }
};

const rotate = (list, n) => list.map((_, i) => list[(i + n) % list.length]);

/** Rejects when `promise` takes longer than `ms`, so that no variant can stall the whole bench. */
function deadline(promise, ms, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * Runs every variant `opts.runs` times for one file, interleaved (the order rotates per run).
 * @param ctx { emulator, cookie, nodeRed(), variants: {upload: [...], download: [...]}, opts, log, tmp }
 * @param src { file, size, sha256 }
 * @returns { upload: {variant: [runs]}, download: {variant: [runs]} }
 */
async function runTransfers(ctx, src) {
  const { opts, log } = ctx;
  const sizeTag = `${Math.round(src.size / 1024)}k`;
  const out = { upload: {}, download: {} };
  let downloadFuid;
  if (ctx.variants.upload.some((v) => v === 'bare' || v === 'client') || ctx.variants.download.some((v) => v === 'bare' || v === 'client')) {
    await prepareWarmUp(ctx);
  }

  for (let run = 0; run < opts.runs; run++) {
    for (const v of rotate(ctx.variants.upload, run)) {
      const tag = `up-${v}-${sizeTag}-${run}`;
      const destination = `/bench/${sizeTag}/${v}/${run + 1}`;
      const rec = { run: run + 1 };
      try {
        ctx.progress(`upload ${v} run ${run + 1}`);
        const emulatorCpu = readCpu(ctx.emulator.pid);
        const nodeRedCpu = nodeRedCpuNow(ctx);
        Object.assign(rec, await deadline(UPLOADS[v](ctx, { file: src.file, size: src.size, destination, tag }),
          timeLimitMs(src.size) + 30000, `upload ${v}`));
        rec.emulatorCpu = readCpu(ctx.emulator.pid) - emulatorCpu;
        rec.nodeRedCpu = nodeRedCpuSince(ctx, nodeRedCpu);
        rec.mibPerSec = src.size / MiB / (rec.ms / 1000);
        rec.bytes = src.size;
        if (downloadFuid === undefined) downloadFuid = rec.fuid; // same bytes whoever uploaded them
      } catch (e) {
        rec.error = e.message;
      }
      (out.upload[v] = out.upload[v] || []).push(rec);
      log(`  upload ${v} run ${run + 1}: ${describe(rec)}`);
    }
  }
  if (downloadFuid === undefined) {
    for (const v of ctx.variants.download) out.download[v] = [{ run: 1, error: 'no upload succeeded, nothing to download' }];
    return out;
  }

  for (let run = 0; run < opts.runs; run++) {
    for (const v of rotate(ctx.variants.download, run)) {
      const tag = `down-${v}-${sizeTag}-${run}`;
      const target = path.join(ctx.tmp, 'downloads', `${v}-${run + 1}`, 'asset.bin');
      fs.mkdirSync(path.dirname(target), { recursive: true });
      const rec = { run: run + 1 };
      try {
        ctx.progress(`download ${v} run ${run + 1}`);
        const emulatorCpu = readCpu(ctx.emulator.pid);
        const nodeRedCpu = nodeRedCpuNow(ctx);
        Object.assign(rec, await deadline(DOWNLOADS[v](ctx, { fuid: downloadFuid, out: target, size: src.size, tag }),
          timeLimitMs(src.size) + 30000, `download ${v}`));
        rec.emulatorCpu = readCpu(ctx.emulator.pid) - emulatorCpu;
        rec.nodeRedCpu = nodeRedCpuSince(ctx, nodeRedCpu);
        const st = fs.statSync(target);
        if (st.size !== src.size) throw new Error(`file on disk has ${st.size} bytes, expected ${src.size}`);
        if (run === 0 && await sha256File(target) !== src.sha256) throw new Error('downloaded bytes differ from the uploaded file');
        rec.mibPerSec = src.size / MiB / (rec.ms / 1000);
        rec.bytes = src.size;
      } catch (e) {
        rec.error = e.message;
      }
      fs.rmSync(path.dirname(target), { recursive: true, force: true });
      (out.download[v] = out.download[v] || []).push(rec);
      log(`  download ${v} run ${run + 1}: ${describe(rec)}`);
    }
  }
  return out;
}

/** CPU used so far by each Node-RED process of the bench (to see one disturb the other). */
function nodeRedCpuNow(ctx) {
  const out = {};
  for (const [kind, nr] of Object.entries(ctx.processes || {})) out[kind] = readCpu(nr.pid);
  return out;
}
function nodeRedCpuSince(ctx, before) {
  const now = nodeRedCpuNow(ctx);
  const out = {};
  for (const kind of Object.keys(now)) out[kind] = +(now[kind] - (before[kind] ?? now[kind])).toFixed(2);
  return out;
}

function describe(rec) {
  if (rec.error) return `ERROR ${rec.error}`;
  const memory = Number.isFinite(rec.growth) ? `peak RSS +${(rec.growth / MiB).toFixed(1)} MiB` : `peak RSS ${(rec.peak / MiB).toFixed(1)} MiB`;
  const split = Number.isFinite(rec.cpuUser) ? ` [user ${rec.cpuUser.toFixed(2)} sys ${rec.cpuSys.toFixed(2)}]` : '';
  const others = Object.entries(rec.nodeRedCpu || {}).map(([k, c]) => `NR ${k} ${c.toFixed(2)} s`).join(', ');
  return `${rec.mibPerSec.toFixed(0)} MiB/s, ${memory}, CPU ${rec.cpu.toFixed(2)} s${split} (emulator ${rec.emulatorCpu.toFixed(2)} s; ${others})`;
}

/** Median figures of a list of runs (failed runs are left out, and counted). */
function summarize(runs) {
  const ok = (runs || []).filter((r) => !r.error);
  return {
    runs: (runs || []).length,
    failed: (runs || []).length - ok.length,
    errors: [...new Set((runs || []).filter((r) => r.error).map((r) => r.error))],
    mibPerSec: median(ok.map((r) => r.mibPerSec)),
    growth: median(ok.map((r) => r.growth)),
    peak: median(ok.map((r) => r.peak)),
    idle: median(ok.map((r) => r.idle)),
    // CPU seconds per GiB moved, on the sending/receiving side and in the emulator
    cpuPerGiB: median(ok.map((r) => r.cpu / (r.bytes || NaN) * 1024 * MiB)),
    emulatorCpuPerGiB: median(ok.map((r) => r.emulatorCpu / (r.bytes || NaN) * 1024 * MiB))
  };
}

module.exports = { runTransfers, summarize };
