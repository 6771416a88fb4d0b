'use strict';
// Shared by the API client tests: a real emulator, small real servers for faults,
// and a record of every error the suite saw (checked for cookie text at the end).
const fs = require('fs');
const fsp = require('fs/promises');
const http = require('http');
const os = require('os');
const path = require('path');
const util = require('util');
const should = require('should');
const { startEmulator } = require('../../dist/emulator');
const { AssetApiError } = require('../../dist/api/errors');

/** Distinctive cookie values: none of them may ever show up in an error. */
const COOKIES = {
  editor: 'Cookie-Editor-7f3a9c1e5b2d4680aa11',
  viewer: 'Cookie-Viewer-0b8e6d4c2a1f3579bb22',
  wrong: 'Cookie-Wrong-5e4d3c2b1a09f8e7cc33'
};

/** Every error caught by expectError, in every test file of this process. */
const seenErrors = global.__damApiSeenErrors || (global.__damApiSeenErrors = []);

async function tempDir(prefix = 'dam-api-test-') {
  return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** A real emulator on a free port with an editor (events, add) and a viewer (no permission) session. */
async function startTestEmulator(extra = {}) {
  const dataDir = await tempDir('dam-api-emu-');
  const emulator = await startEmulator({
    port: 0,
    dataDir,
    retryDelayMs: 200,
    sessions: [
      { value: COOKIES.editor, permissions: ['events', 'add'] },
      { value: COOKIES.viewer, permissions: [] }
    ],
    ...extra
  });
  return {
    emulator,
    url: emulator.url,
    async close() {
      await emulator.close();
      await fsp.rm(dataDir, { recursive: true, force: true });
    }
  };
}

/** Awaits a call that must fail with an AssetApiError of `kind`; records the error; returns it. */
async function expectError(promiseOrFn, kind) {
  let error;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (err) {
    error = err;
  }
  should.exist(error, `expected an error of kind ${kind}, but the call succeeded`);
  seenErrors.push(error);
  error.should.be.instanceOf(AssetApiError);
  error.kind.should.equal(kind, `kind ${error.kind} (${error.message})`);
  return error;
}

/** Records an error that was observed another way (e.g. on a stream). */
function recordError(error) {
  seenErrors.push(error);
}

/** Every way an error can be turned into text. */
function serialise(error) {
  const own = {};
  for (const key of Object.getOwnPropertyNames(error)) own[key] = String(error[key]);
  return [
    JSON.stringify(error),
    JSON.stringify(own),
    util.inspect(error, { depth: Infinity, showHidden: true, getters: true }),
    String(error.stack),
    String(error.message),
    String(error),
    String(error.cause && util.inspect(error.cause, { depth: Infinity, showHidden: true }))
  ].join('\n');
}

/** Asserts that no cookie value appears in any serialisation of the errors. */
function assertNoCookieIn(errors) {
  for (const error of errors) {
    const text = serialise(error);
    for (const value of Object.values(COOKIES)) {
      if (text.includes(value)) throw new Error(`cookie value found in an error: ${error.message}`);
    }
  }
}

/** A real HTTP server on 127.0.0.1 with a free port; `handler(req, res)`. */
async function startServer(handler) {
  const sockets = new Set();
  const server = http.createServer(handler);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    }
  };
}

/**
 * A counting reverse proxy in front of `targetUrl`: every request it sees is
 * counted and forwarded. `prefix` is stripped first (to test base URLs with a path).
 */
async function startCountingProxy(targetUrl, prefix = '') {
  const target = new URL(targetUrl);
  const seen = [];
  const proxy = await startServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    let url = req.url;
    if (prefix) {
      if (!url.startsWith(prefix + '/')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ success: false, error: `not under ${prefix}` }));
        return;
      }
      url = url.slice(prefix.length);
    }
    const upstream = http.request({
      host: target.hostname, port: target.port, method: req.method, path: url, headers: req.headers
    }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  proxy.seen = seen;
  return proxy;
}

/** A closed port: connecting to it is refused. */
async function closedPortUrl() {
  const server = await startServer(() => {});
  await server.close();
  return server.url;
}

/** Files in a folder (including hidden temporary files). */
async function filesIn(dir) {
  try {
    return await fsp.readdir(dir);
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

module.exports = {
  COOKIES, seenErrors, tempDir, startTestEmulator, expectError, recordError, serialise, assertNoCookieIn,
  startServer, startCountingProxy, closedPortUrl, filesIn, fs
};
