'use strict';
// asset-download in Buffer mode, measured in a REAL Node-RED runtime in its own process (so
// the mocha process, the emulator and the upload do not count): a 300 MB asset grows the
// runtime's resident memory by at most 1.3 times the file size, and above Max size the node
// fails before the body is read, with memory flat.
require('should');
const fs = require('fs');
const path = require('path');
const { fork } = require('child_process');
const s = require('./nodes-support');
const { AssetClient } = require('../../dist/api/client');

const root = path.join(__dirname, '..', '..');
const MODULE = require(path.join(root, 'package.json')).name;
const SIZE = 300 * 1000 * 1000;
const MB = 1000 * 1000;

/** Resident and peak resident memory of a process, in bytes (Linux /proc). */
function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/**
 * Runs `fn` and returns the highest resident memory of `pid` meanwhile: the kernel's own peak
 * (VmHWM, reset first through clear_refs), and samples every 10 ms in case the reset is refused.
 */
async function peakDuring(pid, fn) {
  let reset = true;
  try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); } catch { reset = false; }
  let sampled = memoryOf(pid).rss;
  const timer = setInterval(() => { sampled = Math.max(sampled, memoryOf(pid).rss); }, 10);
  try {
    const result = await fn();
    const after = memoryOf(pid);
    return { result, peak: Math.max(sampled, after.rss, reset ? after.peak : 0), kernelPeak: reset };
  } finally {
    clearInterval(timer);
  }
}

/** A file whose byte k is k % 251, so any sample of it can be checked. */
async function writePatternFile(file, size) {
  const block = Buffer.alloc(251 * 4096);
  for (let i = 0; i < block.length; i++) block[i] = i % 251;
  const out = fs.createWriteStream(file);
  for (let written = 0; written < size; written += block.length) {
    const piece = block.subarray(0, Math.min(block.length, size - written));
    if (!out.write(piece)) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
}

describe('asset-download Buffer mode memory (real Node-RED in its own process)', function () {
  this.timeout(180000);
  let emulator;
  let tmp;
  let child;
  let base;
  let fuid;

  before(async function () {
    emulator = await s.startTestEmulator();
    tmp = s.tempDir('dam-download-memory-');
    const file = path.join(tmp.dir, 'big.bin');
    await writePatternFile(file, SIZE);
    const client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE });
    try {
      fuid = (await client.upload({ file: { path: file }, destination: '/memory', wait: true })).fuids[0];
    } finally {
      client.close();
    }
    fs.rmSync(file);

    const userDir = path.join(tmp.dir, 'node-red');
    const scopeDir = path.join(userDir, 'node_modules', path.dirname(MODULE));
    fs.mkdirSync(scopeDir, { recursive: true });
    fs.symlinkSync(root, path.join(userDir, 'node_modules', MODULE), 'dir');
    child = fork(path.join(__dirname, 'fixtures', 'embedded-node-red.js'), [userDir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const started = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`Node-RED exited with ${code}`)));
    });
    if (started.error) throw new Error(started.error);
    base = `http://127.0.0.1:${started.port}`;

    // Two routes: Max size 400 (takes the file) and the default (100 MB: refuses it).
    const check = 'const p = msg.payload;\n' +
      'const samples = [0, 1, 250, 251, 123456789, p.length - 1].every(k => p[k] === k % 251);\n' +
      'msg.payload = { buffer: Buffer.isBuffer(p), bytes: p.length, samples };\nreturn msg;';
    const flows = [
      { id: 'tab1', type: 'tab', label: 'memory' },
      { id: 'srv', type: 'asset-server', name: 'emulator', baseUrl: emulator.url, timeout: 60, rejectUnauthorized: true, tls: '', publicBaseUrl: '',
        credentials: { cookie: s.COOKIE } },
      { id: 'in1', type: 'http in', z: 'tab1', x: 100, y: 40, url: '/big', method: 'get', upload: false, wires: [['down1']] },
      { id: 'down1', type: 'asset-download', z: 'tab1', x: 300, y: 40, server: 'srv', fuid: String(fuid), fuidType: 'num', output: 'buffer', maxSizeMB: '400', wires: [['check']] },
      { id: 'in2', type: 'http in', z: 'tab1', x: 100, y: 100, url: '/capped', method: 'get', upload: false, wires: [['down2']] },
      { id: 'down2', type: 'asset-download', z: 'tab1', x: 300, y: 100, server: 'srv', fuid: String(fuid), fuidType: 'num', output: 'buffer', wires: [['check']] },
      { id: 'check', type: 'function', z: 'tab1', x: 500, y: 40, func: check, outputs: 1, wires: [['res']] },
      { id: 'res', type: 'http response', z: 'tab1', x: 700, y: 40, statusCode: '', headers: {}, wires: [] },
      { id: 'in3', type: 'http in', z: 'tab1', x: 100, y: 220, url: '/ready', method: 'get', upload: false, wires: [['res']] },
      { id: 'catch1', type: 'catch', z: 'tab1', x: 100, y: 160, scope: null, uncaught: false, wires: [['fail']] },
      { id: 'fail', type: 'function', z: 'tab1', x: 300, y: 160, outputs: 1, wires: [['res']],
        func: 'msg.statusCode = 500;\nmsg.payload = { kind: msg.assetError && msg.assetError.kind, message: msg.error && msg.error.message };\nreturn msg;' }
    ];
    const deploy = await fetch(`${base}/flows`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v1', 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify(flows)
    });
    deploy.status.should.equal(204);
    await call('/ready'); // the routes are up
  });

  after(async function () {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
      await exited;
      clearTimeout(timer);
    }
    if (emulator) await emulator.close();
    if (tmp) tmp.cleanup();
  });

  /** GET a route of the flow (retrying while the deploy has not registered it yet). */
  async function call(route) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const res = await fetch(`${base}/api${route}`);
      const text = await res.text();
      if (res.status !== 404) return { status: res.status, body: text ? JSON.parse(text) : undefined };
      await s.delay(100);
    }
    throw new Error(`${route} never appeared`);
  }

  it(`${SIZE / MB} MB into a Buffer: resident memory grows by at most 1.3 times the file size`, async function () {
    await s.delay(500);
    const before = memoryOf(child.pid).rss;
    const { result, peak, kernelPeak } = await peakDuring(child.pid, () => call('/big'));
    result.status.should.equal(200, JSON.stringify(result.body));
    result.body.should.eql({ buffer: true, bytes: SIZE, samples: true });
    const growth = peak - before;
    console.log(`      ${SIZE / MB} MB in Buffer mode: Node-RED RSS ${(before / MB).toFixed(0)} -> peak ${(peak / MB).toFixed(0)} MB, ` +
      `growth ${(growth / MB).toFixed(0)} MB = ${(growth / SIZE).toFixed(2)} x the file (${kernelPeak ? 'VmHWM' : 'sampled'})`);
    growth.should.be.belowOrEqual(1.3 * SIZE);
  });

  it('above Max size (default 100 MB): too-large before the body is read, naming file mode; memory stays flat', async function () {
    await s.delay(500);
    const before = memoryOf(child.pid).rss;
    const started = Date.now();
    const { result, peak } = await peakDuring(child.pid, () => call('/capped'));
    const ms = Date.now() - started;
    result.status.should.equal(500);
    result.body.kind.should.equal('too-large');
    result.body.message.should.match(/300\.0 MB \(Content-Length\), above the limit of 100\.0 MB .*file mode/);
    console.log(`      above the cap: refused in ${ms} ms, RSS growth ${((peak - before) / MB).toFixed(1)} MB`);
    (peak - before).should.be.below(30 * MB);
  });
});
