'use strict';
// A real squid (Debian package `squid`) started on 127.0.0.1 and a free port, with its own
// minimal configuration, log, pid and spool under a temporary folder; optionally with basic
// authentication (squid's basic_ncsa_auth helper and an htpasswd file written here). Its access
// log records every request with its request headers, so a test can see what the proxy saw.
// Also: a self-signed certificate for 127.0.0.1 made with openssl, for the emulator over TLS.
const { execFileSync, spawn } = require('child_process');
const fs = require('fs');
const fsp = require('fs/promises');
const net = require('net');
const os = require('os');
const path = require('path');

const SQUID = ['/usr/sbin/squid', '/usr/bin/squid'].find((p) => fs.existsSync(p)) || 'squid';
const NCSA_AUTH = ['/usr/lib/squid/basic_ncsa_auth', '/usr/lib/squid3/basic_ncsa_auth', '/usr/libexec/squid/basic_ncsa_auth']
  .find((p) => fs.existsSync(p));

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves when something accepts connections on the port; rejects if `died` first says the process ended. */
async function waitForPort(port, died) {
  for (;;) {
    if (died()) throw new Error(died());
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts squid. `auth: { username, password }` requires basic authentication; `accessFirst`:
 * access rules placed before the others; `extraConfig`: lines at the end.
 * Returns { url, port, dir, accessLog(): Promise<string[]>, waitForLog(pred), stop() }.
 */
let started = 0;

/** Removes the shared-memory segments of squid service `service` (left behind by a SIGKILL). */
async function removeSharedMemory(service) {
  const names = await fsp.readdir('/dev/shm').catch(() => []);
  await Promise.all(names.filter((name) => name.startsWith(`${service}-`)).map((name) => fsp.rm(path.join('/dev/shm', name), { force: true })));
}

async function startSquid({ auth, extraConfig = [], accessFirst = [] } = {}) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'dam-squid-'));
  // Squid started by root drops to the user `proxy`: it must be able to write here.
  await fsp.chmod(dir, 0o777);
  const port = await freePort();
  const lines = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${dir}/squid.pid`,
    `cache_log ${dir}/cache.log`,
    // Every request with all its request headers (%>h), so a test can look for a cookie.
    'logformat withheaders %ts %>a %Ss/%03>Hs %<st %rm %ru user=%un headers=[%>h]',
    `access_log stdio:${dir}/access.log withheaders`,
    'logfile_rotate 0',
    `coredump_dir ${dir}`,
    'cache deny all',
    // Squid 5.7 (Debian 12) has Squid bug 5405: a plain-HTTP upload that fills the request buffer
    // (512 KB by default) faster than the server drains it is cut. A buffer above the tests'
    // uploads avoids it (docs/proxy.md); a test may give a bigger one in extraConfig.
    'client_request_buffer_max_size 64 MB',
    'cache_mem 8 MB',
    'shutdown_lifetime 0 seconds',
    'forwarded_for delete',
    'via off',
    'pinger_enable off',
    'acl loopback src 127.0.0.1/32'
  ];
  // Access rules before the ones below (e.g. a CONNECT allowed to port 443 only, as many proxies do).
  lines.push(...accessFirst);
  if (auth) {
    if (!NCSA_AUTH) throw new Error('basic_ncsa_auth not found (Debian package squid: /usr/lib/squid/basic_ncsa_auth)');
    const hash = execFileSync('openssl', ['passwd', '-apr1', auth.password]).toString().trim();
    await fsp.writeFile(path.join(dir, 'htpasswd'), `${auth.username}:${hash}\n`, { mode: 0o644 });
    lines.push(
      `auth_param basic program ${NCSA_AUTH} ${dir}/htpasswd`,
      'auth_param basic children 2 startup=1 idle=1',
      'auth_param basic realm dam-test-proxy',
      'acl authenticated proxy_auth REQUIRED',
      'http_access allow loopback authenticated'
    );
  } else {
    lines.push('http_access allow loopback');
  }
  lines.push('http_access deny all', ...extraConfig);
  const conf = path.join(dir, 'squid.conf');
  await fsp.writeFile(conf, lines.join('\n') + '\n');
  await fsp.writeFile(path.join(dir, 'access.log'), '', { mode: 0o666 });
  await fsp.writeFile(path.join(dir, 'cache.log'), '', { mode: 0o666 });
  await fsp.chmod(path.join(dir, 'access.log'), 0o666);
  await fsp.chmod(path.join(dir, 'cache.log'), 0o666);

  // A service name of its own: squid names its shared-memory segments after it (/dev/shm/<name>-cf__*.shm)
  // and a SIGKILLed squid leaves them behind; with the default name the next squid found them and died
  // ("shm_open(/squid-cf__metadata.shm): File exists").
  const service = `damtest${process.pid}n${++started}`;
  const child = spawn(SQUID, ['-N', '-n', service, '-f', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let exited = null;
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  child.on('exit', (code, signal) => { exited = `squid exited (${code ?? signal}): ${stderr}`; });
  try {
    await waitForPort(port, () => exited && `${exited}\n${fs.readFileSync(path.join(dir, 'cache.log'), 'utf8').slice(-2000)}`);
  } catch (err) {
    child.kill('SIGKILL');
    await removeSharedMemory(service);
    throw err;
  }

  const readLog = async () => (await fsp.readFile(path.join(dir, 'access.log'), 'utf8')).split('\n').filter(Boolean);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    pid: child.pid,
    accessLog: readLog,
    /** Squid writes a line when a request (or a tunnel) ends: waits until one matches. */
    async waitForLog(predicate) {
      for (;;) {
        const found = (await readLog()).filter(predicate);
        if (found.length) return found;
        if (exited) throw new Error(exited);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      if (!exited) {
        const done = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await done;
      }
      await removeSharedMemory(service);
      await fsp.rm(dir, { recursive: true, force: true });
    }
  };
}

/** A self-signed certificate and key for 127.0.0.1 (and localhost), made now with openssl. */
async function selfSignedCert() {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'dam-cert-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    return { cert: await fsp.readFile(path.join(dir, 'cert.pem'), 'utf8'), key: await fsp.readFile(path.join(dir, 'key.pem'), 'utf8') };
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

module.exports = { startSquid, selfSignedCert, freePort };
