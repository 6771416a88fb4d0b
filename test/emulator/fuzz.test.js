'use strict';
// Property tests: mutated multipart uploads and random form bodies always get a JSON answer below
// 500, leave no temporary file and no unreferenced blob, and the emulator keeps working.
require('should');
const fs = require('fs');
const path = require('path');
const fc = require('fast-check');
const { startTestEmulator, request, multipart, makeZip, uploadFile } = require('./support');
const { Repository } = require('../../dist/emulator/repository');

const RUNS = Number(process.env.DAM_FUZZ_RUNS || 300);

describe('emulator under mutated input (property tests)', function () {
  this.timeout(60000);
  let emu;
  before(async () => { emu = await startTestEmulator(); });
  after(() => emu.stop()); // close() twice is fine: it returns the first close

  it(`mutated multipart uploads (${RUNS} runs): JSON answers, nothing left half-stored`, async () => {
    const zip = await makeZip({ 'a.txt': 'A', 'd/b.txt': 'B' });
    const bases = [
      multipart([{ name: 'destination', value: '/f' }, { name: 'wait', value: 'true' }, { name: 'file', filename: 'z.zip', data: zip }]),
      multipart([{ name: 'file', filename: 'p.txt', data: 'plain text body' }, { name: 'destination', value: '/f' }, { name: 'wait', value: 'false' }])
    ];
    await fc.assert(fc.asyncProperty(
      fc.nat({ max: bases.length - 1 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
      fc.option(fc.nat()),
      fc.boolean(),
      async (which, mutations, cut, dropBoundary) => {
        const base = bases[which];
        let body = Buffer.from(base.body);
        for (const [at, byte] of mutations) body[at % body.length] = byte;
        if (cut !== null) body = body.subarray(0, cut % body.length);
        const r = await request(emu.url, 'POST', '/review/api/asset/upload', { body, headers: { 'Content-Type': dropBoundary ? 'multipart/form-data' : base.contentType } });
        r.status.should.be.below(500);
        r.should.have.property('json');
        r.json.success.should.be.a.Boolean();
      }
    ), { numRuns: RUNS });
    // Background jobs settle, then: no temporary file, and reopening finds no unreferenced blob.
    await new Promise(res => setTimeout(res, 300));
    fs.readdirSync(path.join(emu.dataDir, 'tmp')).should.eql([]);
    (await uploadFile(emu.url, '/f', 'still.txt', 'works')).json.success.should.equal(true);
  });

  it(`random form bodies and paths on subscribe and export (${RUNS} runs): JSON answers`, async () => {
    const routes = ['/review/api/events/assets/subscribe/', '/review/api/asset/export/metadata', '/review/api/asset/download', '/emulator/assets/'];
    await fc.assert(fc.asyncProperty(
      fc.nat({ max: routes.length - 1 }),
      fc.string({ maxLength: 60 }),
      fc.string({ maxLength: 300 }),
      fc.constantFrom('POST', 'GET', 'DELETE', 'PUT'),
      async (which, tail, form, method) => {
        const p = routes[which] + encodeURIComponent(tail).replace(/%2F/g, '/');
        const r = await request(emu.url, method, p, { form });
        r.status.should.be.below(500);
        if (r.headers['content-type'] !== 'application/xml; charset=utf-8' && !/octet|text\//.test(r.headers['content-type'])) r.should.have.property('json');
      }
    ), { numRuns: RUNS });
  });

  it('the data folder holds no blob that no revision references', async () => {
    const before = fs.readdirSync(path.join(emu.dataDir, 'blobs')).length;
    await emu.close();
    // Opening removes unreferenced blobs: none may go.
    const repo = await Repository.open(emu.dataDir, { publish: async () => undefined, log: () => undefined });
    fs.readdirSync(path.join(emu.dataDir, 'blobs')).length.should.equal(before);
    await repo.close();
  });
});
