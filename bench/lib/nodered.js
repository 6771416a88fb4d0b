'use strict';
// A real Node-RED process (the project's devDependency) with this package installed in a temporary
// user dir, as a user would have it. Flows report back on stdout, so no extra socket is opened
// while a case is being timed.
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { freePort, onLines, request, sleep, waitFor } = require('./util');

const REPO = path.resolve(__dirname, '..', '..');
const RED_JS = require.resolve('node-red/red.js', { paths: [REPO] });
const REPORT_PREFIX = '@@BENCH ';

function settingsSource(port) {
  // benchReport: how the last function node of a flow says "done" (one line on stdout).
  return `'use strict';
module.exports = {
  uiHost: '127.0.0.1',
  uiPort: ${port},
  flowFile: 'flows.json',
  flowFilePretty: false,
  credentialSecret: false,
  logging: { console: { level: 'warn', metrics: false, audit: false } },
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false, updateNotification: false },
  externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
  editorTheme: { tours: false, projects: { enabled: false } },
  functionGlobalContext: {
    benchReport: (o) => process.stdout.write(${JSON.stringify(REPORT_PREFIX)} + JSON.stringify(o) + '\\n')
  }
};
`;
}

/**
 * Starts Node-RED with this package linked into `<userDir>/node_modules`.
 * Resolves with a handle: { url, pid, deploy(flows), inject(id, props), waitReport(tag, ms),
 * get/post(path), nodeTypes(), stop() }.
 */
async function startNodeRed({ userDir, log = () => {} }) {
  const port = await freePort();
  fs.mkdirSync(path.join(userDir, 'node_modules', '@dam-assets'), { recursive: true });
  const link = path.join(userDir, 'node_modules', '@dam-assets', 'node-red');
  if (!fs.existsSync(link)) fs.symlinkSync(REPO, link, 'dir');
  fs.writeFileSync(path.join(userDir, 'package.json'),
    JSON.stringify({ name: 'bench-user-dir', private: true, dependencies: { '@dam-assets/node-red': '*' } }));
  fs.writeFileSync(path.join(userDir, 'settings.js'), settingsSource(port));

  // BENCH_NODE_RED_ARGS adds node options, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile.
  const extra = (process.env.BENCH_NODE_RED_ARGS || '').split(' ').filter(Boolean);
  const child = spawn(process.execPath,
    [...extra, RED_JS, '--settings', path.join(userDir, 'settings.js'), '--userDir', userDir],
    { cwd: userDir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_RED_ENABLE_PROJECTS: '' } });
  const url = `http://127.0.0.1:${port}`;
  const output = [];
  const waiters = new Map(); // tag -> resolve
  let exitInfo = null;
  const keep = (line) => { output.push(line); if (output.length > 200) output.shift(); log(line); };
  onLines(child.stdout, (line) => {
    const at = line.indexOf(REPORT_PREFIX);
    if (at >= 0) {
      let report;
      try { report = JSON.parse(line.slice(at + REPORT_PREFIX.length)); } catch { keep(line); return; }
      const waiter = waiters.get(report.tag);
      if (waiter) { waiters.delete(report.tag); waiter.resolve(report); }
      return;
    }
    keep(line);
  });
  onLines(child.stderr, keep);
  child.on('exit', (code, signal) => {
    exitInfo = { code, signal };
    for (const w of waiters.values()) w.reject(new Error(`Node-RED exited (code ${code}, signal ${signal}) ${lastLines()}`));
    waiters.clear();
  });
  const lastLines = () => `\n    last output: ${output.slice(-8).join('\n    ')}`;

  const handle = {
    url, port, pid: child.pid, output,
    alive: () => !exitInfo,
    exitInfo: () => exitInfo,
    lastLines,
    get: (p, opts) => request('GET', url + p, opts),
    post: (p, body, opts = {}) => request('POST', url + p, { ...opts, body }),

    /** Full deploy through the admin API; resolves when the runtime accepted it. */
    async deploy(flows) {
      const r = await request('POST', url + '/flows', {
        body: flows, headers: { 'Node-RED-Deployment-Type': 'full', 'Node-RED-API-Version': 'v1' }, timeout: 60000
      });
      if (r.status !== 204 && r.status !== 200) throw new Error(`deploy failed: HTTP ${r.status} ${r.body}`);
      await sleep(300); // nodes start asynchronously after the answer
    },

    /** Node types the runtime has registered (module name -> types). */
    async nodeTypes() {
      const r = await request('GET', url + '/nodes', { headers: { Accept: 'application/json' } });
      if (r.status !== 200) throw new Error(`GET /nodes: HTTP ${r.status}`);
      const sets = r.json();
      const types = new Set();
      const errors = [];
      for (const s of sets) {
        if (s.enabled !== false && s.loaded !== false) for (const t of s.types || []) types.add(t);
        if (s.err) errors.push(`${s.module}/${s.name}: ${s.err}`);
      }
      return { types, errors };
    },

    /** Presses an inject node with the given properties (each {p, v, vt}); the time starts inside. */
    async inject(id, props) {
      const r = await request('POST', `${url}/inject/${id}`, { body: { __user_inject_props__: props } });
      if (r.status !== 200) throw new Error(`inject ${id}: HTTP ${r.status}`);
    },

    /** Resolves with the report a flow prints for `tag`; rejects on timeout or a Node-RED exit. */
    waitReport(tag, timeoutMs) {
      if (exitInfo) return Promise.reject(new Error(`Node-RED is not running (code ${exitInfo.code}, signal ${exitInfo.signal})`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(tag);
          reject(new Error(`no result from the flow within ${Math.round(timeoutMs / 1000)} s ${lastLines()}`));
        }, timeoutMs);
        waiters.set(tag, {
          resolve: (v) => { clearTimeout(timer); resolve(v); },
          reject: (e) => { clearTimeout(timer); reject(e); }
        });
      });
    },

    async stop() {
      if (exitInfo) return;
      child.kill('SIGTERM');
      for (let i = 0; i < 100 && !exitInfo; i++) await sleep(100);
      if (!exitInfo) child.kill('SIGKILL');
      for (let i = 0; i < 20 && !exitInfo; i++) await sleep(100);
    }
  };

  await waitFor(async () => {
    if (exitInfo) throw new Error(`Node-RED exited during start (code ${exitInfo.code}) ${lastLines()}`);
    const r = await request('GET', url + '/settings', { timeout: 2000 }).catch(() => null);
    return r && r.status === 200;
  }, { timeout: 60000, interval: 200, what: 'Node-RED to answer on ' + url });
  return handle;
}

module.exports = { startNodeRed };
