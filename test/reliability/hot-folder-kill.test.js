'use strict';
// asset-hot-folder's guarantee: a file is never lost. A real Node-RED (spawned, as `npm start`
// runs it) watches a folder of 200 files and uploads them to the emulator (through a proxy that
// slows what is sent, so that bodies are in flight at the kill); it is killed with
// SIGKILL at a random moment of the batch (after 1 to 150 files are done), then started again on
// the same user dir. Then every file's bytes are on the server and in the done folder, none is
// left in the watched folder, none is lost. Files uploaded twice (the kill fell between the
// server's answer and the move) are allowed, counted and printed.
// Rounds: HOT_KILL_ROUNDS (default 1; each round a fresh folder and a new random moment).
require('should');
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { startEmulator } = require('../../dist/emulator');
const { startNodeRed } = require('../../dist/demo/node-red');
const { freePort } = require('./lib/nodered');

const ROOT = path.resolve(__dirname, '..', '..');
const COOKIE_VALUE = 'hot-kill-cookie-3c81b0';
const FILES = 200;
const ROUNDS = Number(process.env.HOT_KILL_ROUNDS || 1);

async function waitFor(what, check, ms = 180000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`still waiting for ${what}`);
    await new Promise(r => setTimeout(r, 25));
  }
}

/** Files below `dir` (recursively), relative paths. */
function filesIn(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter(e => e.isFile())
    .map(e => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
}

/** A TCP proxy to `target` that forwards what the client sends at most `bytesPerSec` per connection. */
async function throttlingProxy(target, bytesPerSec) {
  const { port, hostname } = new URL(target);
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) { sockets.add(s); s.on('close', () => sockets.delete(s)); s.on('error', () => { client.destroy(); upstream.destroy(); }); }
    client.on('data', (chunk) => {
      client.pause();
      upstream.write(chunk);
      setTimeout(() => client.resume(), Math.ceil((chunk.length / bytesPerSec) * 1000));
    });
    client.on('end', () => upstream.end());
    upstream.pipe(client);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => { for (const s of sockets) s.destroy(); server.close(resolve); })
  };
}

describe('reliability: asset-hot-folder, SIGKILL of Node-RED during a batch of 200 files', function () {
  this.timeout(600000);
  let emulator;
  let slowLink;
  let work;
  before(async function () {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-hot-kill-'));
    emulator = await startEmulator({ port: 0, sessions: [{ value: COOKIE_VALUE, permissions: ['events', 'add'] }] });
    slowLink = await throttlingProxy(emulator.url, 32 * 1024 * 1024);
  });
  after(async function () {
    if (slowLink) await slowLink.close();
    if (emulator) await emulator.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: every file on the server and in done after a kill and a restart; none lost`, async function () {
      const folder = path.join(work, `watched-${round}`);
      const userDir = path.join(work, `nr-${round}`);
      fs.mkdirSync(folder);
      fs.mkdirSync(userDir);
      const dest = `/kill-${round}`;
      const contents = new Map();
      for (let i = 0; i < FILES; i++) {
        const name = i % 10 === 0 ? `sub/file ${i}.bin` : `file-${i}.bin`;
        // Most up to 600 KiB; every 10th 16 MiB, sent through a proxy at 32 MiB/s per connection, so
        // that the kill lands while bodies are being sent (else the server has them all by then).
        const data = crypto.randomBytes(i % 10 === 3 ? 16 * 1024 * 1024 + i : 1024 + ((i * 7919) % (600 * 1024)));
        contents.set(name, data);
        fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
        fs.writeFileSync(path.join(folder, name), data);
      }
      const Z = 'hk00000000000001';
      const flows = [
        { id: Z, type: 'tab', label: 'hot folder kill' },
        { id: 'hk00000000000002', type: 'asset-server', name: 'dam', baseUrl: slowLink.url, timeout: 30, credentials: { cookie: `JSESSIONID=${COOKIE_VALUE}` } },
        { id: 'hk00000000000003', type: 'asset-hot-folder', z: Z, server: 'hk00000000000002', folder, recursive: true, mode: 'events',
          untouchedSeconds: 0.2, rescanSeconds: 0.5, maxParallel: 4, retries: 2, afterUpload: 'move', subfolders: 'keep',
          destination: dest, destinationType: 'str', wait: 'true', waitType: 'bool', x: 0, y: 0, wires: [[], []] }
      ];
      const port = await freePort();
      const start = () => startNodeRed({ userDir, port, credentialSecret: 'hot-kill-secret', nodesDir: [ROOT], logLevel: 'info', onLine: () => undefined });
      let nodeRed = await start();
      const killAfter = 1 + crypto.randomInt(150);
      try {
        await nodeRed.deploy(flows);
        await waitFor(`${killAfter} files done`, () => filesIn(path.join(folder, '.done')).length >= killAfter);
        nodeRed.child.kill('SIGKILL');
        await nodeRed.exited;
        const doneAtKill = filesIn(path.join(folder, '.done')).length;

        nodeRed = await start(); // the same user dir: the deployed flow starts again
        await waitFor('every file out of the watched folder',
          () => filesIn(folder).filter(f => !f.startsWith('.done') && !f.startsWith('.failed')).length === 0);
        fs.existsSync(path.join(folder, '.failed')).should.be.false();

        // Every file in done, byte for byte (a name with a suffix is a file uploaded twice).
        const done = filesIn(path.join(folder, '.done'));
        const byContent = new Map();
        for (const f of done) byContent.set(crypto.createHash('sha256').update(fs.readFileSync(path.join(folder, '.done', f))).digest('hex'), f);
        let twiceInDone = done.length - FILES;
        for (const [name, data] of contents) {
          byContent.has(crypto.createHash('sha256').update(data).digest('hex')).should.be.true(`${name} is in done`);
        }
        // Every file on the server, its latest revision byte for byte; extra revisions are duplicates.
        let duplicates = 0;
        for (const [name, data] of contents) {
          const found = await fetch(`${emulator.url}/emulator/assets?path=${encodeURIComponent(`${dest}/${name}`)}`, { headers: { Cookie: `JSESSIONID=${COOKIE_VALUE}` } });
          const body = await found.json();
          body.success.should.be.true(`${name} on the server`);
          duplicates += body.asset.revisions.length - 1;
          const res = await fetch(`${emulator.url}/review/api/asset/download?fuid=${body.asset.fuid}`, { headers: { Cookie: `JSESSIONID=${COOKIE_VALUE}` } });
          Buffer.from(await res.arrayBuffer()).equals(data).should.be.true(`${name}: the server's bytes`);
        }
        twiceInDone.should.be.aboveOrEqual(0);
        console.log(`      kill after ${killAfter} done (${doneAtKill} in done at the kill): ${FILES} files, none lost; ` +
          `${duplicates} uploaded twice (extra revisions), ${twiceInDone} twice in done`);
      } finally {
        await nodeRed.stop();
      }
    });
  }
});
