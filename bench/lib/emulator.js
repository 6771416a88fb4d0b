'use strict';
// The emulator as its own process (dist/emulator/cli.js), so its memory and CPU are its own.
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { freePort, onLines, sleep } = require('./util');

const REPO = path.resolve(__dirname, '..', '..');
const CLI = path.join(REPO, 'dist', 'emulator', 'cli.js');

/**
 * Starts `dam-emulator` on 127.0.0.1 with a fresh data folder and one session `cookie` that may
 * do everything. Resolves with { url, port, pid, dataDir, stop() } once it prints its address.
 */
async function startEmulator({ dataDir, cookie, port, log = () => {} }) {
  if (!fs.existsSync(CLI)) throw new Error(`emulator not built: ${path.relative(REPO, CLI)} is missing (npm run build)`);
  port = port || await freePort();
  fs.mkdirSync(dataDir, { recursive: true });
  const args = [CLI, '--host', '127.0.0.1', '--port', String(port), '--data', dataDir,
    '--retry-delay', '1s', '--session', `${cookie}:events,add`, '--quiet'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  const keep = (line) => { output.push(line); if (output.length > 50) output.shift(); log(line); };
  onLines(child.stdout, keep);
  onLines(child.stderr, keep);

  let started = false;
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('did not print "listening on" within 15 s')), 15000);
    function fail(err) {
      if (started) return;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`emulator failed to start: ${err.message}\n  ${output.join('\n  ')}`));
    }
    child.stdout.on('data', () => {
      const m = output.map((l) => /listening on (https?:\/\/\S+)/.exec(l)).find(Boolean);
      if (m && !started) { started = true; clearTimeout(timer); resolve(m[1].replace(/\/$/, '')); }
    });
    child.on('error', fail);
    child.on('exit', (code, signal) => fail(new Error(`exited early (code ${code}, signal ${signal})`)));
  });

  let exited = false;
  child.on('exit', () => { exited = true; });
  return {
    url, port, pid: child.pid, dataDir, output,
    alive: () => !exited,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      for (let i = 0; i < 100 && !exited; i++) await sleep(100);
      if (!exited) child.kill('SIGKILL');
    }
  };
}

module.exports = { startEmulator, EMULATOR_CLI: CLI };
