'use strict';
// Interleaved A/B of the event flows: two Node-RED processes side by side, one with another
// checkout's code (built), one with this one; bursts of callbacks alternate between them, the
// order swapped each pair. Reports entries/s and Node-RED CPU per entry, and the ratios per pair.
//   node bench/ab-events.js OTHER_CHECKOUT [pairs=5] [seconds=1] [sizes=1,100,1000]
// Rows: ours (asset-event-in, one msg per entry), batch (one msg per callback): old vs new;
// inbox (at least once -> ack) vs the ours of the same pair, and old vs new when the other checkout has it.
//   node bench/ab-events.js --profile DIR VARIANT N [bursts=10] [seconds=1]
// profiles this checkout's Node-RED (node --cpu-prof) while it takes only bursts of VARIANT with
// N entries per callback (redis and streams: with a redis-server of their own); read with `node bench/cpu-profile-summary.js DIR/*.cpuprofile`.
//   node bench/ab-events.js --fsync [N=1] [pairs=5] [seconds=1]
// the at-least-once row with the journal on disk against tmpfs (/dev/shm), interleaved: the fsync's cost.
// docs/performance.md has results.
const path = require('path'); const fs = require('fs'); const os = require('os');
const NEW = path.resolve(__dirname, '..');
const { burst, calibrate } = require('./lib/events');
const { median } = require('./lib/util');
const { startRedis } = require('../test/reliability/lib/servers');
const { readCpu } = require('./lib/rss');

async function startFor(repo, tmp, name, nodeArgs = '', redisUrl = undefined) {
  process.env.BENCH_NODE_RED_ARGS = `${nodeArgs} ${process.env.EXTRA || ''}`; // EXTRA: node options for every Node-RED
  const { startNodeRed } = require(repo + '/bench/lib/nodered');
  const { buildFlows } = require('./lib/flows'); // this checkout's flows on both sides: the same count functions
  const nr = await startNodeRed({ userDir: path.join(tmp, `nr-${name}`) });
  const { types } = await nr.nodeTypes();
  await nr.deploy(buildFlows({ emulatorUrl: 'http://127.0.0.1:1', cookie: 'x', types, parts: new Set(['events']), redisUrl }));
  return nr;
}

