'use strict';
// Durability (issue 2): kill -9 the dam-emulator while uploads are in flight, restart it on the same
// data folder: everything acknowledged is there, nothing half-received is visible, subscriptions
// survive and their undelivered entries are delivered after the restart.
require('should');
const fs = require('fs');
const http = require('http');
const path = require('path');
const crypto = require('crypto');
const { tmpDir, rmDir, spawnCli, request, uploadFile, multipart, startReceiver, waitFor } = require('./support');

const sha = b => crypto.createHash('sha256').update(b).digest('hex');

/** Sends all but the last bytes of an upload and keeps the connection open: a half-received upload. */
function halfUpload(url, name, size) {
  const { body, contentType } = multipart([{ name: 'destination', value: '/half' }, { name: 'wait', value: 'true' }, { name: 'file', filename: name, data: crypto.randomBytes(size) }]);
  const u = new URL(url);
  const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path: '/review/api/asset/upload', agent: false, headers: { Cookie: 'JSESSIONID=local-dev', 'Content-Type': contentType, 'Content-Length': body.length } });
  req.on('error', () => undefined);
  return new Promise(resolve => req.write(body.subarray(0, body.length - 100), () => resolve(req)));
}

describe('emulator restart after kill -9', function () {
  this.timeout(60000);
  let dir;
  let cli;
  let receiver;
  let receiverUp = false;
  before(async () => {
    dir = tmpDir('dam-emu-restart-');
    receiver = await startReceiver(() => (receiverUp ? 200 : 503));
  });
  after(async () => {
    if (cli && cli.child.exitCode === null) { cli.child.kill('SIGKILL'); await cli.exited; }
    await receiver.close();
    rmDir(dir);
  });

  it('keeps every acknowledged change and shows nothing half-received', async () => {
    const args = ['--port', '0', '--data', dir, '--retry-delay', '300ms', '--quiet'];
    cli = await spawnCli(args);
    const url = cli.url;
    const subId = 'restart-sub-0001';
    (await request(url, 'POST', `/review/api/events/assets/subscribe/${subId}`, {
      form: { callback: `${receiver.url}/hook`, method: 'POST', retryCount: '100', watchPath: '* /keep' }
    })).json.success.should.equal(true);

    // Acknowledged uploads (wait=true), with their content hashes.
    const acked = [];
    for (let i = 0; i < 5; i++) {
      const data = crypto.randomBytes(100000 + i);
      const r = await uploadFile(url, '/keep', `file-${i}.bin`, data);
      r.json.success.should.equal(true);
      acked.push({ fuid: r.json.data.fuids[0], rrn: r.json.data.rrn, sha: sha(data), name: `file-${i}.bin` });
    }
    // A second revision, a metadata change and a delete, all acknowledged.
    const v2 = crypto.randomBytes(5000);
    const rev = await uploadFile(url, '/keep', 'file-0.bin', v2);
    rev.json.data.fuids[0].should.equal(acked[0].fuid);
    const meta = await request(url, 'PUT', `/emulator/assets/${acked[1].fuid}/metadata`, { body: JSON.stringify({ City: 'SFO' }) });
    meta.json.success.should.equal(true);
    (await request(url, 'DELETE', `/emulator/assets/${acked[2].fuid}`)).json.success.should.equal(true);

    // Half-received uploads in flight at the kill.
    const halves = [];
    for (let i = 0; i < 3; i++) halves.push(await halfUpload(url, `half-${i}.bin`, 3 * 1024 * 1024));

    // A burst of concurrent uploads, some answered before the kill and some not; and jobs (wait=false).
    const burstData = Array.from({ length: 12 }, () => crypto.randomBytes(1024 * 1024));
    const burstAcked = [];
    const burst = burstData.map((data, i) => uploadFile(url, '/burst', `b-${i}.bin`, data, { wait: i % 2 ? 'true' : 'false' }).then(r => {
      if (r.json && r.json.success) burstAcked.push({ i, json: r.json });
    }, () => undefined));
    await waitFor(() => burstAcked.length >= 3, { timeoutMs: 20000, stepMs: 1 });
    cli.child.kill('SIGKILL');
    const { signal } = await cli.exited;
    signal.should.equal('SIGKILL');
    await Promise.all(burst);
    for (const h of halves) h.destroy();
    if (process.env.DAM_TEST_VERBOSE) console.log(`      acknowledged before the kill: ${burstAcked.length} of ${burstData.length} burst uploads (${burstAcked.filter(b => b.json.jobId).length} as jobs)`);

    // Restart on the same data folder; the receiver now accepts callbacks.
    receiverUp = true;
    cli = await spawnCli(args);
    const url2 = cli.url;
    const get = p => request(url2, 'GET', p);

    // Acknowledged content is byte-identical.
    (await get(`/review/api/asset/download?fuid=${acked[0].fuid}`)).body.equals(v2).should.be.true();
    (await get(`/review/api/asset/download?fuid=${acked[0].fuid}&rrn=${acked[0].rrn}`)).body.length.should.equal(100000);
    for (const a of acked.slice(1)) {
      const r = await get(`/review/api/asset/download?fuid=${a.fuid}&rrn=${a.rrn}`);
      sha(r.body).should.equal(a.sha, a.name);
    }
    (await get(`/emulator/assets/${acked[1].fuid}`)).json.asset.metadata.should.eql({ City: 'SFO' });
    (await get(`/emulator/assets/${acked[2].fuid}`)).json.asset.deleted.should.equal(true);
    (await get(`/review/api/events/assets/subscribe/${subId}`)).json.subscription.watchPath.should.eql(['* /keep']);

    // Acknowledged burst uploads: wait=true ones are there; wait=false jobs finish after the restart.
    for (const { i, json } of burstAcked) {
      let fuid;
      if (json.jobId) {
        const job = await waitFor(async () => { const j = (await get(`/emulator/jobs/${json.jobId}`)).json.job; return j.state === 'done' && j; });
        fuid = job.result.fuids[0];
      } else fuid = json.data.fuids[0];
      sha((await get(`/review/api/asset/download?fuid=${fuid}`)).body).should.equal(sha(burstData[i]), `burst ${i}`);
    }

    // Nothing half-received is visible; no temporary file is left; every blob belongs to a revision.
    (await get('/emulator/assets?path=/half')).json.success.should.equal(false);
    fs.readdirSync(path.join(dir, 'tmp')).should.eql([]);
    const blobsReferenced = new Set();
    for (let fuid = 1, misses = 0; misses < 20; fuid++) {
      const r = (await get(`/emulator/assets/${fuid}`)).json;
      if (!r.success) { misses++; continue; }
      misses = 0;
      const revs = r.asset.revisions.filter(x => x.action !== 'deleted' && x.changedMetadataKeys.length === 0 && r.asset.kind === 'file');
      for (const x of revs) blobsReferenced.add(`${fuid}@${x.rrn}`);
    }
    const queued = burstAcked.length; // an unfinished job keeps its file until it runs; all have run by now
    queued.should.be.above(0);
    fs.readdirSync(path.join(dir, 'blobs')).length.should.equal(blobsReferenced.size);

    // Entries that could not be delivered before the kill are delivered after it.
    await waitFor(() => {
      const seen = receiver.calls.filter(c => c.url === '/hook').flatMap(c => JSON.parse(c.body).data.entry);
      const has = (fuid, action) => seen.some(e => e.assetId === fuid && e.action === action);
      return acked.every(a => has(a.fuid, 'added')) && has(acked[0].fuid, 'modified') && has(acked[1].fuid, 'modified') && has(acked[2].fuid, 'deleted');
    }, { timeoutMs: 20000 });

    // The restarted emulator takes new work.
    (await uploadFile(url2, '/keep', 'after.txt', 'after')).json.success.should.equal(true);
    cli.child.kill('SIGTERM');
    (await cli.exited).code.should.equal(0);
  });
});
