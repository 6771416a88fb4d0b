'use strict';
// Shared pieces of reliability suites 4, 5, 6 and 8 (flapping*, fuzz*, load*, webhook*): a real
// Node-RED child started through the project's launcher (dist/demo/node-red.js) that can be
// stopped and started again on the same port and user dir, its memory read from /proc, and small
// core-node flows that measure from inside Node-RED (event loop delay, message counts).
const fs = require('fs');
const path = require('path');
const { startNodeRed } = require('../../../dist/demo/node-red');
const { freePort, sleep } = require('../../e2e/support');
const { LONG, pick, figure, tempDir, rmDir, waitFor } = require('./support');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CREDENTIAL_SECRET = 'reliability-rig-credential-key';

/** Resident set size of a process in bytes, from /proc (Linux), or null when it is gone. */
function rssOf(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * A Node-RED child that survives restarts: same user dir (flows and encrypted credentials stay),
 * same port (callback URLs stay valid). `lines` keeps everything it printed over all its lives.
 * Log level info at least: the launcher's deploy() waits for the "Started flows" line.
 */
async function launchNodeRed({ logLevel = 'info', env, extraSettings } = {}) {
  const userDir = tempDir('dam-rig-nr-');
  const port = await freePort();
  const lines = [];
  const exits = [];
  let current;

  const rig = {
    userDir, port, lines, exits,
    url: `http://127.0.0.1:${port}`,
    get pid() { return current && current.child.pid; },
    get running() { return !!current && current.child.exitCode === null && current.child.signalCode === null; },
    async start() {
      if (rig.running) throw new Error('Node-RED is already running');
      // With saved flows, "up" is not enough: a test that clicks an inject right away needs them started.
      const hasFlows = fs.existsSync(path.join(userDir, 'flows.json'));
      const startedBefore = lines.filter((line) => /Started flows/.test(line)).length;
      current = await startNodeRed({
        userDir, port, credentialSecret: CREDENTIAL_SECRET, nodesDir: [ROOT], logLevel, env, extraSettings,
        onLine: (line) => lines.push(line)
      });
      current.exited.then((code) => exits.push(code));
      if (hasFlows) await waitFor('Node-RED started its saved flows', () => lines.filter((line) => /Started flows/.test(line)).length > startedBefore, 60000, 50);
      return rig;
    },
    /** Node-RED's own clean shutdown (SIGINT), SIGKILL after `graceMs`. */
    async stop(graceMs = 15000) {
      if (!current) return undefined;
      return current.stop(graceMs);
    },
    /** kill -9: no shutdown code runs. */
    async kill() {
      if (!rig.running) return undefined;
      current.child.kill('SIGKILL');
      return current.exited;
    },
    deploy(flows) { return current.deploy(flows); },
    /**
     * Stops or starts the flows through the admin API (POST /flows/state, Node-RED 4.1+; needs
     * `extraSettings: { runtimeState: { enabled: true } }`): nodes close and start, the process stays.
     */
    async flowState(state) {
      const res = await fetch(`${rig.url}/flows/state`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ state })
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`POST /flows/state ${state}: HTTP ${res.status} ${text.slice(0, 200)}`);
      return JSON.parse(text);
    },
    rss() { return rssOf(rig.pid); },
    /** True when Node-RED answers its admin API within `ms`. */
    async answers(ms = 5000) {
      try {
        const res = await fetch(`${rig.url}/settings`, { signal: AbortSignal.timeout(ms) });
        await res.arrayBuffer();
        return res.ok;
      } catch {
        return false;
      }
    },
    /** Lines that say a node or the runtime hit an error it did not expect. */
    crashLines() {
      return lines.filter((l) => /uncaught|unhandled|RangeError|Maximum call stack|FATAL|\[red\].*Error:/i.test(l));
    },
    async close() {
      await rig.stop();
      rmDir(userDir);
    }
  };
  await rig.start();
  return rig;
}

/** Flow ids: fixed 16-hex strings so that runs are reproducible and derived subscription ids valid. */
function ids(prefix) {
  let n = 0;
  return () => `${prefix}${(++n).toString(16).padStart(16 - prefix.length, '0')}`;
}

/**
 * A monitor inside Node-RED: on start, a function node enables perf_hooks.monitorEventLoopDelay
 * (10 ms resolution) and keeps it in global context; `GET /rig/stats` answers its figures (ms)
 * and the process memory (`?gc=1`: after a full garbage collection), `POST /rig/reset` resets the histogram (after a warm-up) and the counters.
 * `counter` is a function node id: wire messages to it to count them (total, distinct keys); its key is `msg.payload.assetId:rrn:action`; `last` is the last payload counted.
 */
