'use strict';
// Debian's redis-server and nginx, started by the tests on free ports with their config files,
// pid, logs and temp folders inside a temp dir (installed in CI by .ci/run).
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { freePort, listening, waitFor, lineCollector } = require('../../e2e/support');

/** Full path of `command` on the PATH or in the sbin folders (nginx is in /usr/sbin), or undefined. */
function commandPath(command) {
  const dirs = [...(process.env.PATH || '').split(':'), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const dir of dirs) {
    const file = path.join(dir, command);
    try { fs.accessSync(file, fs.constants.X_OK); return file; } catch { /* next */ }
  }
  return undefined;
}

const installed = (command) => commandPath(command) !== undefined;

function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * redis-server on a free port, persistent (append-only file, fsync always) in `dir`, so that a
 * restart keeps the keys. `restart()` stops it cleanly (SIGTERM) and starts it on the same port;
 * `kill()` SIGKILLs it; `password` turns on AUTH.
 */
async function startRedis(dir, { password, durable = true } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = path.join(dir, 'redis.conf');
  fs.writeFileSync(conf, [
    `port ${port}`, 'bind 127.0.0.1', 'protected-mode no', `dir ${dir}`, 'daemonize no', 'logfile ""',
    'save ""', `appendonly ${durable ? 'yes' : 'no'}`, 'appendfsync always', 'loglevel notice',
    ...(password ? [`requirepass ${password}`] : [])
  ].join('\n') + '\n');
  let child;
  let out;
  const redis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() { return child && child.pid; },
    get running() { return !!child && child.exitCode === null && child.signalCode === null; },
    async start() {
      child = spawn(commandPath('redis-server') || 'redis-server', [conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      out = lineCollector(child);
      await out.waitForLine(/Ready to accept connections/, 15000);
      return redis;
    },
    async stop() {
      if (!redis.running) return;
      child.kill('SIGTERM');
      await exited(child);
    },
    async kill() {
      if (!redis.running) return;
      child.kill('SIGKILL');
      await exited(child);
    },
    async restart() { await redis.stop(); await redis.start(); },
    /** Pauses the server (SIGSTOP: it accepts nothing, answers nothing) until `resume()`. */
    pause() { child.kill('SIGSTOP'); },
    resume() { child.kill('SIGCONT'); },
    output: () => (out ? out.text() : '')
  };
  return redis.start();
}

/**
 * nginx as a round-robin load balancer on 127.0.0.1 in front of `upstreamPorts`. A request that
 * cannot reach one copy (connection refused) goes to the next; one cut mid-way is answered 502.
 */
/** nginx in front of `upstreamPorts` on 127.0.0.1; `readTimeoutSeconds`: how long it waits for an answer before its 504. */
async function startNginx(dir, upstreamPorts, { readTimeoutSeconds = 30 } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(conf, `
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  # Callback bodies stay in memory: run as root, nginx's workers are 'nobody' and cannot write
  # to the test's private temp folder (a body past the default 16k buffer was answered 500).
  client_body_buffer_size 64m;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream node_red {
${upstreamPorts.map((p) => `    server 127.0.0.1:${p} max_fails=0;`).join('\n')}
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 60m;
    location / {
      proxy_pass http://node_red;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_next_upstream error timeout;
      proxy_connect_timeout 2s;
      proxy_read_timeout ${readTimeoutSeconds}s;
    }
  }
}
`);
  const child = spawn(commandPath('nginx') || 'nginx', ['-p', dir, '-e', path.join(dir, 'error.log'), '-c', conf, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = lineCollector(child);
  await waitFor('nginx listening', async () => {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${out.text()}`);
    return listening(port);
  }, 15000, 50);
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    errorLog: () => { try { return fs.readFileSync(path.join(dir, 'error.log'), 'utf8'); } catch { return ''; } },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited(child);
      clearTimeout(timer);
    }
  };
}

module.exports = { installed, startRedis, startNginx };
