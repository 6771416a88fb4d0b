'use strict';
// Shared helpers of the emulator tests: a temp-dir emulator, raw HTTP requests, multipart bodies,
// zip archives, and the dam-emulator CLI as a child process.
const http = require('http');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const yazl = require('yazl');
const { startEmulator } = require('../../dist/emulator');

const COOKIE = 'JSESSIONID=local-dev';
const CLI = path.join(__dirname, '../../dist/emulator/cli.js');

function tmpDir(prefix = 'dam-emu-test-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

function rmDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/** Starts an emulator on a fresh temp data dir (port 0); `stop()` closes it and removes the dir. */
async function startTestEmulator(options = {}) {
  const dataDir = options.dataDir || tmpDir();
  const lines = [];
  const emu = await startEmulator({ port: 0, dataDir, log: l => lines.push(l), ...options });
  emu.lines = lines;
  emu.stop = async () => { await emu.close(); if (!options.dataDir) rmDir(dataDir); };
  return emu;
}

/**
 * One HTTP request. `body` is a Buffer/string (or a function(req) that writes and ends it);
 * answers { status, headers, body (Buffer), text, json (parsed when JSON) }.
 */
function request(baseUrl, method, urlPath, { cookie = COOKIE, headers = {}, body, form } = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl);
    const h = { ...headers };
    if (cookie !== null) h.Cookie = cookie;
    let payload = body;
    if (form !== undefined) {
      payload = typeof form === 'string' ? form : new URLSearchParams(form).toString();
      h['Content-Type'] = 'application/x-www-form-urlencoded';
    }
    if (Buffer.isBuffer(payload) || typeof payload === 'string') h['Content-Length'] = Buffer.byteLength(payload);
    const req = http.request({ host: url.hostname, port: url.port, method, path: urlPath, headers: h, agent: false }, res => {
      const chunks = [];
      res.on('data', c => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        const out = { status: res.statusCode, headers: res.headers, body: buf, text: buf.toString('utf8') };
        if (/json/.test(res.headers['content-type'] || '')) {
          try { out.json = JSON.parse(out.text); } catch (e) { out.jsonError = e; }
        }
        resolve(out);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (typeof payload === 'function') payload(req);
    else req.end(payload);
  });
}

/**
 * A multipart/form-data body from parts in the given order:
 * { name, value } for a field, { name, filename, data, contentType } for a file.
 */
function multipart(parts) {
  const boundary = '----damtest' + Math.random().toString(16).slice(2);
  const chunks = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    else if (p.filename !== undefined) head += 'Content-Type: application/octet-stream\r\n';
    chunks.push(Buffer.from(head + '\r\n'));
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data !== undefined ? p.data : p.value));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /review/api/asset/upload with the given parts. */
function upload(baseUrl, parts, opts = {}) {
  const { body, contentType } = multipart(parts);
  return request(baseUrl, 'POST', '/review/api/asset/upload', { ...opts, body, headers: { 'Content-Type': contentType } });
}

/** Shorthand: upload `data` as `filename` to `destination` with extra fields, wait=true unless given. */
function uploadFile(baseUrl, destination, filename, data, fields = {}, opts = {}) {
  const parts = [];
  if (destination !== undefined) parts.push({ name: 'destination', value: destination });
  if (fields.wait === undefined) parts.push({ name: 'wait', value: 'true' });
  for (const [k, v] of Object.entries(fields)) parts.push({ name: k, value: String(v) });
  parts.push({ name: 'file', filename, data });
  return upload(baseUrl, parts, opts);
}

/** A zip archive (Buffer) of { name: content } entries; names ending in / are folders. */
function makeZip(entries) {
  return new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (const [name, content] of Object.entries(entries)) {
      if (name.endsWith('/')) zip.addEmptyDirectory(name);
      else zip.addBuffer(Buffer.from(content), name);
    }
    zip.end();
    const chunks = [];
    zip.outputStream.on('data', c => chunks.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

/** Rewrites an entry name inside a zip (same length), e.g. to make a zip-slip archive yazl refuses to write. */
function renameZipEntry(zip, from, to) {
  if (from.length !== to.length) throw new Error('names must have the same length');
  const a = Buffer.from(from);
  const out = Buffer.from(zip);
  let at = out.indexOf(a);
  let n = 0;
  while (at >= 0) { Buffer.from(to).copy(out, at); n++; at = out.indexOf(a, at + 1); }
  if (n < 2) throw new Error(`entry ${from} not found in local and central headers`);
  return out;
}

/**
 * Spawns the dam-emulator CLI; resolves once it printed its listening line.
 * Returns { child, url, stdout() (all output so far), exited (promise of {code, signal}) }.
 */
function spawnCli(args, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const exited = new Promise(res => child.on('exit', (code, signal) => res({ code, signal })));
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`CLI did not start: ${out}${err}`)); }, timeoutMs);
    child.stdout.on('data', d => {
      out += d;
      const m = /dam-emulator listening on (http:\/\/\S+)/.exec(out);
      if (m && timer) {
        clearTimeout(timer);
        resolve({ child, url: m[1], stdout: () => out, stderr: () => err, exited });
      }
    });
    child.stderr.on('data', d => { err += d; });
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`CLI exited with ${code}: ${out}${err}`)); });
  });
}

/** Runs the CLI to completion (for argument errors); resolves { code, stdout, stderr }. */
function runCli(args, timeoutMs = 10000) {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', d => { stdout += d; });
    child.stderr.on('data', d => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', code => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** A local HTTP receiver recording every request; `answer(req)` gives the status (default 200). */
async function startReceiver(answer = () => 200) {
  const calls = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', () => {
      const call = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      calls.push(call);
      res.statusCode = answer(call);
      res.end();
    });
  });
  await new Promise(r => server.listen(0, '127.0.0.1', r));
  return { calls, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise(r => server.close(r)) };
}

async function waitFor(check, { timeoutMs = 5000, stepMs = 25 } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise(r => setTimeout(r, stepMs));
  }
}

module.exports = {
  COOKIE, CLI, tmpDir, rmDir, startTestEmulator, request, multipart, upload, uploadFile, makeZip, renameZipEntry,
  spawnCli, runCli, startReceiver, waitFor
};
