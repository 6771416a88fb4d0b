#!/usr/bin/env node
'use strict';
// `npm run bench`: uploads, downloads, event bursts, emulator fan-out and the hot folder, ours against curl and
// Node-RED's core nodes, in one invocation. Progress goes to stderr; the Markdown table to stdout
// and, with the raw numbers (JSON) and the chart (SVG), to bench/results/.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { MiB, freePort, parseSize, formatSize, toolVersion, sleep } = require('./lib/util');
const { readMemory } = require('./lib/rss');
const { makeFile, checkDiskSpace } = require('./lib/files');
const { startEmulator, EMULATOR_CLI } = require('./lib/emulator');
const { startNodeRed } = require('./lib/nodered');
const { buildFlows } = require('./lib/flows');
const { runTransfers } = require('./lib/transfer');
const { runEvents } = require('./lib/events');
const { redisCostMeter } = require('./lib/redis-cost');
const { runFanout } = require('./lib/fanout');
const { runHotFolder } = require('./lib/hotfolder');
const { markdown, chartSvg } = require('./lib/report');

const REPO = path.resolve(__dirname, '..');
const COOKIE_VALUE = 'bench-session';
const COOKIE = `JSESSIONID=${COOKIE_VALUE}`;
const CASES = ['transfer', 'events', 'fanout', 'hotfolder'];
const VARIANTS = ['curl', 'bare', 'client', 'node', 'core', 'redis', 'inbox', 'streams'];

const USAGE = `Usage: npm run bench -- [options]
  --quick            small sizes (1M,4M), short bursts, small hot-folder sets, for CI
  --sizes LIST       file sizes, e.g. 16M,256M,1G (default 16M,256M,1G)
  --runs N           runs per case, median reported (default 3, at least 3 for a real report)
  --only LIST        some of: ${CASES.join(',')} (default all)
  --variants LIST    variants, some of: curl,bare,client,node,core (transfers), redis (events: asset-event-in
                     with its filter in a redis-server started by the bench), inbox (events: asset-event-in
                     at least once -> asset-event-ack), streams (the same with its inbox on a Redis Stream)
                     (default all; for investigations)
  --strict           exit 1 when a target is missed (default: only when a case breaks)
  --verbose          show Node-RED and emulator output
  --report FILE      only re-render the Markdown and SVG of a saved results JSON (bench/results/*.json)
  --help`;

function parseArgs(argv) {
  const o = { quick: false, sizes: null, runs: 3, only: CASES, variants: VARIANTS, strict: false, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--quick') o.quick = true;
    else if (a === '--sizes') o.sizes = value().split(',').filter(Boolean).map(parseSize);
    else if (a === '--runs') o.runs = Number(value());
    else if (a === '--only') o.only = value().split(',').filter(Boolean);
    else if (a === '--variants') o.variants = value().split(',').filter(Boolean);
    else if (a === '--strict') o.strict = true;
    else if (a === '--verbose') o.verbose = true;
    else if (a === '--report') o.report = value();
    else if (a === '--help' || a === '-h') { console.log(USAGE); process.exit(0); }
    else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  if (!Number.isInteger(o.runs) || o.runs < 1) throw new Error('--runs: must be a whole number, 1 or more');
  for (const v of o.variants) if (!VARIANTS.includes(v)) throw new Error(`--variants: "${v}" is not one of ${VARIANTS.join(', ')}`);
  for (const c of o.only) if (!CASES.includes(c)) throw new Error(`--only: "${c}" is not one of ${CASES.join(', ')}`);
  if (!o.sizes) o.sizes = o.quick ? [MiB, 4 * MiB] : [16 * MiB, 256 * MiB, 1024 * MiB];
  o.sizes.sort((a, b) => a - b);
  return o;
}

const log = (line) => process.stderr.write(line + '\n');

/** The idle RSS of a freshly started process: the lowest of a few samples once it has settled. */
async function settledRss(pid) {
  await sleep(1000);
  let low = Infinity;
  for (let i = 0; i < 5; i++) {
    const m = readMemory(pid);
    if (m) low = Math.min(low, m.rss);
    await sleep(100);
  }
  return low;
}

function environment() {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO, encoding: 'utf8' }).trim();
    if (dirty) commit += ' (with uncommitted changes)';
  } catch { /* not a git checkout */ }
  return {
    node: process.version,
    nodeRed: require(require.resolve('node-red/package.json', { paths: [REPO] })).version,
    curl: (toolVersion('curl') || '').split(' (')[0] || undefined,
    loadAverage: os.loadavg().map((l) => +l.toFixed(2)),
    cpus: os.cpus().length,
    cpuModel: (os.cpus()[0] || {}).model || 'unknown CPU',
    totalMem: os.totalmem(),
    platform: `${os.type()} ${os.release()}`,
    commit
  };
}

