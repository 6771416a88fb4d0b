'use strict';
// Issue 22 item 11: the emulator bounds what one upload may cost (file size; zip expansion by a
// ratio and a total, as CLI options with defaults), and its journal never loses a record after a
// torn one (a broken line mid-file is skipped, later records load; a failed write is cut off
// before the next; an incomplete last line is cut off on open).
require('should');
const fs = require('fs');
const path = require('path');
const { Journal } = require('../../dist/emulator/journal');
const { parseCli, UsageError } = require('../../dist/emulator/cli');
const { DEFAULT_UPLOAD_LIMITS } = require('../../dist/emulator/limits');
const { tmpDir, rmDir, startTestEmulator, request, uploadFile, makeZip } = require('./support');

const get = (emu, p) => request(emu.url, 'GET', p);
const assetAt = async (emu, p) => (await get(emu, `/emulator/assets?path=${encodeURIComponent(p)}`)).json;

describe('emulator: upload limits (issue 22 item 11)', function () {
  this.timeout(30000);

  it('CLI options --max-upload, --max-zip-ratio, --max-zip-size, --max-zip-entries; defaults 10 GB, 100, 10 GB, 10,000', function () {
    const o = parseCli(['--max-upload', '500MB', '--max-zip-ratio', '50', '--max-zip-size', '2GiB', '--max-zip-entries', '500']);
    o.maxUploadBytes.should.equal(500e6);
    o.maxZipRatio.should.equal(50);
    o.maxZipBytes.should.equal(2 * 2 ** 30);
    o.maxZipEntries.should.equal(500);
    DEFAULT_UPLOAD_LIMITS.should.eql({ maxUploadBytes: 10e9, maxZipRatio: 100, maxZipBytes: 10e9, maxZipEntries: 10000 });
    for (const args of [['--max-upload', 'lots'], ['--max-upload', '0'], ['--max-zip-ratio', '-1'], ['--max-zip-ratio', 'x'], ['--max-zip-size', '1PB'],
      ['--max-zip-entries', '0'], ['--max-zip-entries', '2.5'], ['--max-zip-entries', 'many']]) {
      (() => parseCli(args)).should.throw(UsageError, { message: new RegExp(args[0]) });
    }
  });

  it('a file larger than the upload limit is refused naming the option; nothing stored, nothing left in tmp/', async function () {
    const emu = await startTestEmulator({ maxUploadBytes: 1000 });
    try {
      const r = await uploadFile(emu.url, '/limits', 'big.bin', Buffer.alloc(5000, 1));
      r.json.success.should.be.false();
      r.json.error.should.match(/larger than 1000 bytes.*--max-upload/);
      (await assetAt(emu, '/limits/big.bin')).success.should.be.false();
      fs.readdirSync(path.join(emu.dataDir, 'tmp')).should.eql([]);
      (await uploadFile(emu.url, '/limits', 'small.bin', Buffer.alloc(1000, 1))).json.success.should.be.true();
    } finally { await emu.stop(); }
  });

  it('a zip that expands beyond 100 times its size (default) is refused before anything is expanded', async function () {
    const emu = await startTestEmulator();
    try {
      const bomb = await makeZip({ 'zeros.bin': Buffer.alloc(20e6) }); // ~20 KB expanding to 20 MB
      (bomb.length * 100).should.be.below(20e6);
      for (const wait of ['true', 'false']) {
        const r = await uploadFile(emu.url, '/bombs', 'bomb.zip', bomb, { wait });
        r.json.success.should.be.false();
        r.json.error.should.match(/expands to more than \d+ bytes.*100 times its size.*--max-zip-ratio/);
      }
      (await assetAt(emu, '/bombs/zeros.bin')).success.should.be.false();
      // Stored as it is when asked.
      (await uploadFile(emu.url, '/bombs', 'bomb.zip', bomb, { expandZip: 'false' })).json.success.should.be.true();
      // A zip within the ratio expands.
      const fine = await makeZip({ 'a.txt': 'hello', 'b.txt': 'world' });
      (await uploadFile(emu.url, '/fine', 'fine.zip', fine)).json.success.should.be.true();
      (await assetAt(emu, '/fine/a.txt')).success.should.be.true();
    } finally { await emu.stop(); }
  });

  it('a zip that expands beyond the total is refused naming --max-zip-size', async function () {
    const emu = await startTestEmulator({ maxZipBytes: 1000, maxZipRatio: 1e6 });
    try {
      const zip = await makeZip({ 'a.bin': Buffer.alloc(600, 7), 'b.bin': Buffer.alloc(600, 8) });
      const r = await uploadFile(emu.url, '/total', 'two.zip', zip);
      r.json.success.should.be.false();
      r.json.error.should.match(/expands to more than 1000 bytes.*--max-zip-size/);
      (await assetAt(emu, '/total/a.bin')).success.should.be.false();
    } finally { await emu.stop(); }
  });

  it('a zip of more entries than the limit is refused naming --max-zip-entries; at the limit it expands', async function () {
    const emu = await startTestEmulator({ maxZipEntries: 3 });
    try {
      const four = await makeZip({ 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', 'd.txt': 'd' });
      const r = await uploadFile(emu.url, '/many', 'four.zip', four);
      r.json.success.should.be.false();
      r.json.error.should.match(/more than 3 files and folders.*--max-zip-entries/);
      (await assetAt(emu, '/many/a.txt')).success.should.be.false();
      const three = await makeZip({ 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' });
      (await uploadFile(emu.url, '/many', 'three.zip', three)).json.success.should.be.true();
      (await assetAt(emu, '/many/c.txt')).success.should.be.true();
    } finally { await emu.stop(); }
  });

  it('folders count too, listed or only implied by a path: one file 4 folders deep is 5', async function () {
    const emu = await startTestEmulator({ maxZipEntries: 4 });
    try {
      const deep = await makeZip({ 'a/b/c/d/f.txt': 'f' });
      const r = await uploadFile(emu.url, '/deep', 'deep.zip', deep);
      r.json.success.should.be.false();
      r.json.error.should.match(/more than 4 files and folders/);
      (await assetAt(emu, '/deep/a')).success.should.be.false();
      const shallower = await makeZip({ 'a/b/c/f.txt': 'f' });
      (await uploadFile(emu.url, '/deep', 'shallower.zip', shallower)).json.success.should.be.true();
    } finally { await emu.stop(); }
  });
});

describe('emulator: the journal never loses a record after a torn one (issue 22 item 11)', function () {
  let dir;
  beforeEach(() => { dir = tmpDir('dam-journal-'); });
  afterEach(() => rmDir(dir));

  async function written(n) {
    const file = path.join(dir, 'j.jsonl');
    const { journal } = await Journal.open(file);
    for (let i = 1; i <= n; i++) await journal.append({ n: i, pad: 'x'.repeat(20) });
    await journal.close();
    return file;
  }
  const numbers = (records) => records.map((r) => r.n);
  /** The records a fresh open reads (the journal closed again). */
  async function reread(file) {
    const { journal, records } = await Journal.open(file);
    await journal.close();
    return numbers(records);
  }

  for (const [what, damage] of [
    ['cut in half', (line) => line.slice(0, Math.floor(line.length / 2))],
    ['overwritten with garbage', (line) => '\u0000'.repeat(line.length)],
    ['glued to the next', (line) => line.slice(0, 10) + '\u0001']
  ]) {
    it(`a line ${what} mid-file is skipped; every later record loads`, async function () {
      const file = await written(6);
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      lines[2] = damage(lines[2]);
      fs.writeFileSync(file, what === 'glued to the next' ? lines.slice(0, 3).join('\n') + lines.slice(3).join('\n') : lines.join('\n'));
      const { journal, records } = await Journal.open(file);
      const expected = what === 'glued to the next' ? [1, 2, 5, 6] : [1, 2, 4, 5, 6];
      numbers(records).should.eql(expected);
      journal.skipped.should.equal(1);
      await journal.append({ n: 7 });
      await journal.close();
      (await reread(file)).should.eql([...expected, 7]);
    });
  }

  it('an incomplete last line (died mid-write) is cut off; the next record is whole', async function () {
    const file = await written(3);
    fs.appendFileSync(file, '{"n":4,"pad":"xx'); // never acknowledged
    const { journal, records } = await Journal.open(file);
    numbers(records).should.eql([1, 2, 3]);
    await journal.append({ n: 5 });
    await journal.close();
    (await reread(file)).should.eql([1, 2, 3, 5]);
  });

  it('a write that fails half-way (disk full) is cut off: the records acknowledged after it survive', async function () {
    const file = path.join(dir, 'j.jsonl');
    const { journal } = await Journal.open(file);
    await journal.append({ n: 1 });
    // The file handle writes half of the next batch, then fails as a full disk does.
    const handle = journal.handle;
    const write = handle.write.bind(handle);
    handle.write = async (text) => {
      handle.write = write;
      await write(text.slice(0, Math.floor(text.length / 2)));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    await journal.append({ n: 2, pad: 'y'.repeat(40) }).should.be.rejectedWith(/ENOSPC/);
    await journal.append({ n: 3 });
    await journal.close();
    (await reread(file)).should.eql([1, 3]);
  });
});

describe('emulator: restart on a repository journal with a torn line mid-file (issue 22 item 11)', function () {
  this.timeout(30000);
  it('the assets of every commit after the torn one are there after the restart', async function () {
    const dataDir = tmpDir('dam-emu-torn-');
    try {
      let emu = await startTestEmulator({ dataDir });
      for (const name of ['one.txt', 'two.txt', 'three.txt', 'four.txt']) {
        (await uploadFile(emu.url, '/torn', name, Buffer.from(`content of ${name}`))).json.success.should.be.true();
      }
      await emu.close();
      const file = path.join(dataDir, 'repository.jsonl');
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      const at = lines.findIndex((l) => l.includes('two.txt'));
      at.should.be.above(0);
      lines[at] = lines[at].slice(0, Math.floor(lines[at].length / 2));
      fs.writeFileSync(file, lines.join('\n'));
      emu = await startTestEmulator({ dataDir });
      try {
        for (const name of ['one.txt', 'three.txt', 'four.txt']) (await assetAt(emu, `/torn/${name}`)).success.should.be.true(name);
        emu.lines.some((l) => /repository journal: 1 torn line\(s\) skipped/.test(l)).should.be.true();
        (await uploadFile(emu.url, '/torn', 'five.txt', Buffer.from('five'))).json.success.should.be.true();
      } finally { await emu.close(); }
    } finally { rmDir(dataDir); }
  });
});
