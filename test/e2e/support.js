'use strict';
// Small helpers shared by the end-to-end tests (not a test file itself).
const http = require('http');
const net = require('net');

/** A port that was free a moment ago on 127.0.0.1 (for processes that need a port number up front). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** True when something accepts connections on 127.0.0.1:port. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` (sync or async) until it returns a truthy value, and returns that value.
 * Throws after `timeoutMs` with `what` and the last error `check` threw.
 */
async function waitFor(what, check, timeoutMs, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}` + (lastError ? ` (last error: ${lastError.message})` : ''));
    }
    await sleep(intervalMs);
  }
}

/** True while a process with this pid exists (signal 0 only checks). */
function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Collects a child's output lines; `waitForLine(re)` resolves with the first match (already seen or coming). */
function lineCollector(child) {
  const lines = [];
  const waiters = [];
  let rest = '';
  const onData = (chunk) => {
    const parts = (rest + chunk).split(/\r?\n/);
    rest = parts.pop();
    for (const line of parts) {
      lines.push(line);
      for (const w of waiters.slice()) {
        const m = w.re.exec(line);
        if (m) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
      }
    }
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', onData);
  return {
    lines,
    text: () => lines.join('\n') + (rest ? '\n' + rest : ''),
    waitForLine(re, timeoutMs) {
      const seen = lines.map((l) => re.exec(l)).find(Boolean);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { re, resolve };
        waiters.push(w);
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no line matching ${re} within ${timeoutMs} ms. Output:\n${lines.slice(-60).join('\n')}`));
        }, timeoutMs);
        const done = w.resolve;
        w.resolve = (m) => { clearTimeout(timer); done(m); };
        child.once('exit', (code, signal) => {
          if (waiters.includes(w)) {
            waiters.splice(waiters.indexOf(w), 1);
            clearTimeout(timer);
            reject(new Error(`process exited (${code ?? signal}) before a line matching ${re}. Output:\n${lines.slice(-60).join('\n')}`));
          }
        });
      });
    }
  };
}

/** Resolves with the exit code (or signal) of a child, or rejects after timeoutMs. */
function exitOf(child, timeoutMs) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process ${child.pid} still running after ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code, signal) => { clearTimeout(timer); resolve(code ?? signal); });
  });
}

/**
 * A tiny HTTP server that flows POST reports to (JSON bodies, one per message a debug node
 * would show). `next(name, since)` waits for the next report whose `key` field (`tag` by
 * default) is `name` and whose msg passes `test`, counting from report number `since`.
 */
function startCollector({ key = 'tag' } = {}) {
  const reports = [];
  const waiters = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        for (const w of [...waiters]) w();
      } catch { /* not a report */ }
      res.end('ok');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/report`,
    reports,
    close: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); },
    next(name, since = 0, timeoutMs = 10000, test = () => true) {
      const find = () => reports.slice(since).find((rep) => rep[key] === name && test(rep.msg));
      return new Promise((res, rej) => {
        const found = find();
        if (found) { res(found.msg); return; }
        const check = () => { const f = find(); if (f) { waiters.delete(check); clearTimeout(timer); res(f.msg); } };
        const timer = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`no report "${name}" within ${timeoutMs} ms; got: ${JSON.stringify(reports.slice(since).map((x) => x[key]))}`));
        }, timeoutMs);
        waiters.add(check);
      });
    }
  })));
}

module.exports = { freePort, listening, sleep, waitFor, processAlive, lineCollector, exitOf, startCollector };