async function profile([dir, variant, n, bursts = '10', seconds = '1']) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-events-'));
  fs.mkdirSync(dir, { recursive: true });
  // The Redis rows (redis, streams) need a redis-server of their own.
  const redis = variant === 'redis' || variant === 'streams' ? await startRedis(path.join(tmp, 'redis'), { durable: false }) : undefined;
  const nr = await startFor(NEW, tmp, 'prof', `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${variant}-${n}.cpuprofile`, redis && redis.url);
  try {
    // A fixed number of callbacks per burst (not a warm-up rate): the profiles of two variants cover the same entries.
    const amount = Math.max(20, Math.round(Number(seconds) * 100000 / Number(n) / 4));
    await burst(nr, variant, Number(n), amount); // warm-up
    let entries = amount * Number(n);
    // The JavaScript thread's CPU (the profile's) beside the process's (V8's helper threads and libuv's pool too).
    const mainCpu = () => readCpu(`${nr.pid}/task/${nr.pid}`);
    for (let i = 0; i < Number(bursts); i++) {
      const main = mainCpu();
      const b = await burst(nr, variant, Number(n), amount);
      entries += b.counted;
      const mainMicros = (mainCpu() - main) / b.counted * 1e6;
      console.log(`${variant} ${n}/callback: ${Math.round(b.entriesPerSec)} entries/s, ${b.cpuMicrosPerEntry.toFixed(1)} µs CPU/entry (main thread ${mainMicros.toFixed(1)}), lost ${b.lost}; ${b.callbacks} callbacks answered in ${b.answerSeconds.toFixed(2)} s, all counted after ${b.seconds.toFixed(2)} s`);
    }
    console.log(`${entries} entries in the profile (warm-up included)`);
  } finally {
    await nr.stop();
    if (redis) await redis.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function ab([other, pairsText = '5', secondsText = '1', sizesText = '1,100,1000']) {
  const OLD = path.resolve(other);
  const pairs = Number(pairsText); const seconds = Number(secondsText);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-events-'));
  const nrs = {};
  const summary = [];
  try {
    nrs.old = await startFor(OLD, tmp, 'old');
    nrs.new = await startFor(NEW, tmp, 'new');
    const oldInbox = fs.existsSync(path.join(OLD, 'dist/nodes/asset-event-ack'));
    const paired = oldInbox ? ['ours', 'batch', 'inbox'] : ['ours', 'batch'];
    for (const n of sizesText.split(',').map(Number)) {
      // Same callbacks per burst for both sides of a row: the new side's warm-up rate decides.
      const amounts = {};
      for (const v of ['ours', 'batch', 'inbox']) {
        if (paired.includes(v)) await calibrate(nrs.old, v, n, 0.5);
        amounts[v] = Math.max(20, Math.round(await calibrate(nrs.new, v, n, 0.5) * seconds));
      }
      const rows = {};
      const run = async (side, v) => {
        const b = await burst(nrs[side], v, n, amounts[v]);
        (rows[`${side} ${v}`] ??= []).push(b);
        console.log(`${n}/callback ${side} ${v}: ${Math.round(b.entriesPerSec)} entries/s, ${b.cpuMicrosPerEntry.toFixed(1)} µs CPU/entry, lost ${b.lost}`);
      };
      for (let i = 0; i < pairs; i++) {
        const sides = i % 2 ? ['new', 'old'] : ['old', 'new'];
        for (const v of paired) for (const side of sides) await run(side, v);
        if (!oldInbox) await run('new', 'inbox');
      }
      const ratio = (a, b, k) => median(rows[a].map((x, i) => x[k] / rows[b][i][k]));
      const med = (a, k) => median(rows[a].map((x) => x[k]));
      const line = {
        n,
        oursNewOverOld: ratio('new ours', 'old ours', 'entriesPerSec'), oursCpuNewOverOld: ratio('new ours', 'old ours', 'cpuMicrosPerEntry'),
        batchNewOverOld: ratio('new batch', 'old batch', 'entriesPerSec'), batchCpuNewOverOld: ratio('new batch', 'old batch', 'cpuMicrosPerEntry'),
        inboxOverOurs: ratio('new inbox', 'new ours', 'entriesPerSec'), inboxCpuOverOurs: ratio('new inbox', 'new ours', 'cpuMicrosPerEntry'),
        ...(oldInbox ? {
          oldInboxOverOurs: ratio('old inbox', 'old ours', 'entriesPerSec'), oldInboxCpuOverOurs: ratio('old inbox', 'old ours', 'cpuMicrosPerEntry'),
          inboxNewOverOld: ratio('new inbox', 'old inbox', 'entriesPerSec'), inboxCpuNewOverOld: ratio('new inbox', 'old inbox', 'cpuMicrosPerEntry')
        } : {}),
        medians: Object.fromEntries(Object.keys(rows).map((k) => [k, { entriesPerSec: Math.round(med(k, 'entriesPerSec')), cpuMicrosPerEntry: +med(k, 'cpuMicrosPerEntry').toFixed(1), p99: med(k, 'p99'), lost: rows[k].reduce((s, b) => s + b.lost, 0) }]))
      };
      summary.push(line);
      console.log(JSON.stringify(line));
    }
    console.log('\nload average', os.loadavg().map((l) => l.toFixed(2)).join(' '));
    for (const l of summary) {
      console.log(`${l.n}/callback: ours new/old ${l.oursNewOverOld.toFixed(2)} entries/s, ${l.oursCpuNewOverOld.toFixed(2)} CPU/entry; batch new/old ${l.batchNewOverOld.toFixed(2)}, ${l.batchCpuNewOverOld.toFixed(2)}; inbox/ours ${l.inboxOverOurs.toFixed(2)} entries/s, ${l.inboxCpuOverOurs.toFixed(2)} CPU/entry` +
        (l.inboxNewOverOld === undefined ? '' : `; old inbox/ours ${l.oldInboxOverOurs.toFixed(2)}, ${l.oldInboxCpuOverOurs.toFixed(2)}; inbox new/old ${l.inboxNewOverOld.toFixed(2)}, ${l.inboxCpuNewOverOld.toFixed(2)}`));
    }
  } finally {
    for (const nr of Object.values(nrs)) await nr.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * What the fsync costs at N entries per callback: the at-least-once row in two Node-REDs of this
 * checkout, one with its user dir (so the journal) on disk, one on tmpfs (/dev/shm: fdatasync
 * returns at once), bursts interleaved. The difference is the fsync's share.
 */
async function fsyncCost([n = '1', pairsText = '5', secondsText = '1']) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-events-'));
  const shm = fs.mkdtempSync(path.join('/dev/shm', 'ab-events-'));
  const nrs = {};
  const rows = { disk: [], tmpfs: [] };
  try {
    nrs.disk = await startFor(NEW, tmp, 'disk');
    nrs.tmpfs = await startFor(NEW, shm, 'tmpfs');
    const amount = Math.max(20, Math.round(await calibrate(nrs.disk, 'inbox', Number(n), 0.5) * Number(secondsText)));
    await calibrate(nrs.tmpfs, 'inbox', Number(n), 0.5);
    for (let i = 0; i < Number(pairsText); i++) {
      for (const side of i % 2 ? ['tmpfs', 'disk'] : ['disk', 'tmpfs']) {
        const b = await burst(nrs[side], 'inbox', Number(n), amount);
        rows[side].push(b);
        console.log(`${n}/callback inbox on ${side}: ${Math.round(b.entriesPerSec)} entries/s, p50 ${b.p50} ms, p99 ${b.p99} ms, ${b.cpuMicrosPerEntry.toFixed(1)} µs CPU/entry, lost ${b.lost}`);
      }
    }
    const med = (side, k) => median(rows[side].map((b) => b[k]));
    for (const side of ['disk', 'tmpfs']) console.log(`${side}: median ${Math.round(med(side, 'entriesPerSec'))} entries/s, p50 ${med(side, 'p50')} ms, p99 ${med(side, 'p99')} ms, ${med(side, 'cpuMicrosPerEntry').toFixed(1)} µs CPU/entry`);
    console.log(`disk / tmpfs entries/s per pair (median): ${median(rows.disk.map((b, i) => b.entriesPerSec / rows.tmpfs[i].entriesPerSec)).toFixed(2)}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    for (const nr of Object.values(nrs)) await nr.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(shm, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (!args.length) { console.error('usage: node bench/ab-events.js OTHER_CHECKOUT [pairs] [seconds] [sizes] | --profile DIR VARIANT N [bursts] [seconds] | --fsync [N] [pairs] [seconds]'); process.exit(2); }
(args[0] === '--profile' ? profile(args.slice(1)) : args[0] === '--fsync' ? fsyncCost(args.slice(1)) : ab(args)).catch((e) => { console.error(e); process.exit(1); });