/** What of ours is built and usable; each missing part is a note and its cases are skipped. */
function probeParts(notes) {
  const parts = { emulator: false, client: false };
  if (!fs.existsSync(EMULATOR_CLI)) notes.push('Emulator not built (dist/emulator/cli.js missing): every case needs it; run `npm run build`.');
  else parts.emulator = true;
  try {
    const { AssetClient } = require(path.join(REPO, 'dist', 'api', 'client'));
    new AssetClient({ baseUrl: 'http://127.0.0.1:1', cookie: 'probe' }).close();
    parts.client = true;
  } catch (e) {
    notes.push(`API client not usable (${e.message}): its cases are skipped.`);
  }
  return parts;
}

/** Writes <base>.md and <base>.svg from the results and prints the Markdown. */
function writeReport(results, base) {
  const md = markdown(results);
  fs.writeFileSync(base + '.md', md + `\n![Peak RSS growth vs file size](${path.basename(base)}.svg)\n`);
  fs.writeFileSync(base + '.svg', chartSvg(results));
  process.stdout.write(md + '\n');
  return md;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.report) {
    const results = JSON.parse(fs.readFileSync(opts.report, 'utf8'));
    writeReport(results, opts.report.replace(/\.json$/, ''));
    return;
  }
  const startedAt = new Date();
  const env = environment();
  const notes = [];
  const errors = [];
  if (opts.runs < 3) notes.push(`Only ${opts.runs} run(s) per case (--runs): the issue asks for at least 3.`);
  if (process.platform !== 'linux') throw new Error('the bench reads memory from /proc and needs Linux');
  if (!env.curl) {
    notes.push('curl not found: the curl baselines and the "× curl" ratios are missing. Install it (Debian: apt-get install -y curl).');
    log('WARNING: curl not found on PATH; install it (apt-get install -y curl) for the curl baselines.');
  }
  const parts = probeParts(notes);
  log(`bench: sizes ${opts.sizes.map(formatSize).join(', ')}; ${opts.runs} runs; cases ${opts.only.join(', ')}${opts.quick ? ' (quick)' : ''}`);

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-bench-'));
  const results = { startedAt: startedAt.toISOString(), quick: opts.quick, runs: opts.runs, env, notes, errors, sizes: [], events: null, fanout: null, hotfolder: null };
  let emulator;
  let redis;
  let stopNodeRed = async () => {};
  const processLog = opts.verbose ? (prefix) => (line) => log(`    [${prefix}] ${line}`) : () => () => {};
  try {
    const needTransfer = opts.only.includes('transfer') && parts.emulator;
    const uploadsPerSize = 4 * opts.runs;
    if (needTransfer) {
      // the largest source file, the emulator's copies of every upload of it, and one download
      const needed = Math.max(...opts.sizes) * (uploadsPerSize + 2) + 512 * MiB;
      checkDiskSpace(tmp, needed);
    }

    // One emulator port for the whole run, so the deployed flows keep pointing at it.
    const emulatorPort = await freePort();
    const newEmulator = async (name) => {
      if (emulator) { await emulator.stop(); fs.rmSync(emulator.dataDir, { recursive: true, force: true }); }
      emulator = await startEmulator({ dataDir: path.join(tmp, `emulator-${name}`), cookie: COOKIE_VALUE, port: emulatorPort, log: processLog('emulator') });
      return emulator;
    };

    // Two Node-RED processes: 'ours' (asset-* transfer flows and both event flows, which the
    // issue wants side by side in one process) and 'core' (the core-node transfer flows).
    let types = new Set();
    const processes = {};
    const PARTS = { ours: ['ours', 'events'], core: ['core'] };
    const nodeRed = async (kind = 'ours') => {
      const running = processes[kind];
      if (running && running.alive()) return running;
      if (running) notes.push(`Node-RED (${kind} flows) exited during the run (code ${running.exitInfo().code}, signal ${running.exitInfo().signal}) and was restarted.`);
      log(`starting Node-RED for the ${kind} flows...`);
      const nr = await startNodeRed({ userDir: path.join(tmp, `node-red-${kind}-${Date.now()}`), log: processLog(`node-red ${kind}`) });
      processes[kind] = nr;
      const reg = await nr.nodeTypes();
      types = reg.types;
      for (const t of ['asset-server', 'asset-upload', 'asset-download', 'asset-event-in']) {
        if (!types.has(t)) {
          const msg = `Node type ${t} is not registered in Node-RED${reg.errors.length ? ` (${reg.errors.join('; ')})` : ''}: its cases are skipped.`;
          if (!notes.includes(msg)) notes.push(msg);
        }
      }
      await nr.deploy(buildFlows({ emulatorUrl: `http://127.0.0.1:${emulatorPort}`, cookie: COOKIE, types, parts: new Set(PARTS[kind]), redisUrl: redis && redis.url }));
      nr.idleRss = await settledRss(nr.pid);
      return nr;
    };
    stopNodeRed = async () => { for (const nr of Object.values(processes)) await nr.stop(); };
    // The Redis of the 'redis' event variant (Debian's redis-server, in the temp folder, on a free port).
    if (opts.only.includes('events') && (opts.variants.includes('redis') || opts.variants.includes('streams'))) {
      const { installed, startRedis } = require('../test/reliability/lib/servers');
      if (installed('redis-server')) redis = await startRedis(path.join(tmp, 'redis'), { durable: false });
      else notes.push('redis-server is not installed: the event flow with the filter in Redis is skipped.');
    }
    const hasNode = (t) => types.has(t) && types.has('asset-server');

    if (opts.only.includes('transfer') || opts.only.includes('events')) {
      if (parts.emulator || opts.only.includes('events')) await nodeRed('ours');
      if (needTransfer) await nodeRed('core');
    }

    if (needTransfer) {
      const variants = (dir, ourType) => opts.variants.filter((v) => v !== 'redis' && v !== 'inbox' && v !== 'streams' &&
        (v !== 'curl' || env.curl) && (v !== 'client' || parts.client) && (v !== 'node' || hasNode(ourType)));
      for (const size of opts.sizes) {
        log(`\n== ${formatSize(size)}: upload and download`);
        const file = path.join(tmp, `source-${size}.bin`);
        const sha256 = await makeFile(file, size);
        await newEmulator(String(size));
        const ctx = {
          emulator, cookie: COOKIE, nodeRed, processes, opts, log, tmp,
          progress: opts.verbose ? (what) => log(`  ${new Date().toISOString().slice(11, 19)} ${what}...`) : () => {},
          variants: { upload: variants('upload', 'asset-upload'), download: variants('download', 'asset-download') }
        };
        try {
          const transfers = await runTransfers(ctx, { file, size, sha256 });
          results.sizes.push({ size, transfers });
        } catch (e) {
          errors.push(`transfer ${formatSize(size)}: ${e.message}`);
        }
        fs.rmSync(file, { force: true });
      }
      if (emulator) { await emulator.stop(); fs.rmSync(emulator.dataDir, { recursive: true, force: true }); emulator = undefined; }
    }

    if (opts.only.includes('events')) {
      log('\n== event bursts');
      const redisMeter = redis && redisCostMeter(redis);
      try {
        results.events = await runEvents({ nr: await nodeRed('ours'), opts, log, redisMeter, hasOurs: types.has('asset-event-in'),
          hasInbox: opts.variants.includes('inbox') && types.has('asset-event-ack'), hasRedis: !!redis && opts.variants.includes('redis') && types.has('asset-redis'),
          hasStreams: !!redis && opts.variants.includes('streams') && types.has('asset-redis') && types.has('asset-event-ack') });
      } catch (e) {
        errors.push(`event bursts: ${e.message}`);
      } finally {
        if (redisMeter) redisMeter.close();
      }
    }
    await stopNodeRed();

    if (opts.only.includes('fanout') && parts.emulator) {
      log('\n== emulator fan-out');
      try {
        await newEmulator('fanout');
        results.fanout = await runFanout({ emulator, cookie: COOKIE, opts, log });
      } catch (e) {
        errors.push(`emulator fan-out: ${e.message}`);
      }
    }

    if (opts.only.includes('hotfolder') && parts.emulator) {
      if (!env.curl) notes.push('curl not found: the hot-folder case needs it as its baseline and is skipped.');
      else {
        try {
          results.hotfolder = await runHotFolder({ opts, log, tmp, cookieValue: COOKIE_VALUE });
        } catch (e) {
          errors.push(`hot folder: ${e.message}`);
        }
      }
    }
  } catch (e) {
    errors.push(e.message);
  } finally {
    await stopNodeRed();
    if (redis) await redis.stop();
    if (emulator) await emulator.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }

  results.env.loadAverageAtEnd = os.loadavg().map((l) => +l.toFixed(2));
  results.finishedAt = new Date().toISOString();
  results.seconds = Math.round((Date.now() - startedAt) / 1000);
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const outDir = path.join(__dirname, 'results');
  fs.mkdirSync(outDir, { recursive: true });
  const base = path.join(outDir, stamp + (opts.quick ? '-quick' : ''));
  writeReport(results, base);
  fs.writeFileSync(base + '.json', JSON.stringify(results, null, 2));
  log(`\nwritten: ${path.relative(process.cwd(), base)}.{md,json,svg}`);

  // A failing core-node run is a finding about the baseline; any other failed run means our code
  // or the harness is broken.
  const broken = errors.length > 0 || results.sizes.some((s) => Object.values(s.transfers).some((byVariant) =>
    Object.entries(byVariant).some(([variant, runs]) => variant !== 'core' && runs.some((r) => r.error))));
  const missed = results.targets.some((t) => !t.ok);
  if (broken) log('bench: some cases broke (see above)');
  process.exitCode = broken || (opts.strict && missed) ? 1 : 0;
}

main().catch((e) => {
  log(`bench: ${e.message}`);
  process.exitCode = 1;
});
