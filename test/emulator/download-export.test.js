'use strict';
// Spec 4.3 (download) and 4.4 (export metadata).
require('should');
const { startTestEmulator, request, uploadFile } = require('./support');

describe('emulator download and export (spec 4.3, 4.4)', function () {
  let emu;
  let fuid;
  let rrn1;
  let rrn2;
  let folder;
  before(async () => {
    emu = await startTestEmulator();
    const a = await uploadFile(emu.url, '/docs', 'report.pdf', 'first version');
    fuid = a.json.data.fuids[0];
    rrn1 = a.json.data.rrn;
    rrn2 = (await uploadFile(emu.url, '/docs', 'report.pdf', 'second, longer version')).json.data.rrn;
    folder = (await request(emu.url, 'GET', '/emulator/assets?path=/docs')).json.asset.fuid;
  });
  after(() => emu.stop());
  const get = p => request(emu.url, 'GET', p);

  describe('download', () => {
    it('rrn -1 (and rrn omitted) streams the latest revision with Content-Type, Content-Length, Content-Disposition', async () => {
      for (const q of [`fuid=${fuid}&rrn=-1`, `fuid=${fuid}`, `fuid=${fuid}&rrn=-1&collectionId=0`]) {
        const r = await get(`/review/api/asset/download?${q}`);
        r.status.should.equal(200);
        r.text.should.equal('second, longer version');
        r.headers['content-type'].should.equal('application/pdf');
        r.headers['content-length'].should.equal(String(Buffer.byteLength('second, longer version')));
        r.headers['content-disposition'].should.equal('attachment; filename="report.pdf"');
      }
    });

    it('an older rrn gives that revision; an rrn between revisions gives the one in effect', async () => {
      (await get(`/review/api/asset/download?fuid=${fuid}&rrn=${rrn1}`)).text.should.equal('first version');
      (await get(`/review/api/asset/download?fuid=${fuid}&rrn=${rrn2}`)).text.should.equal('second, longer version');
      const other = (await uploadFile(emu.url, '/else', 'x.txt', 'x')).json.data.rrn; // a later rrn of another asset
      (await get(`/review/api/asset/download?fuid=${fuid}&rrn=${other}`)).text.should.equal('second, longer version');
    });

    it('unknown fuid, an rrn before the asset existed or after the newest -> success false JSON', async () => {
      for (const [q, why] of [['fuid=999999', /no asset with fuid 999999/], [`fuid=${fuid}&rrn=${rrn1 - 1}`, /did not exist/], [`fuid=${fuid}&rrn=99999999`, /no revision/]]) {
        const r = await get(`/review/api/asset/download?${q}`);
        r.status.should.equal(200);
        r.headers['content-type'].should.match(/application\/json/);
        r.json.success.should.equal(false);
        r.json.error.should.match(why);
      }
    });

    it('a folder -> success false', async () => {
      const r = await get(`/review/api/asset/download?fuid=${folder}`);
      r.json.success.should.equal(false);
      r.json.error.should.match(/folder/);
    });

    it('missing or non-integer fuid, bad rrn or collectionId -> success false naming the parameter', async () => {
      for (const [q, field] of [['', 'fuid'], ['fuid=abc', 'fuid'], ['fuid=1.5', 'fuid'], ['fuid=-3', 'fuid'], [`fuid=${fuid}&rrn=x`, 'rrn'], [`fuid=${fuid}&rrn=-2`, 'rrn'], [`fuid=${fuid}&collectionId=x`, 'collectionId']]) {
        const r = await get(`/review/api/asset/download?${q}`);
        r.json.success.should.equal(false);
        r.json.error.should.containEql(field);
      }
    });

    it('non-ASCII names get an ASCII filename and a UTF-8 filename*', async () => {
      const f = (await uploadFile(emu.url, '/docs', 'Übersicht – März.txt', 'ü')).json.data.fuids[0];
      const r = await get(`/review/api/asset/download?fuid=${f}`);
      r.headers['content-disposition'].should.equal(`attachment; filename="_bersicht _ M_rz.txt"; filename*=UTF-8''${encodeURIComponent('Übersicht – März.txt')}`);
      r.headers['content-type'].should.equal('text/plain; charset=utf-8');
      const q = (await uploadFile(emu.url, '/docs', 'x.bin', 'x', { name: 'say "hi".bin' })).json.data.fuids[0];
      const r2 = await get(`/review/api/asset/download?fuid=${q}`);
      r2.headers['content-type'].should.equal('application/octet-stream');
      r2.headers['content-disposition'].should.startWith('attachment; filename="say _hi_.bin"; filename*=');
    });

    it('a deleted asset: latest -> success false; an rrn before the deletion still downloads', async () => {
      const up = (await uploadFile(emu.url, '/del', 'gone.txt', 'was here')).json.data;
      (await request(emu.url, 'DELETE', `/emulator/assets/${up.fuids[0]}`)).json.success.should.equal(true);
      (await get(`/review/api/asset/download?fuid=${up.fuids[0]}`)).json.error.should.match(/deleted/);
      (await get(`/review/api/asset/download?fuid=${up.fuids[0]}&rrn=${up.rrn}`)).text.should.equal('was here');
    });
  });

  describe('export metadata', () => {
    before(async () => {
      (await request(emu.url, 'PUT', `/emulator/assets/${fuid}/metadata`, { body: JSON.stringify({ City: 'SFO', 'Dept & Co': '<R&D>' }) })).json.success.should.equal(true);
    });

    it('json (the default) has path, name, owner, size, dates, revisions and custom metadata', async () => {
      const r = await get(`/review/api/asset/export/metadata?fuid=${fuid}&rrn=-1`);
      r.status.should.equal(200);
      const e = r.json;
      e.success.should.equal(true);
      e.fuid.should.equal(fuid);
      e.path.should.equal('/docs/report.pdf');
      e.name.should.equal('report.pdf');
      e.owner.should.equal('emulator-user');
      e.size.should.equal(Buffer.byteLength('second, longer version'));
      e.created.should.match(/^\d{4}-\d\d-\d\dT/);
      e.modified.should.match(/^\d{4}-\d\d-\d\dT/);
      e.metadata.should.eql({ City: 'SFO', 'Dept & Co': '<R&D>' });
      e.revisions.map(r => r.action).should.eql(['added', 'modified', 'modified']);
      e.revisions[0].should.have.properties({ rrn: rrn1, size: 13 });
      e.revisions[0].at.should.match(/T/);
    });

    it('type=json explicitly, and rrn omitted means -1', async () => {
      const a = (await get(`/review/api/asset/export/metadata?fuid=${fuid}&type=json`)).json;
      const b = (await get(`/review/api/asset/export/metadata?fuid=${fuid}&rrn=-1`)).json;
      a.should.eql(b);
    });

    it('an older rrn exports the metadata and revisions as of then', async () => {
      const e = (await get(`/review/api/asset/export/metadata?fuid=${fuid}&rrn=${rrn1}`)).json;
      e.rrn.should.equal(rrn1);
      e.size.should.equal(13);
      e.metadata.should.eql({});
      e.revisions.length.should.equal(1);
    });

    it('type=xml gives an XML document with escaped values', async () => {
      const r = await get(`/review/api/asset/export/metadata?fuid=${fuid}&rrn=-1&type=xml`);
      r.status.should.equal(200);
      r.headers['content-type'].should.equal('application/xml; charset=utf-8');
      r.text.should.startWith('<?xml version="1.0" encoding="UTF-8"?>\n<asset fuid="' + fuid + '"');
      r.text.should.containEql('<path>/docs/report.pdf</path>');
      r.text.should.containEql('<field key="City">SFO</field>');
      r.text.should.containEql('<field key="Dept &amp; Co">&lt;R&amp;D&gt;</field>');
      r.text.should.containEql(`<revision rrn="${rrn1}" size="13" action="added"`);
    });

    it('another type -> success false listing the allowed ones', async () => {
      const r = await get(`/review/api/asset/export/metadata?fuid=${fuid}&type=csv`);
      r.json.success.should.equal(false);
      r.json.error.should.match(/type must be one of: json, xml/);
    });

    it('parameters may come as URL-encoded form data (GET with a body, or POST)', async () => {
      const g = await request(emu.url, 'GET', '/review/api/asset/export/metadata', { form: { fuid: String(fuid), rrn: '-1', type: 'json' } });
      g.json.fuid.should.equal(fuid);
      const p = await request(emu.url, 'POST', '/review/api/asset/export/metadata', { form: { fuid: String(fuid), rrn: String(rrn1), type: 'xml' } });
      p.text.should.containEql(`rrn="${rrn1}"`);
      // A body value comes after the query value and wins.
      const both = await request(emu.url, 'POST', `/review/api/asset/export/metadata?fuid=999999&type=csv`, { form: { fuid: String(fuid), type: 'json' } });
      both.json.fuid.should.equal(fuid);
    });

    it('unknown fuid or bad rrn -> success false', async () => {
      (await get('/review/api/asset/export/metadata?fuid=999999&rrn=-1')).json.error.should.match(/no asset/);
      (await get(`/review/api/asset/export/metadata?fuid=${fuid}&rrn=abc`)).json.error.should.match(/rrn/);
      (await get('/review/api/asset/export/metadata?rrn=-1')).json.error.should.match(/missing fuid/);
    });

    it('folders export too', async () => {
      const e = (await get(`/review/api/asset/export/metadata?fuid=${folder}`)).json;
      e.kind.should.equal('folder');
      e.path.should.equal('/docs');
    });
  });
});
