'use strict';
/**
 * A real Node-RED (editor + runtime) with this package loaded, for the browser test.
 *
 * It runs in a child process, not in the mocha process: Node-RED is a singleton,
 * and the test-helper suites in the same mocha run must not inherit our registry.
 * The child embeds Node-RED (`require('node-red')`, RED.init on an http server bound
 * to 127.0.0.1:0) with `nodesDir: [projectRoot]`: Node-RED's registry loads a
 * nodesDir holding a package.json with a `node-red` section as that package, the
 * same way it loads an installed module (icons, locales and examples included).
 *
 * Parent side: `const nr = await startNodeRed()` -> { url, version, userDir, deploy(), stop() }.
 * `nr.deploy(flows)` resolves once the deployed flows have started (Node-RED answers a deploy
 * before its flows start: acting on a node at once can race on a busy machine).
 * `startNodeRed({ settings })` adds to (or replaces) the settings below, e.g. adminAuth; `env`: more
 * environment variables for Node-RED;
 * `onOutput(chunk)` gets everything the child prints (output() keeps only the last 20000 characters).
 */
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const projectRoot = path.resolve(__dirname, '..', '..', '..');

/** Start Node-RED in a child process; resolves once the editor answers. */
function startNodeRed({ startTimeoutMs = 45000, settings = {}, onOutput, env = {} } = {}) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-browser-nr-'));
  const child = spawn(process.execPath, [__filename, userDir, JSON.stringify(settings)], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const remember = chunk => { log = (log + chunk).slice(-20000); if (onOutput) onOutput(String(chunk)); };
  child.stderr.on('data', remember);

  // Revisions of the flows the child has started, in order (its FLOWS_STARTED lines).
  const startedRevs = [];
  let pendingLine = '';
  child.stdout.on('data', chunk => {
    const lines = (pendingLine + chunk).split('\n');
    pendingLine = lines.pop();
    for (const line of lines) {
      const m = /^FLOWS_STARTED (.*)$/.exec(line);
      if (m) startedRevs.push(JSON.parse(m[1]));
    }
  });

  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => fail(new Error(`Node-RED did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
    function fail(err) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      fs.rmSync(userDir, { recursive: true, force: true });
      err.message += `\n--- Node-RED output ---\n${log}`;
      reject(err);
    }
    child.on('exit', code => fail(new Error(`Node-RED exited early with code ${code}`)));
    child.stdout.on('data', chunk => {
      remember(chunk);
      stdout += chunk;
      const m = /^READY (\{.*\})$/m.exec(stdout);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const info = JSON.parse(m[1]);
      let exited = false;
      child.on('exit', () => { exited = true; });
      resolve({
        url: `http://127.0.0.1:${info.port}/`,
        version: info.version,
        userDir,
        output: () => log,
        /**
         * POST /flows (`type` full, flows or nodes; `headers` e.g. a Bearer token); when Node-RED
         * takes them, waits until that revision has started. Resolves with the answer's status and text.
         */
        async deploy(flows, { type = 'full', headers = {}, timeoutMs = 60000 } = {}) {
          const seen = startedRevs.length;
          const res = await fetch(new URL('flows', `http://127.0.0.1:${info.port}/`), {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v2', 'Node-RED-Deployment-Type': type, ...headers },
            body: JSON.stringify({ flows })
          });
          const text = await res.text();
          if (!res.ok) return { status: res.status, text };
          await this.started(JSON.parse(text).rev, { since: seen, timeoutMs });
          return { status: res.status, text };
        },
        /** Resolves once flows of revision `rev` have started (after the `since`-th start; e.g. a deploy made in the editor). */
        async started(rev, { since = 0, timeoutMs = 60000 } = {}) {
          const until = Date.now() + timeoutMs;
          while (!startedRevs.slice(since).includes(rev)) {
            if (exited || Date.now() > until) throw new Error(`Node-RED did not start the deployed flows (rev ${rev})\n--- Node-RED output ---\n${log}`);
            await new Promise(r => setTimeout(r, 20));
          }
        },
        async stop() {
          if (!exited) {
            const gone = new Promise(r => child.once('exit', r));
            child.kill('SIGTERM');
            const t = setTimeout(() => child.kill('SIGKILL'), 5000);
            await gone;
            clearTimeout(t);
          }
          fs.rmSync(userDir, { recursive: true, force: true });
        },
      });
    });
  });
}

/** Child side: embed Node-RED and print `READY {port, version}` once started. */
async function runChild(userDir, extraSettings) {
  const RED = require('node-red');
  const express = require(require.resolve('express', { paths: [path.dirname(require.resolve('node-red'))] }));
  const app = express();
  const server = http.createServer(app);
  const settings = {
    userDir,
    flowFile: 'flows.json',
    credentialSecret: 'browser-test-secret',
    nodesDir: [projectRoot],
    httpAdminRoot: '/',
    httpNodeRoot: '/api',
    uiHost: '127.0.0.1',
    logging: { console: { level: 'warn', metrics: false, audit: false } },
    // No first-run tour, no update prompt, no palette catalogue fetch: the test
    // must not depend on the network or on pop-ups covering the screenshots.
    telemetry: { enabled: false, updateNotification: false },
    editorTheme: { tours: false, projects: { enabled: false }, palette: { catalogues: [] } },
    externalModules: { palette: { allowInstall: false } },
    ...extraSettings,
  };
  RED.init(server, settings);
  // For deploy() in the parent: which revision of the flows has started.
  RED.events.on('flows:started', (event) => process.stdout.write(`FLOWS_STARTED ${JSON.stringify(event && event.config && event.config.rev)}\n`));
  app.use(settings.httpAdminRoot, RED.httpAdmin);
  app.use(settings.httpNodeRoot, RED.httpNode);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  await RED.start();
  const stop = () => {
    RED.stop().catch(() => {}).then(() => server.close(() => process.exit(0)));
    setTimeout(() => process.exit(0), 4000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port, version: RED.version() })}\n`);
}

if (require.main === module) {
  runChild(process.argv[2], JSON.parse(process.argv[3] || '{}')).catch(err => {
    console.error(err && err.stack || err);
    process.exit(1);
  });
}

module.exports = { startNodeRed, projectRoot };
