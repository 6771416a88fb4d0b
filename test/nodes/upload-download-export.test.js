'use strict';
// Upload from disk -> download in file mode -> export, wired with no change node, as a new
// user builds it from the editor's defaults (per-message fields shown as msg.fuid, msg.rrn,
// msg.filename). The download writes only to the File typed in its own editor.
require('should');
const fs = require('fs');
const path = require('path');
const s = require('./nodes-support');
const { helper } = s;

/** The editor defaults of new nodes (nodes/*.html), so that the test builds what a user gets. */
const NEW_UPLOAD = { filename: 'filename', filenameType: 'msg', wait: 'true', waitType: 'bool', expandZip: 'true', expandZipType: 'bool' };
const NEW_DOWNLOAD = { fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg', collectionId: '', collectionIdType: 'num', output: 'buffer', filename: '', filenameType: 'str' };
const NEW_EXPORT = { fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg', exportType: 'json', exportTypeType: 'fmt' };

function chain(baseUrl, upload, download, exporter) {
  return [
    { id: 'f1', type: 'tab', label: 'chain' },
    { id: 'server', type: 'asset-server', name: 'dam', baseUrl, timeout: 20 },
    { id: 'n1', type: 'asset-upload', z: 'f1', server: 'server', wires: [['n2']], ...upload },
    { id: 'n2', type: 'asset-download', z: 'f1', server: 'server', wires: [['n3']], ...download },
    { id: 'n3', type: 'asset-export', z: 'f1', server: 'server', wires: [['out']], ...exporter },
    { id: 'out', type: 'helper', z: 'f1', wires: [] },
    { id: 'catch1', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1', wires: [] }
  ];
}

describe('upload -> download (file mode) -> export with no change node', function () {
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

  it('writes the typed target, leaves the uploaded file untouched (same inode, same bytes), exports the asset', async function () {
    const source = path.join(tmp.dir, 'source', 'report.txt');
    fs.mkdirSync(path.dirname(source), { recursive: true });
    const bytes = Buffer.from('the user\'s own report\n'.repeat(200));
    fs.writeFileSync(source, bytes);
    const before = fs.statSync(source);
    const target = path.join(tmp.dir, 'downloads', 'copy.txt');

    await s.load(chain(emulator.url,
      { ...NEW_UPLOAD, destination: '/chain', destinationType: 'str' },
      { ...NEW_DOWNLOAD, output: 'file', filename: target, filenameType: 'str' },
      NEW_EXPORT));
    const msg = await s.run({ filename: source });

    fs.readFileSync(target).equals(bytes).should.be.true();
    const after = fs.statSync(source);
    after.ino.should.equal(before.ino);
    after.mtimeMs.should.equal(before.mtimeMs);
    fs.readFileSync(source).equals(bytes).should.be.true();
    msg.filename.should.equal(target);
    msg.payload.should.be.an.Object();
    JSON.stringify(msg.payload).should.containEql('/chain/report.txt');
  });

  it('in an old flow (File left blank), the download fails saying what to set and the uploaded file stays as it was', async function () {
    const source = path.join(tmp.dir, 'old-flow.txt');
    fs.writeFileSync(source, 'keep me');
    const before = fs.statSync(source);
    // An old flow: every per-message field blank, the documented msg properties fill them in.
    await s.load(chain(emulator.url,
      { filename: '', filenameType: 'str', destination: '/chain-old', destinationType: 'str', wait: 'true', waitType: 'bool' },
      { fuid: '', fuidType: 'num', rrn: '', rrnType: 'num', output: 'file', filename: '', filenameType: 'str' },
      { fuid: '', fuidType: 'num', rrn: '', rrnType: 'num', exportType: 'json', exportTypeType: 'fmt' }));
    const caught = await s.runFailing({ filename: source });
    caught.error.source.id.should.equal('n2');
    caught.assetError.field.should.equal('filename');
    caught.error.message.should.match(/set File in this node/);
    fs.statSync(source).ino.should.equal(before.ino);
    fs.readFileSync(source, 'utf8').should.equal('keep me');
  });
});
