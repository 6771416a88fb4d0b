'use strict';
require('should');
const fs = require('fs');
const path = require('path');
const { Readable } = require('stream');
const s = require('./nodes-support');
const { helper } = s;
const { AssetClient } = require('../../dist/api/client');

describe('asset-download node (against the emulator)', function () {
  let emulator;
  let client;
  let tmp;
  let first;   // { fuid, rrn } of revision 1 of /dl/doc.txt
  let second;  // revision 2 of the same asset
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    tmp = s.tempDir();
    client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE });
    const one = await client.upload({ file: { buffer: Buffer.from('revision one') }, name: 'doc.txt', destination: '/dl', wait: true });
    const two = await client.upload({ file: { buffer: Buffer.from('revision two, longer') }, name: 'doc.txt', destination: '/dl', wait: true });
    first = { fuid: one.fuids[0], rrn: one.rrn };
    second = { fuid: two.fuids[0], rrn: two.rrn };
    second.fuid.should.equal(first.fuid);
  });
  after(async function () {
    if (client) client.close();
    if (emulator) await emulator.close();
    await helper.stopServer();
    tmp.cleanup();
  });
  afterEach(() => helper.unload());

  it('downloads the latest revision into a Buffer with contentType, headers and the server file name', async function () {
    await s.load(s.flow('asset-download', {}, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const msg = await s.run({ fuid: first.fuid });
    Buffer.isBuffer(msg.payload).should.be.true();
    msg.payload.toString().should.equal('revision two, longer');
    msg.contentType.should.be.a.String();
    msg.headers.should.be.an.Object();
    msg.headers['content-length'].should.equal(String(msg.payload.length));
    msg.assetFilename.should.equal('doc.txt');
    statuses[statuses.length - 1].should.containDeep({ fill: 'green', shape: 'dot' });
  });

  it('a blank fuid and rrn (flows of earlier versions) read msg.fuid and msg.rrn', async function () {
    await s.load(s.flow('asset-download', {}, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: String(first.fuid), rrn: first.rrn });
    msg.payload.toString().should.equal('revision one');
  });

  it('a fuid and rrn set in the node win over msg.fuid and msg.rrn', async function () {
    await s.load(s.flow('asset-download', { fuid: String(first.fuid), fuidType: 'num', rrn: String(first.rrn), rrnType: 'num' }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: 999999, rrn: -1 });
    msg.payload.toString().should.equal('revision one');
  });

  it('uses the editor fuid and rrn when the msg has none (TypedInput num and msg)', async function () {
    await s.load(s.flow('asset-download', { fuid: String(first.fuid), fuidType: 'num', rrn: 'pick.rrn', rrnType: 'msg' }, { baseUrl: emulator.url }));
    const msg = await s.run({ pick: { rrn: first.rrn } });
    msg.payload.toString().should.equal('revision one');
  });

  it('passes msg.collectionId', async function () {
    await s.load(s.flow('asset-download', {}, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: first.fuid, collectionId: 0 });
    msg.payload.toString().should.equal('revision two, longer');
  });

  it('file mode: streams to the editor path, creating folders; msg.filename does not replace it', async function () {
    const target = path.join(tmp.dir, 'new', 'deeper', 'doc.txt');
    await s.load(s.flow('asset-download', { output: 'file', filename: target, filenameType: 'str' }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: first.fuid });
    msg.filename.should.equal(target);
    msg.payload.should.equal(target);
    fs.readFileSync(target, 'utf8').should.equal('revision two, longer');
    msg.assetFilename.should.equal('doc.txt');
    fs.readdirSync(path.dirname(target)).should.eql(['doc.txt']); // no temporary file left

    const other = path.join(tmp.dir, 'override', 'first.txt');
    const kept = await s.run({ fuid: first.fuid, rrn: first.rrn, filename: other });
    kept.filename.should.equal(target);
    fs.readFileSync(target, 'utf8').should.equal('revision one');
    fs.existsSync(other).should.be.false();
  });

  it('file mode: a File pointing at msg.target writes where the msg says', async function () {
    await s.load(s.flow('asset-download', { output: 'file', filename: 'target', filenameType: 'msg' }, { baseUrl: emulator.url }));
    const where = path.join(tmp.dir, 'from-msg', 'one.txt');
    const msg = await s.run({ fuid: first.fuid, rrn: first.rrn, target: where });
    msg.filename.should.equal(where);
    fs.readFileSync(where, 'utf8').should.equal('revision one');
  });

  it('file mode with a blank File (an old flow) fails saying what to set, and never writes to msg.filename', async function () {
    const uploaded = path.join(tmp.dir, 'the-users-own.txt');
    fs.writeFileSync(uploaded, 'my own file');
    await s.load(s.flow('asset-download', { output: 'file', filename: '', filenameType: 'str' }, { baseUrl: emulator.url }));
    const caught = await s.runFailing({ fuid: first.fuid, filename: uploaded });
    caught.assetError.kind.should.equal('invalid-input');
    caught.assetError.field.should.equal('filename');
    caught.error.message.should.match(/set File in this node/);
    fs.readFileSync(uploaded, 'utf8').should.equal('my own file');
  });

  it('file mode: a path ending in / saves under the server file name in that folder', async function () {
    const folder = path.join(tmp.dir, 'into-folder') + path.sep;
    await s.load(s.flow('asset-download', { output: 'file', filename: folder }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: first.fuid });
    msg.filename.should.equal(path.join(folder, 'doc.txt'));
    fs.readFileSync(msg.filename, 'utf8').should.equal('revision two, longer');
  });

  it('file mode into a folder: If it exists keeps both by default, fail reaches Catch, replace replaces (issue 22)', async function () {
    const folder = path.join(tmp.dir, 'if-exists') + path.sep;
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, 'doc.txt'), 'mine');
    await s.load(s.flow('asset-download', { output: 'file', filename: folder }, { baseUrl: emulator.url })); // saved before the setting existed
    (await s.run({ fuid: first.fuid })).filename.should.equal(path.join(folder, 'doc (1).txt'));
    await helper.unload();
    await s.load(s.flow('asset-download', { output: 'file', filename: folder, ifExists: 'fail' }, { baseUrl: emulator.url }));
    const caught = await s.runFailing({ fuid: first.fuid });
    caught.assetError.kind.should.equal('invalid-input');
    caught.error.message.should.match(/exists and was left as it is \(asset-download "If it exists": fail, option ifExists\)/);
    fs.readFileSync(path.join(folder, 'doc.txt'), 'utf8').should.equal('mine');
    await helper.unload();
    await s.load(s.flow('asset-download', { output: 'file', filename: folder, ifExists: 'replace' }, { baseUrl: emulator.url }));
    (await s.run({ fuid: first.fuid })).filename.should.equal(path.join(folder, 'doc.txt'));
    fs.readFileSync(path.join(folder, 'doc.txt'), 'utf8').should.equal('revision two, longer');
  });

  it('file mode resolves relative paths against fileWorkingDirectory', async function () {
    helper.settings({ fileWorkingDirectory: tmp.dir });
    try {
      await s.load(s.flow('asset-download', { output: 'file', filename: 'relative/out.txt' }, { baseUrl: emulator.url }));
      const msg = await s.run({ fuid: first.fuid });
      msg.filename.should.equal(path.join(tmp.dir, 'relative', 'out.txt'));
      fs.existsSync(msg.filename).should.be.true();
    } finally {
      helper.settings({ fileWorkingDirectory: undefined });
    }
  });

  it('an unknown fuid is a rejected error, and file mode leaves no file', async function () {
    const target = path.join(tmp.dir, 'missing', 'never.txt');
    await s.load(s.flow('asset-download', { output: 'file', filename: target }, { baseUrl: emulator.url }));
    const caught = await s.runFailing({ fuid: 987654 });
    caught.assetError.kind.should.equal('rejected');
    fs.existsSync(target).should.be.false();
  });

  it('Buffer mode: a file above Max size is a too-large error naming file mode; file mode has no limit', async function () {
    await s.load(s.flow('asset-download', { maxSizeMB: '0.00001' }, { baseUrl: emulator.url })); // 10 bytes
    const caught = await s.runFailing({ fuid: first.fuid });
    caught.assetError.kind.should.equal('too-large');
    caught.error.message.should.match(/above the limit of 10 bytes .*file mode/);
    await helper.unload();
    const target = path.join(tmp.dir, 'unlimited', 'doc.txt');
    await s.load(s.flow('asset-download', { maxSizeMB: '0.00001', output: 'file', filename: target }, { baseUrl: emulator.url }));
    await s.run({ fuid: first.fuid });
    fs.readFileSync(target, 'utf8').should.equal('revision two, longer');
  });

  describe('invalid input is refused with an error naming the field', function () {
    const cases = [
      ['no fuid anywhere', {}, {}, /fuid/],
      ['a msg.fuid that is not an integer', {}, { fuid: 'abc' }, /msg\.fuid/],
      ['a msg.rrn that is not an integer', {}, { fuid: 1, rrn: '1.5' }, /msg\.rrn/],
      ['file mode without a file name', { output: 'file' }, { fuid: 1 }, /filename/],
      ['a Max size that is not a number above 0', { maxSizeMB: '-5' }, { fuid: 1 }, /^maxSizeMB$/]
    ];
    for (const [title, props, msg, field] of cases) {
      it(title, async function () {
        await s.load(s.flow('asset-download', props, { baseUrl: emulator.url }));
        const caught = await s.runFailing(msg);
        caught.assetError.kind.should.equal('invalid-input');
        caught.assetError.field.should.match(field);
      });
    }
  });

  describe('a large download', function () {
    let big;
    before(async function () {
      this.timeout(60000);
      const total = 256 * 1024 * 1024;
      let sent = 0;
      const block = Buffer.alloc(1024 * 1024, 0x62);
      const stream = new Readable({ read() { if (sent >= total) this.push(null); else { sent += block.length; this.push(block); } } });
      const out = await client.upload({ file: { stream, length: total }, name: 'big.bin', destination: '/dl', wait: true });
      big = out.fuids[0];
    });

    it('shows percent while receiving', async function () {
      this.timeout(30000);
      const target = path.join(tmp.dir, 'big-copy.bin');
      await s.load(s.flow('asset-download', { output: 'file', filename: target }, { baseUrl: emulator.url }));
      const statuses = s.recordStatus();
      await s.run({ fuid: big }, 30000);
      statuses.map(st => st.text).filter(t => /^\d+%$/.test(t)).length.should.be.above(0);
      fs.statSync(target).size.should.equal(256 * 1024 * 1024);
      fs.rmSync(target);
    });

    it('is aborted on close: closes within 5 s, no unhandled rejection, no file, no socket left', async function () {
      this.timeout(30000);
      const target = path.join(tmp.dir, 'aborted', 'big.bin');
      const socketsBefore = s.openSockets();
      const unhandled = await s.watchUnhandled(async () => {
        await s.load(s.flow('asset-download', { output: 'file', filename: target }, { baseUrl: emulator.url }));
        const n1 = helper.getNode('n1');
        const progressed = new Promise(resolve => n1.on('call:status', c => { if (/%$/.test(c.args[0].text || '')) resolve(); }));
        let completed = false;
        helper.getNode('out').on('input', () => { completed = true; });
        helper.getNode('caught').on('input', () => { completed = true; });
        n1.receive({ fuid: big });
        await progressed;
        const started = Date.now();
        await helper.unload();
        (Date.now() - started).should.be.below(5000);
        completed.should.be.false();
      });
      unhandled.should.eql([]);
      fs.existsSync(target).should.be.false();
      const left = fs.existsSync(path.dirname(target)) ? fs.readdirSync(path.dirname(target)) : [];
      left.should.eql([]);
      await s.delay(300);
      s.openSockets().should.be.belowOrEqual(socketsBefore);
    });
  });

  s.describeFailures('asset-download', async () => ({
    emulator, props: {}, msg: () => ({ fuid: first.fuid })
  }), { needsPermission: false });
});
