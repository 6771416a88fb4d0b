'use strict';
// A journal larger than 2 GiB (as one written before the inbox's byte bound could grow: 200
// callbacks of a 20 MB entry made 4 GB) loads: the file is read in chunks, one record at a time.
// Before, fsp.readFile refused it ("File size ... is greater than 2 GiB"): the inbox could not be
// opened, every callback got 503 for ever and the stored entries were lost unless the file was
// deleted. Real files, and a real Node-RED runtime (test helper) serving the node over real HTTP
// on 127.0.0.1.
// Default run: a file made large cheaply: five callback records of 20 MB around a sparse run of
// 2.1 GiB of zeros (one damaged line, longer than a string may be: skipped, not held in memory).
// INBOX_LARGE=1 or RELIABILITY_LONG=1: 111 real records, 2.2 GB written (about a minute; needs
// 2.3 GB free in the temp directory, else skipped).
require('should');
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
const http = require('http');
const helper = require('node-red-node-test-helper');
const eventIn = require('../../nodes/asset-event-in.js');
const eventAck = require('../../nodes/asset-event-ack.js');
const { encodeRecord, readJournal } = require('../../dist/events/inbox');
const { recordLine } = require('../../dist/events/inbox/journal-file');
const { inboxFile } = require('../../dist/nodes/asset-event-in/delivery');

helper.init(require.resolve('node-red'));

const TWO_GIB = 2 ** 31;
const BLOB = 20e6; // as in the audit's repro
const REAL = process.env.INBOX_LARGE === '1' || process.env.RELIABILITY_LONG === '1';
const RECORDS = REAL ? Math.ceil(TWO_GIB / BLOB) + 3 : 5; // 111 callbacks: 2.22 GB of records
/** The sparse run of zeros after the third record (default run): past 2 GiB with the records, and past MAX_STRING_LENGTH. */
const GAP = REAL ? 0 : TWO_GIB + 2 ** 27;
const until = async (check, what) => {
  for (let i = 0; i < 3000; i++) { if (check()) return; await new Promise((r) => setTimeout(r, 10)); }
  throw new Error(`timed out waiting for ${what}`);
};

/**
 * Writes `file`: RECORDS callback records of one BLOB-character entry each (assets 1..RECORDS),
 * each acknowledged by the next record but the last two; then half a record (a torn tail). With a
 * GAP, a sparse run of zeros and a line break after the third record's acknowledgement.
 */
function writeBigJournal(file) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const blob = 'x'.repeat(BLOB);
  const fd = fs.openSync(file, 'a'); // appends go to the end, also after the file is extended
  try {
    const at = new Date().toISOString();
    for (let id = 1; id <= RECORDS; id++) {
      // As encodeRecord({ c, k, at, v, b: body }) writes it, without stringifying 20 MB each time.
      const json = `{"c":${id},"k":[${id}],"at":"${at}","v":[1],"b":{"success":true,"data":{"entry":[{"assetId":${id},"rrn":1,"blob":"${blob}"}]}}}`;
      fs.writeSync(fd, recordLine(json));
      if (id <= RECORDS - 2) fs.writeSync(fd, encodeRecord({ d: [], n: [], a: [id] }));
      if (id === 3 && GAP) {
        fs.ftruncateSync(fd, fs.fstatSync(fd).size + GAP); // zeros, without writing them
        fs.writeSync(fd, '\n');
      }
    }
    const torn = encodeRecord({ c: RECORDS + 1, k: [RECORDS + 1], at, b: { success: true, data: { entry: [{ assetId: RECORDS + 1 }] } } });
    fs.writeSync(fd, torn.slice(0, 40));
    return 40;
  } finally {
    fs.closeSync(fd);
  }
}

