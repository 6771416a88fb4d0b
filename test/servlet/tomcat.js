'use strict';
// Starts DamServletServer.java (embedded Tomcat 10 from Debian's libtomcat10-java) on a free
// port and waits for its "ready <port>" line. Not a test file itself.
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { lineCollector, exitOf } = require('../e2e/support');

const JAR_DIR = '/usr/share/java';
const SOURCE = path.join(__dirname, 'DamServletServer.java');
/** Java compiles the source file before it starts: slow on a busy machine, so wait long for the line. */
const START_TIMEOUT_MS = 180000;

function tomcatClassPath() {
  const jars = fs.existsSync(JAR_DIR) ? fs.readdirSync(JAR_DIR).filter((name) => /^tomcat10-.*\.jar$/.test(name)) : [];
  if (!jars.some((name) => name.startsWith('tomcat10-catalina'))) {
    throw new Error(`Tomcat 10 is not installed: no ${JAR_DIR}/tomcat10-catalina*.jar (Debian package libtomcat10-java; .ci/run installs it)`);
  }
  return jars.map((name) => path.join(JAR_DIR, name)).join(path.delimiter);
}

/** A running servlet container: `url` is the server base URL (the context path /review is the API's). */
async function startTomcat() {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-tomcat-test-'));
  const child = spawn('java', ['-cp', tomcatClassPath(), SOURCE, '0', folder], { stdio: ['pipe', 'pipe', 'pipe'] });
  // Java exits when this pipe closes: also when this process dies without stopping it.
  child.stdin.on('error', () => undefined);
  const spawned = new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) => reject(new Error(`cannot run java (a JDK 17 or later is needed): ${err.message}`)));
  });
  const output = lineCollector(child);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exitOf(child, 20000).catch(() => { child.kill('SIGKILL'); return exitOf(child, 5000); });
    }
    fs.rmSync(folder, { recursive: true, force: true });
  };
  try {
    await spawned;
    const [, port] = await output.waitForLine(/^ready (\d+)$/, START_TIMEOUT_MS);
    return { url: `http://127.0.0.1:${port}`, output, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Logs in through the container's login servlet; returns the JSESSIONID pair from Set-Cookie. */
async function login(url, user = 'editor', password = 'servlet-secret') {
  const res = await fetch(`${url}/review/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8' },
    body: new URLSearchParams({ user, password }).toString()
  });
  if (res.status !== 200) throw new Error(`login failed: HTTP ${res.status} ${await res.text()}`);
  const setCookie = res.headers.getSetCookie().find((line) => line.startsWith('JSESSIONID='));
  if (!setCookie) throw new Error(`login answered without a JSESSIONID cookie: ${JSON.stringify(res.headers.getSetCookie())}`);
  return setCookie.split(';')[0];
}

/** Invalidates the container session of `cookie` (as a logout or an expired session). */
async function logout(url, cookie) {
  const res = await fetch(`${url}/review/logout`, { method: 'POST', headers: { Cookie: cookie } });
  return res.json();
}

module.exports = { startTomcat, login, logout };
