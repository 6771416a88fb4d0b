'use strict';
// Suite 3: crash and restart of the emulator. The dam-emulator CLI runs as a child on a temp data
// folder; 50 uploads go at once through the API client; `kill -9` lands part-way; the CLI restarts
// on the same folder (and port). Then:
// - every upload that got success:true downloads byte-identical (sha256);
// - no failed upload is visible, with the one exception no server can avoid: an upload whose whole
//   file was sent and whose answer was lost in the crash ("in doubt") may have been committed just
//   before the kill. Such an asset must then be complete and byte-identical, never partial. The
//   folder's listing holds nothing else;
// - the subscription survives, and its undelivered entries (the receiver was down during the crash)
//   are delivered once the receiver is up after the restart.
// Long mode (RELIABILITY_LONG=1): several crash rounds on the same data folder.
require('should');
const crypto = require('crypto');
const http = require('http');
const { Readable } = require('stream');
const { AssetClient } = require('../../dist/api/client');
const { spawnCli } = require('../emulator/support');
const { freePort } = require('./lib/nodered');
const r = require('./lib/support');

const COOKIE_VALUE = 'crash-cookie-6a0f93d2';
const COOKIE = `JSESSIONID=${COOKIE_VALUE}`;
const UPLOADS = 50;
const ROUNDS = r.pick(1, 5);
const KILL_AFTER_SUCCESSES = 10;
const SUB_ID = 'crash-subscription-01';
/** retryCount is at most 100 (client rule): 100 retries must outlast every round with the receiver down. */
const RETRY_DELAY = r.pick('500ms', '3s');

function kill9(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Sizes from 16 KiB to 6 MiB, so that many uploads are still in flight when the kill lands. */
function sizeOf(i) {
  return [16 * 1024, 200 * 1024, 1024 * 1024, 3 * 1024 * 1024, 6 * 1024 * 1024][i % 5] + i;
}

/** Every 10th upload is a slow stream (32 KiB per 50 ms, about 10 s for 6 MiB), so that some are surely mid-body at the kill. */
const isSlow = (i) => i % 10 === 9;

function slowStream(data) {
  let at = 0;
  return new Readable({
    read() {
      if (at >= data.length) { this.push(null); return; }
      const piece = data.subarray(at, at + 32 * 1024);
      at += piece.length;
      setTimeout(() => this.push(piece), 50);
    }
  });
}

/** A receiver on a fixed port that can be down (not listening) and brought up later. */
function receiverOn(port) {
  const calls = [];
  let server;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    calls,
    async up() {
      server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
          try { calls.push(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch { /* not JSON */ }
          res.end('ok');
        });
      });
      await new Promise((resolve, reject) => { server.once('error', reject); server.listen(port, '127.0.0.1', resolve); });
    },
    async down() {
      if (!server) return;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      server = undefined;
    },
    /** assetIds of every delivered 'added' entry. */
    deliveredAdded() {
      const ids = new Set();
      for (const call of calls) for (const e of (call.data && call.data.entry) || []) if (e.action === 'added') ids.add(e.assetId);
      return ids;
    }
  };
}

