'use strict';
// The repository store on its own: journal replay, compaction into a snapshot, re-publication of
// changes the hub did not make durable, and clean-up of leftovers on open.
require('should');
const fs = require('fs');
const path = require('path');
const { tmpDir, rmDir } = require('./support');
const { Repository, normalizeFolderPath, checkName } = require('../../dist/emulator/repository');

async function open(dir, published = []) {
  return Repository.open(dir, { publish: async c => { published.push(c); }, log: () => undefined });
}

async function addFile(repo, folder, name, content) {
  const tmp = repo.tmpFile();
  fs.writeFileSync(tmp, content);
  const blob = await repo.adoptBlob(tmp);
  return repo.write('tester', tx => tx.putFile(tx.ensureFolder(folder), name, blob, Buffer.byteLength(content), 0));
}

describe('emulator repository store', function () {
  this.timeout(60000);
  let dir;
  beforeEach(() => { dir = tmpDir('dam-emu-repo-'); });
  afterEach(() => rmDir(dir));

  it('normalizes folder paths and checks names', () => {
    normalizeFolderPath('inbox').should.equal('/inbox');
    normalizeFolderPath('/a//b/').should.equal('/a/b');
    normalizeFolderPath('/').should.equal('/');
    normalizeFolderPath('').should.equal('/');
    (() => normalizeFolderPath('/a/../b')).should.throw(/destination must not contain/);
    (() => normalizeFolderPath('/a/\u0000')).should.throw(/control/);
    checkName('ok.txt').should.equal('ok.txt');
    (() => checkName('')).should.throw(/empty/);
    (() => checkName('a/b')).should.throw(/"\/"/);
  });

  it('publishes each change in rrn order before write() resolves, with the AssetChange fields', async () => {
    const published = [];
    const repo = await open(dir, published);
    const a = await addFile(repo, '/in', 'a.txt', 'a');
    published.length.should.equal(1);
    published[0].should.eql({ rrn: a.rrn, fuid: a.value, path: '/in/a.txt', owner: 'tester', action: 'added', metadata: {}, changedMetadataKeys: [] });
    await repo.write('other', tx => tx.setMetadata(a.value, { City: 'SFO' }));
    published[1].should.have.properties({ action: 'modified', owner: 'tester', metadata: { City: 'SFO' }, changedMetadataKeys: ['City'] });
    await addFile(repo, '/in', 'a.txt', 'a2');
    published[2].should.have.properties({ action: 'modified', metadata: { City: 'SFO' }, changedMetadataKeys: [] });
    await repo.write('other', tx => tx.delete(a.value));
    published[3].should.have.properties({ action: 'deleted', metadata: { City: 'SFO' } });
    published.map(p => p.rrn).should.eql([a.rrn, a.rrn + 1, a.rrn + 2, a.rrn + 3]);
    await repo.close();
  });

  it('a refused transaction consumes no rrn and no fuid', async () => {
    const repo = await open(dir);
    const a = await addFile(repo, '/x', 'f.txt', 'f');
    await repo.write('t', tx => tx.delete(999)).should.be.rejectedWith(/no asset/);
    const b = await addFile(repo, '/x', 'g.txt', 'g');
    b.rrn.should.equal(a.rrn + 1);
    b.value.should.equal(a.value + 1);
    await repo.close();
  });

  it('re-publishes the changes from the hub\'s last durable rrn on (a crash between commit and publish)', async () => {
    let repo = await open(dir);
    const rrns = [];
    for (const n of ['1', '2', '3']) rrns.push((await addFile(repo, '/r', `${n}.txt`, n)).rrn);
    await repo.close();
    const again = [];
    repo = await open(dir, again);
    (await repo.republishFrom(rrns[1])).should.equal(2);
    again.map(c => c.rrn).should.eql([rrns[1], rrns[2]]);
    await repo.close();
  });

  it('compacts a long journal into a snapshot on open; state, counters and history are kept', async () => {
    let repo = await open(dir);
    const f = (await addFile(repo, '/c', 'm.txt', 'm')).value;
    const writes = [];
    for (let i = 0; i < 2050; i++) writes.push(repo.write('t', tx => tx.setMetadata(f, { n: String(i) })));
    const last = (await Promise.all(writes)).pop().rrn;
    await repo.close();
    const before = fs.readFileSync(path.join(dir, 'repository.jsonl'), 'utf8').trim().split('\n').length;
    before.should.be.above(2000);

    const republished = [];
    repo = await open(dir, republished);
    fs.readFileSync(path.join(dir, 'repository.jsonl'), 'utf8').trim().split('\n').length.should.equal(1);
    repo.asset(f).revisions.length.should.equal(2051);
    repo.revisionAt(f, -1).revision.metadata.should.eql({ n: '2049' });
    repo.headRrn().should.equal(last);
    (await repo.republishFrom(last)).should.equal(1); // the snapshot keeps recent changes
    const next = await addFile(repo, '/c', 'n.txt', 'n');
    next.rrn.should.equal(last + 1);
    next.value.should.equal(f + 1);
    await repo.close();

    repo = await open(dir);
    repo.asset(next.value).path.should.equal('/c/n.txt');
    await repo.close();
  });

  it('removes temporary files and blobs no commit references on open', async () => {
    let repo = await open(dir);
    const kept = await addFile(repo, '/k', 'k.txt', 'k');
    fs.writeFileSync(repo.tmpFile(), 'half');
    fs.writeFileSync(path.join(repo.blobDir, 'orphan'), 'orphan');
    await repo.close();
    repo = await open(dir);
    fs.readdirSync(repo.tmpDir).should.eql([]);
    const blobs = fs.readdirSync(repo.blobDir);
    blobs.should.eql([repo.asset(kept.value).revisions[0].blob]);
    await repo.close();
  });

  it('ignores a torn last journal line (a crash mid-write)', async () => {
    let repo = await open(dir);
    const a = await addFile(repo, '/t', 'a.txt', 'a');
    await repo.close();
    fs.appendFileSync(path.join(dir, 'repository.jsonl'), '{"t":"commit","rrn":99');
    repo = await open(dir);
    repo.headRrn().should.equal(a.rrn);
    (await addFile(repo, '/t', 'b.txt', 'b')).rrn.should.equal(a.rrn + 1);
    await repo.close();
  });
});
