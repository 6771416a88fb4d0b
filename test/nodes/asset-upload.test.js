'use strict';
require('should');
const fs = require('fs');
const path = require('path');
const { Readable } = require('stream');
const yazl = require('yazl');
const s = require('./nodes-support');
const { helper } = s;

/** A Readable of `total` bytes made on demand (never whole in memory). */
function generated(total, chunk = 64 * 1024) {
  let sent = 0;
  const block = Buffer.alloc(chunk, 0x61);
  return new Readable({
    read() {
      if (sent >= total) { this.push(null); return; }
      const n = Math.min(chunk, total - sent);
      sent += n;
      this.push(n === chunk ? block : block.subarray(0, n));
    }
  });
}

function zipOf(files) {
  return new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name);
    zip.end();
    const parts = [];
    zip.outputStream.on('data', d => parts.push(d)).on('end', () => resolve(Buffer.concat(parts))).on('error', reject);
  });
}

describe('asset-upload node (against the emulator)', function () {
  let emulator;
  let tmp;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    tmp = s.tempDir();
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
    tmp.cleanup();
  });
  afterEach(() => helper.unload());

  const asset = fuid => s.emulatorGet(`${emulator.url}/emulator/assets/${fuid}`).then(r => r.body.asset);
  const base = { destination: '/inbox', destinationType: 'str', wait: 'true', waitType: 'bool' };

  it('streams msg.filename from disk and sets payload, fuid, fuids, rrn', async function () {
    const file = path.join(tmp.dir, 'report.txt');
    fs.writeFileSync(file, 'hello asset server\n'.repeat(1000));
    await s.load(s.flow('asset-upload', base, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const msg = await s.run({ filename: file });
    msg.payload.success.should.be.true();
    msg.payload.length.should.equal(fs.statSync(file).size);
    msg.payload.data.bid.should.equal(1);
    msg.fuids.should.be.an.Array().and.have.length(1);
    msg.fuid.should.equal(msg.fuids[0]);
    msg.rrn.should.equal(msg.payload.data.rrn);
    msg.should.not.have.property('jobId');
    const record = await asset(msg.fuid);
    JSON.stringify(record).should.containEql('/inbox/report.txt');
    statuses[statuses.length - 1].should.containDeep({ fill: 'green', shape: 'dot' });
  });

  it('sends msg.payload as a Buffer, a string or a Readable stream', async function () {
    await s.load(s.flow('asset-upload', base, { baseUrl: emulator.url }));
    const fromBuffer = await s.run({ payload: Buffer.from([1, 2, 3, 4]) });
    fromBuffer.payload.length.should.equal(4);
    const fromString = await s.run({ payload: 'ünïcode text', name: 'text.txt' });
    fromString.payload.length.should.equal(Buffer.byteLength('ünïcode text'));
    const fromStream = await s.run({ payload: generated(300000), name: 'stream.bin' });
    fromStream.payload.length.should.equal(300000);
    JSON.stringify(await asset(fromStream.fuid)).should.containEql('/inbox/stream.bin');
  });

  it('name, destination, collectionId set in the node win over msg.name, msg.destination, msg.collectionId', async function () {
    await s.load(s.flow('asset-upload', { ...base, assetName: 'editor-name.txt', collectionId: '3', collectionIdType: 'num' }, { baseUrl: emulator.url }));
    const msg = await s.run({ payload: 'x', name: 'msg-name.txt', destination: '/other/place', collectionId: '7' });
    const record = await asset(msg.fuid);
    JSON.stringify(record).should.containEql('/inbox/editor-name.txt');
    record.collectionId.should.equal(3);
  });

  it('blank fields (flows of earlier versions) read msg.name, msg.destination, msg.collectionId', async function () {
    await s.load(s.flow('asset-upload', { ...base, destination: '' }, { baseUrl: emulator.url }));
    const msg = await s.run({ payload: 'x', name: 'msg-name.txt', destination: '/other/place', collectionId: '7' });
    const record = await asset(msg.fuid);
    JSON.stringify(record).should.containEql('/other/place/msg-name.txt');
    record.collectionId.should.equal(7);
  });

  it('msg.destinationFuid targets a folder by id', async function () {
    await s.load(s.flow('asset-upload', { ...base, destination: '' }, { baseUrl: emulator.url }));
    const first = await s.run({ payload: 'a', name: 'first.txt', destination: '/by-fuid' });
    const folderFuid = (await asset(first.fuid)).parentFuid;
    folderFuid.should.be.a.Number();
    const second = await s.run({ payload: 'b', name: 'second.txt', destinationFuid: String(folderFuid) });
    JSON.stringify(await asset(second.fuid)).should.containEql('/by-fuid/second.txt');
  });

  it('msg.wait false (Wait blank) answers with msg.jobId; msg.waitInMinutes is accepted', async function () {
    await s.load(s.flow('asset-upload', { ...base, wait: '' }, { baseUrl: emulator.url }));
    const msg = await s.run({ payload: 'later', name: 'job.txt', wait: false });
    msg.jobId.should.be.a.String().and.not.be.empty();
    msg.payload.success.should.be.true();
    const waited = await s.run({ payload: 'now', name: 'waited.txt', wait: 'true', waitInMinutes: 2 });
    waited.fuids.should.have.length(1);
    waited.should.not.have.property('jobId');
    // a number, as in the spec: a fraction of a minute is sent as given
    (await s.run({ payload: 'soon', name: 'half.txt', wait: 'true', waitInMinutes: '1.5' })).fuids.should.have.length(1);
  });

  it('msg.expandZip chooses between expanding a zip and storing it whole', async function () {
    const zip = await zipOf({ 'a.txt': 'A', 'sub/b.txt': 'B' });
    await s.load(s.flow('asset-upload', { ...base, expandZip: '', expandZipType: 'bool' }, { baseUrl: emulator.url }));
    const expanded = await s.run({ payload: zip, name: 'bundle.zip', destination: '/zips' });
    expanded.fuids.length.should.equal(2);
    expanded.fuid.should.equal(expanded.fuids[0]);
    const whole = await s.run({ payload: zip, name: 'bundle.zip', destination: '/zips-whole', expandZip: false });
    whole.fuids.length.should.equal(1);
  });

  it('evaluates TypedInputs: destination from env, wait from flow context', async function () {
    process.env.DAM_TEST_DEST = '/from-env';
    try {
      await s.load(s.flow('asset-upload', { destination: 'DAM_TEST_DEST', destinationType: 'env', wait: 'waitFlag', waitType: 'flow' }, { baseUrl: emulator.url }));
      helper.getNode('n1').context().flow.set('waitFlag', true);
      const msg = await s.run({ payload: 'z', name: 'env.txt' });
      JSON.stringify(await asset(msg.fuid)).should.containEql('/from-env/env.txt');
    } finally {
      delete process.env.DAM_TEST_DEST;
    }
  });

  it('shows percent while sending, and the count when several are in flight (Parallel 3)', async function () {
    const big = path.join(tmp.dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(8 * 1024 * 1024, 1));
    await s.load(s.flow('asset-upload', { ...base, maxInFlight: '3' }, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    await s.run({ filename: big, name: 'big.bin' });
    statuses.map(st => st.text).filter(t => /^\d+%$/.test(t)).length.should.be.above(0);

    statuses.length = 0;
    let received = 0;
    const all = new Promise(resolve => helper.getNode('out').on('input', () => { if (++received === 3) resolve(); }));
    for (let i = 0; i < 3; i++) helper.getNode('n1').receive({ filename: big, name: `big-${i}.bin` });
    await all;
    statuses.map(st => st.text).should.containEql('3 running');
    statuses[statuses.length - 1].fill.should.equal('green');
  });

  describe('invalid input is refused with an error naming the field', function () {
    const cases = [
      ['no file and an object payload', {}, { payload: { not: 'a file' } }, /msg\.payload/],
      ['no destination at all', { destination: '' }, { payload: 'x' }, /destination/],
      ['a destinationFuid that is not a number', {}, { payload: 'x', destinationFuid: 'abc' }, /msg\.destinationFuid/],
      ['a wait that is not a boolean', { wait: '' }, { payload: 'x', wait: 'maybe' }, /msg\.wait/],
      ['an expandZip that is not a boolean', {}, { payload: 'x', expandZip: 3 }, /msg\.expandZip/],
      ['a waitInMinutes that is not a number', {}, { payload: 'x', waitInMinutes: 'soon' }, /msg\.waitInMinutes/],
      ['a msg.filename that does not exist', {}, { filename: '/nonexistent/dir/file.bin' }, /file|ENOENT/i]
    ];
    for (const [title, props, msg, field] of cases) {
      it(title, async function () {
        await s.load(s.flow('asset-upload', { ...base, ...props }, { baseUrl: emulator.url }));
        const caught = await s.runFailing(msg);
        caught.error.message.should.match(field);
        if (caught.assetError && caught.assetError.kind === 'invalid-input') caught.assetError.field.should.match(field);
      });
    }

    it('destroys a stream payload it refuses', async function () {
      await s.load(s.flow('asset-upload', { ...base, destination: '' }, { baseUrl: emulator.url }));
      const stream = generated(1000);
      await s.runFailing({ payload: stream });
      stream.destroyed.should.be.true();
    });
  });

  it('aborts a large upload on close: closes within 5 s, no unhandled rejection, nothing stored, no socket left', async function () {
    this.timeout(30000);
    const socketsBefore = s.openSockets();
    const unhandled = await s.watchUnhandled(async () => {
      await s.load(s.flow('asset-upload', { ...base, assetName: 'huge.bin' }, { baseUrl: emulator.url }));
      const n1 = helper.getNode('n1');
      // Wait until the transfer is well under way (about 1 MB sent).
      const progressed = new Promise(resolve => n1.on('call:status', c => { if (/ MB$/.test(c.args[0].text || '')) resolve(); }));
      let completed = false;
      helper.getNode('out').on('input', () => { completed = true; });
      helper.getNode('caught').on('input', () => { completed = true; });
      n1.receive({ payload: generated(4 * 1024 * 1024 * 1024) }); // 4 GiB, made on demand
      await progressed;
      // The helper stops spying on logs before it closes the nodes: record warnings here.
      const warnings = [];
      n1.warn = text => warnings.push(text);
      const started = Date.now();
      await helper.unload();
      (Date.now() - started).should.be.below(5000);
      completed.should.be.false();
      warnings.length.should.equal(1);
      warnings[0].should.match(/^aborted 1 request\(s\) in flight on close: msg\._msgid \w+$/);
    });
    unhandled.should.eql([]);
    await s.delay(300);
    s.openSockets().should.be.belowOrEqual(socketsBefore);
    // Had the aborted upload been stored, this would be a second revision of /inbox/huge.bin.
    await s.load(s.flow('asset-upload', { ...base, assetName: 'huge.bin' }, { baseUrl: emulator.url }));
    const after = await s.run({ payload: 'small' });
    (await asset(after.fuid)).revisions.should.have.length(1);
  });

  s.describeFailures('asset-upload', async () => ({
    emulator, props: base, msg: () => ({ payload: 'x', name: 'denied.txt' })
  }));
});