describe('reliability 3: kill -9 of the emulator during 50 concurrent uploads, restart on the same data folder', function () {
  this.timeout(r.pick(55000, 400000));
  let dataDir;
  let running;
  let receiver;
  let faults;

  before(async function () {
    dataDir = r.tempDir('dam-crash-');
    receiver = receiverOn(await freePort());
    faults = r.watchProcessFaults();
  });

  after(async function () {
    if (faults) faults.stop();
    if (running) await kill9(running.child);
    if (receiver) await receiver.down();
    r.rmDir(dataDir);
  });

  const startCli = (port) => spawnCli(['--port', String(port), '--data', dataDir, '--retry-delay', RETRY_DELAY, '--session', `${COOKIE_VALUE}:events,add`, '--quiet']);

  async function emulatorJson(base, urlPath) {
    const res = await fetch(base + urlPath, { headers: { Cookie: COOKIE } });
    return res.json();
  }

  it(`every acknowledged upload survives byte-identical, no failed one is visible, undelivered entries are delivered (${ROUNDS} round(s))`, async function () {
    running = await startCli(0);
    const port = Number(new URL(running.url).port);
    const setup = new AssetClient({ baseUrl: running.url, cookie: COOKIE, timeout: 10000 });
    // The receiver is down: every delivery fails and is retried (100 retries: more than the test needs).
    await setup.registerSubscription(SUB_ID, { callback: receiver.url, method: 'POST', retryCount: 100, watchPath: '* /crash' });
    setup.close();

    const totals = { uploads: 0, acknowledged: 0, failedMidBody: 0, inDoubt: 0, inDoubtVisible: 0, delivered: 0 };
    const allAcknowledged = new Map(); // fuid -> sha256 of every round

    for (let round = 1; round <= ROUNDS; round++) {
      const client = new AssetClient({ baseUrl: running.url, cookie: COOKIE, timeout: 20000 });
      const files = Array.from({ length: UPLOADS }, (_, i) => {
        const data = crypto.randomBytes(sizeOf(i));
        return { name: `r${round}-upload-${String(i).padStart(2, '0')}.bin`, data, hash: r.sha256(data), sent: 0 };
      });
      let successes = 0;
      let killing;
      const child = running.child;
      const outcomes = files.map((f, i) => client.upload({
        file: isSlow(i) ? { stream: slowStream(f.data), length: f.data.length } : { buffer: f.data }, name: f.name, destination: '/crash', wait: true,
        onProgress: (p) => { f.sent = p.bytes; }
      }).then((outcome) => {
        f.fuid = outcome.fuids[0];
        f.ok = true;
        successes++;
        // kill -9 part-way: as soon as enough uploads were acknowledged, the rest still in flight.
        if (successes === KILL_AFTER_SUCCESSES) killing = kill9(child);
      }, (err) => { f.ok = false; f.error = err; }));
      await Promise.all(outcomes);
      await (killing || kill9(child));
      client.close();

      const acknowledged = files.filter((f) => f.ok);
      const failed = files.filter((f) => !f.ok);
      acknowledged.length.should.be.aboveOrEqual(KILL_AFTER_SUCCESSES);
      failed.length.should.be.above(0, 'the kill landed while uploads were in flight');
      for (const f of failed) {
        f.error.kind.should.equal('network', `${f.name}: ${f.error.message}`);
      }

      // Restart on the same folder, on the same port when it is free again.
      running = await startCli(port).catch(() => startCli(0));
      const base = running.url;
      const client2 = new AssetClient({ baseUrl: base, cookie: COOKIE, timeout: 20000 });

      for (const f of acknowledged) {
        const { data } = await client2.downloadToBuffer({ fuid: f.fuid });
        r.sha256(data).should.equal(f.hash, `${f.name} (fuid ${f.fuid}) after the restart`);
        allAcknowledged.set(f.fuid, f.hash);
      }

      const byName = new Map(files.map((f) => [f.name, f]));
      const folder = await emulatorJson(base, `/emulator/assets?path=${encodeURIComponent('/crash')}`);
      folder.success.should.be.true();
      const visible = new Map();
      for (const fuid of folder.asset.children) {
        const a = (await emulatorJson(base, `/emulator/assets/${fuid}`)).asset;
        visible.set(a.name, a);
      }
      let inDoubt = 0;
      let inDoubtVisible = 0;
      for (const f of failed) {
        const wholeFileSent = f.sent === f.data.length;
        if (wholeFileSent) inDoubt++;
        const a = visible.get(f.name);
        if (!a) continue;
        wholeFileSent.should.be.true(`${f.name} failed after ${f.sent} of ${f.data.length} bytes but is visible (fuid ${a.fuid})`);
        const { data } = await client2.downloadToBuffer({ fuid: a.fuid });
        r.sha256(data).should.equal(f.hash, `${f.name}: an upload in doubt is visible, so it must be complete`);
        inDoubtVisible++;
        allAcknowledged.set(a.fuid, f.hash);
      }
      for (const [name, a] of visible) {
        if (name.startsWith(`r${round}-`)) (byName.has(name)).should.be.true(`unknown asset ${name} in /crash`);
        else allAcknowledged.has(a.fuid).should.be.true(`${name} (fuid ${a.fuid}) of an earlier round is not one that succeeded`);
      }
      // Every acknowledged upload of every round so far is still there.
      for (const fuid of allAcknowledged.keys()) {
        const a = (await emulatorJson(base, `/emulator/assets/${fuid}`)).asset;
        (a && !a.deleted).should.be.true(`fuid ${fuid} missing after round ${round}`);
      }

      // The subscription survived with its fields.
      const sub = await client2.getSubscription(SUB_ID);
      sub.subscription.callback.should.equal(receiver.url);
      sub.subscription.retryCount.should.equal(100);

      (failed.length - inDoubt).should.be.above(0, 'some uploads were cut mid-body (the slow ones at least)');
      totals.uploads += files.length;
      totals.acknowledged += acknowledged.length;
      totals.failedMidBody += failed.length - inDoubt;
      totals.inDoubt += inDoubt;
      totals.inDoubtVisible += inDoubtVisible;

      if (round === ROUNDS) {
        // Undelivered entries: the receiver was down through every crash; bring it up now.
        const before = (await emulatorJson(base, `/emulator/deliveries?subscription=${SUB_ID}`)).deliveries;
        before.some((d) => d.attempts > 0 && d.state !== 'succeeded').should.be.true('deliveries were failing before the receiver came up');
        await receiver.up();
        await r.waitFor('every acknowledged upload delivered as an added entry', () => {
          const delivered = receiver.deliveredAdded();
          return [...allAcknowledged.keys()].every((fuid) => delivered.has(fuid));
        }, 30000, 100);
        totals.delivered = receiver.deliveredAdded().size;
        const after = (await emulatorJson(base, `/emulator/deliveries?subscription=${SUB_ID}`)).deliveries;
        after.filter((d) => d.state === 'permanently-failed').should.eql([]);
      }
      client2.close(); // the next round crashes the restarted process again
    }
    faults.take().should.eql([]);
    r.figure(`crash/restart: ${ROUNDS} kill -9 round(s), ${totals.uploads} uploads, ${totals.acknowledged} acknowledged and byte-identical after restart, ` +
      `${totals.failedMidBody} cut mid-body and absent, ${totals.inDoubt} in doubt (file sent, answer lost; ${totals.inDoubtVisible} visible and complete), ` +
      `${totals.delivered} added entries delivered after the restart`);
  });
});
