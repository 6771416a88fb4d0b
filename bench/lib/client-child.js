'use strict';
// One API-client transfer in a process of its own, so that its memory is measured alone.
// Protocol (IPC): child -> {ready, rss}; parent -> {cmd:'go', op, ...}; child -> {ok, ms, ...};
// parent reads /proc, then -> {cmd:'exit'}. The parent samples memory from /proc: no sampler runs
// in here, so the transfer's CPU is the client's alone (as in bare-child.js).
const path = require('path');
const { performance } = require('perf_hooks');
const { profiled } = require('./profile-job');

const REPO = path.resolve(__dirname, '..', '..');
const { AssetClient } = require(path.join(REPO, 'dist', 'api', 'client'));

const [baseUrl, cookie] = process.argv.slice(2);
const client = new AssetClient({ baseUrl, cookie });

async function run(job) {
  const t0 = performance.now();
  if (job.op === 'upload') {
    const out = await client.upload({ file: { path: job.file }, destination: job.destination, wait: true });
    return { ms: performance.now() - t0, result: { success: out.result.success, length: out.result.length, fuids: out.fuids } };
  }
  if (job.op === 'download') {
    const out = await client.downloadToFile({ fuid: job.fuid, rrn: -1, path: job.file });
    return { ms: performance.now() - t0, bytes: out.bytes };
  }
  throw new Error(`unknown op ${job.op}`);
}

process.on('message', (m) => {
  if (m.cmd === 'exit') { client.close(); process.exit(0); }
  if (m.cmd === 'warm') {
    // The same operation on a small file first, so that the measured one runs warm code, as in
    // Node-RED (a long-lived process) and any program that transfers more than one file.
    run(m).then(() => process.send({ warmed: true }), (e) => process.send({ warmed: false, error: e.message }));
    return;
  }
  if (m.cmd !== 'go') return;
  profiled(`client-${m.op}`, () => run(m)).then(
    (r) => process.send({ ok: true, ...r }),
    (e) => process.send({ ok: false, error: `${e.kind ? e.kind + ': ' : ''}${e.message}` })
  );
});

// Warm up: one small request loads and initialises axios, the agent and the client's code paths,
// as in any program that does more than one call; the transfer is then measured alone.
client.getSubscription('bench-warm-up').catch(() => {}).finally(() => {
  process.send({ ready: true, rss: process.memoryUsage.rss() });
});