describe('inbox journal larger than 2 GiB', function () {
  this.timeout(300000);
  let userDir;
  let file;
  let tornBytes;
  let skip = false;

  before(function () {
    const { bavail, bsize } = fs.statfsSync(os.tmpdir());
    if (bavail * bsize < (REAL ? 4e9 : 1e9)) { skip = true; this.skip(); }
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-inbox-large-'));
    file = inboxFile(userDir, 'n1');
    tornBytes = writeBigJournal(file);
  });
  after(() => { if (!skip) fs.rmSync(userDir, { recursive: true, force: true }); });

  it('is larger than 2 GiB: fs.readFile, as the load used to, refuses it', async function () {
    fs.statSync(file).size.should.be.above(TWO_GIB);
    const err = await fsp.readFile(file).then(() => undefined, (e) => e);
    err.code.should.equal('ERR_FS_FILE_TOO_LARGE');
  });

  it('readJournal hands on every whole record, one at a time (memory about one record, not the file), and finds the torn tail', async function () {
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    let stores = 0;
    let acks = 0;
    const bytes = [];
    const scan = await readJournal(file, (record, size) => {
      if (record.c !== undefined) { stores++; bytes.push(size); } else acks++;
      peak = Math.max(peak, process.memoryUsage().rss);
    });
    stores.should.equal(RECORDS);
    acks.should.equal(RECORDS - 2);
    scan.records.should.equal(2 * RECORDS - 2);
    scan.corrupt.should.equal(GAP ? 1 : 0); // the run of zeros
    scan.tornBytes.should.equal(tornBytes);
    scan.validBytes.should.equal(fs.statSync(file).size - tornBytes);
    bytes.every((b) => b > BLOB && b < BLOB + 200).should.be.true();
    // A few records' worth (a 20 MB line, its text and its parse), far from the file's 2.2 GB.
    (peak - rssBefore).should.be.below(400 * 2 ** 20);
  });

  it('asset-event-in (real Node-RED) opens it: the entries not acknowledged are delivered, the torn tail is cut off, and the inbox, above Inbox size, answers 503 until they are acknowledged', async function () {
    helper.settings({ userDir });
    await helper.startServer();
    let server;
    try {
      let app;
      const flow = [
        { id: 'f1', type: 'tab' },
        { id: 'n1', z: 'f1', type: 'asset-event-in', path: '/dam/large', delivery: 'atLeastOnce', inboxMaxMB: 30, outputs: 2, wires: [['w1'], []], x: 1, y: 1 },
        { id: 'w1', z: 'f1', type: 'helper', x: 1, y: 1 },
        { id: 'a1', z: 'f1', type: 'asset-event-ack', action: 'ack', wires: [['done1']], x: 1, y: 1 },
        { id: 'done1', z: 'f1', type: 'helper', x: 1, y: 1 }
      ];
      await helper.load([(RED) => { app = RED.httpNode; return eventIn(RED); }, eventAck], flow);
      const seen = [];
      const acked = [];
      helper.getNode('w1').on('input', (msg) => seen.push(msg));
      helper.getNode('done1').on('input', (msg) => acked.push(msg));
      server = http.createServer(app);
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const post = (assetId) => fetch(`http://127.0.0.1:${server.address().port}/dam/large`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ success: true, data: { entry: [{ assetId, rrn: 1 }] } })
      });
      await until(() => seen.length === 2, 'the two entries not acknowledged');
      seen.map((m) => m.payload.assetId).should.eql([RECORDS - 1, RECORDS]);
      seen.every((m) => m.payload.blob.length === BLOB).should.be.true();
      const n1 = helper.getNode('n1');
      n1.warn.args.some((a) => /cut off by a crash \(40 bytes\)/.test(String(a[0]))).should.be.true();
      n1.warn.args.some((a) => /cannot be opened/.test(String(a[0]))).should.be.false();
      if (GAP) n1.warn.args.some((a) => /1 damaged records skipped/.test(String(a[0]))).should.be.true();
      // Cut back to the last whole record (then delivery counts appended): the half record is gone.
      const size = fs.statSync(file).size;
      const tail = Buffer.alloc(Math.min(4096, size));
      const fd = fs.openSync(file, 'r');
      fs.readSync(fd, tail, 0, tail.length, size - tail.length);
      fs.closeSync(fd);
      tail.toString().endsWith('\n').should.be.true();
      tail.toString().should.not.containEql(`"c":${RECORDS + 1}`);
      (await post(500)).status.should.equal(503); // 40 MB held, Inbox size 30 MB
      for (const m of seen) helper.getNode('a1').receive(m);
      await until(() => acked.length === 2, 'both acknowledged');
      (await post(500)).status.should.equal(200);
      await until(() => seen.length === 3, 'the new entry');
    } finally {
      if (server) await new Promise((r) => server.close(r));
      await helper.unload();
      await helper.stopServer();
      helper.settings({});
    }
  });
});
