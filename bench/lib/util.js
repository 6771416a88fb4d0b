'use strict';
// Small helpers shared by the bench cases: ports, timing, sizes, hashing, plain HTTP.
const net = require('net');
const fs = require('fs');
const http = require('http');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

const MiB = 1024 * 1024;

/** A port that was free a moment ago on 127.0.0.1 (the kernel picks it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function median(values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** '16M', '256MiB', '1G', '512k' or a plain byte count -> bytes. */
function parseSize(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*$/i.exec(String(text));
  if (!m) throw new Error(`--sizes: "${text}" is not a size (examples: 16M, 256M, 1G)`);
  const unit = { '': 1, k: 1024, m: MiB, g: 1024 * MiB }[m[2].toLowerCase()];
  const bytes = Math.round(parseFloat(m[1]) * unit);
  if (bytes < 1) throw new Error(`--sizes: "${text}" must be at least 1 byte`);
  return bytes;
}

/** 16777216 -> '16 MiB', 1073741824 -> '1 GiB'. */
function formatSize(bytes) {
  if (bytes >= 1024 * MiB && bytes % (1024 * MiB) === 0) return `${bytes / (1024 * MiB)} GiB`;
  if (bytes >= MiB) return `${+(bytes / MiB).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

function sha256File(file) {
  return new Promise((resolve, reject) => {
    const hash = crypto.createHash('sha256');
    fs.createReadStream(file, { highWaterMark: MiB })
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/**
 * One HTTP request on loopback. `body` is a string, a Buffer or an object (sent as JSON).
 * Resolves with { status, headers, body (Buffer), json() }; never rejects on a status.
 */
function request(method, url, { headers = {}, body, timeout = 30000 } = {}) {
  return new Promise((resolve, reject) => {
    let payload = body;
    const hdrs = { ...headers };
    if (payload !== undefined && !Buffer.isBuffer(payload) && typeof payload !== 'string') {
      payload = JSON.stringify(payload);
      hdrs['content-type'] = hdrs['content-type'] || 'application/json';
    }
    if (payload !== undefined) hdrs['content-length'] = Buffer.byteLength(payload);
    const req = http.request(url, { method, headers: hdrs, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        resolve({
          status: res.statusCode,
          headers: res.headers,
          body: buf,
          json() { return JSON.parse(buf.toString('utf8')); }
        });
      });
    });
    req.setTimeout(timeout, () => req.destroy(new Error(`${method} ${url}: no answer within ${timeout} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Polls `check` until it returns a truthy value; rejects after `timeout` ms naming `what`. */
async function waitFor(check, { timeout = 10000, interval = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await sleep(interval);
  }
}

/** First line of `cmd --version`, or undefined when the command is missing. */
function toolVersion(cmd, args = ['--version']) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return (r.stdout || r.stderr).split('\n')[0].trim();
}

/** Splits a child's output stream into lines. */
function onLines(stream, fn) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (text) => {
    rest += text;
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      fn(rest.slice(0, nl));
      rest = rest.slice(nl + 1);
    }
  });
  stream.on('end', () => { if (rest) fn(rest); });
}

module.exports = {
  MiB, freePort, sleep, median, parseSize, formatSize, sha256File, request, waitFor, toolVersion, onLines
};