function monitorNodes(z, next) {
  const stats = next();
  const statsOut = next();
  const reset = next();
  const resetOut = next();
  const counter = next();
  const libs = [{ var: 'perfHooks', module: 'perf_hooks' }, { var: 'proc', module: 'process' }, { var: 'v8', module: 'v8' }, { var: 'vm', module: 'vm' }];
  const nodes = [
    {
      id: counter, type: 'function', z, name: 'count', outputs: 0, libs: [],
      initialize: 'global.set("rigCount", { total: 0, keys: new Set() });',
      func: [
        'const c = global.get("rigCount");',
        'c.total++;',
        'const p = msg.payload || {};',
        'c.keys.add(`${p.assetId}:${p.rrn}:${p.action}`);',
        'c.last = p;',
        'return null;'
      ].join('\n'),
      wires: []
    },
    { id: stats, type: 'http in', z, name: 'stats', url: '/rig/stats', method: 'get', upload: false, wires: [[`${stats}-f`]] },
    {
      id: `${stats}-f`, type: 'function', z, name: 'stats', outputs: 1, libs,
      initialize: [
        'const h = perfHooks.monitorEventLoopDelay({ resolution: 10 });',
        'h.enable();',
        'global.set("rigLag", h);'
      ].join('\n'),
      finalize: 'const h = global.get("rigLag"); if (h) h.disable();',
      func: [
        'const h = global.get("rigLag");',
        'const ms = (ns) => Math.round(ns / 1e4) / 100;',
        'const c = global.get("rigCount") || { total: 0, keys: new Set() };',
        'if (msg.req.query.gc) {',
        '  // A full collection first, so that heap figures are what is still referenced.',
        '  v8.setFlagsFromString("--expose-gc");',
        '  const gc = vm.runInNewContext("gc");',
        '  gc(); gc();',
        '}',
        'const m = proc.memoryUsage();',
        'msg.payload = {',
        '  lag: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean), samples: h.count },',
        '  count: { total: c.total, distinct: c.keys.size },',
        '  last: c.last,',
        '  memory: { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }',
        '};',
        'return msg;'
      ].join('\n'),
      wires: [[statsOut]]
    },
    { id: statsOut, type: 'http response', z, name: '', statusCode: '', headers: {}, wires: [] },
    { id: reset, type: 'http in', z, name: 'reset', url: '/rig/reset', method: 'post', upload: false, wires: [[`${reset}-f`]] },
    {
      id: `${reset}-f`, type: 'function', z, name: 'reset', outputs: 1, libs: [],
      func: [
        'global.get("rigLag").reset();',
        'const c = global.get("rigCount"); c.total = 0; c.keys.clear();',
        'msg.payload = { ok: true };',
        'return msg;'
      ].join('\n'),
      wires: [[resetOut]]
    },
    { id: resetOut, type: 'http response', z, name: '', statusCode: '', headers: {}, wires: [] }
  ];
  return { nodes, counter };
}

async function getJson(url, init) {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init && init.method || 'GET'} ${url}: HTTP ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** Figures of the in-process monitor (see monitorNodes); `gc` runs a full garbage collection first. */
function monitorStats(rig, { gc = false } = {}) { return getJson(`${rig.url}/rig/stats${gc ? '?gc=1' : ''}`); }
function monitorReset(rig) { return getJson(`${rig.url}/rig/reset`, { method: 'POST' }); }

/**
 * Samples the RSS of `pid` every `everyMs` until `stop()`, which returns { base, peak, growth, end }
 * in bytes (base: just before; end: at stop).
 */
function rssSampler(pid, everyMs = 10) {
  const base = rssOf(pid);
  let peak = base;
  const timer = setInterval(() => { const r = rssOf(pid); if (r > peak) peak = r; }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const end = rssOf(pid);
      if (end > peak) peak = end;
      return { base, peak, end, growth: peak - base };
    }
  };
}

const MiB = 1024 * 1024;
const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

module.exports = {
  ROOT, LONG, pick, figure, tempDir, rmDir, sleep, freePort, rssOf, launchNodeRed, ids, monitorNodes, monitorStats,
  monitorReset, getJson, rssSampler, MiB, mib
};
