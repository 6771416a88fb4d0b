'use strict';
// The emulator reads form and multipart bodies as a servlet container does: the declared charset,
// else ISO-8859-1 (so a client that forgets charset=UTF-8 fails here as on the real server), or
// UTF-8 when started with formCharset 'utf-8' / --form-charset utf-8.
require('should');
const { startTestEmulator, request, multipart } = require('./support');
const { parseCli } = require('../../dist/emulator/cli');
const { AssetClient } = require('../../dist/api/client');

const SUBSCRIBE = '/review/api/events/assets/subscribe/';
const WATCH = '* /inbox/Überweisungen';
const FORM = `callback=${encodeURIComponent('http://127.0.0.1:9/São')}&watchPath=${encodeURIComponent(WATCH)}`;
/** What a container makes of UTF-8 bytes read as ISO-8859-1. */
const mangled = (text) => Buffer.from(text, 'utf8').toString('latin1');

async function register(emu, id, contentType, body = FORM) {
  const posted = await request(emu.url, 'POST', SUBSCRIBE + id, { body, headers: { 'Content-Type': contentType } });
  posted.status.should.equal(200, posted.text);
  posted.json.success.should.be.true(posted.text);
  return (await request(emu.url, 'GET', SUBSCRIBE + id)).json.subscription;
}

describe('emulator: charset of form and multipart bodies', function () {
  describe('default (ISO-8859-1, as a servlet container)', () => {
    let emu;
    before(async () => { emu = await startTestEmulator(); });
    after(() => emu.stop());

    it('a form body without charset is read as ISO-8859-1: UTF-8 text arrives mangled', async () => {
      const sub = await register(emu, 'charset-none-1', 'application/x-www-form-urlencoded');
      sub.watchPath.should.eql([mangled(WATCH)]);
      sub.callback.should.equal(mangled('http://127.0.0.1:9/São'));
    });

    it('a form body with charset=UTF-8 is read as UTF-8; raw UTF-8 bytes too', async () => {
      (await register(emu, 'charset-utf8-1', 'application/x-www-form-urlencoded; charset=UTF-8')).watchPath.should.eql([WATCH]);
      const raw = Buffer.from(`callback=http://127.0.0.1:9/x&watchPath=${WATCH}`, 'utf8');
      (await register(emu, 'charset-utf8-2', 'application/x-www-form-urlencoded;charset="utf-8"', raw)).watchPath.should.eql([WATCH]);
    });

    it('a declared ISO-8859-1 body is read as such', async () => {
      const body = Buffer.from(`callback=http://127.0.0.1:9/x&watchPath=${WATCH}`, 'latin1');
      (await register(emu, 'charset-latin1-1', 'application/x-www-form-urlencoded; charset=ISO-8859-1', body)).watchPath.should.eql([WATCH]);
    });

    it('an unknown charset is refused with 415', async () => {
      const r = await request(emu.url, 'POST', SUBSCRIBE + 'charset-bad-01', { body: FORM, headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=klingon' } });
      r.status.should.equal(415);
      r.json.error.should.match(/unsupported charset "klingon"/);
    });

    it('multipart fields: ISO-8859-1 without charset, UTF-8 with it; the file name is UTF-8 either way', async () => {
      const parts = [
        { name: 'destination', value: '/inbox/Zürich' },
        { name: 'wait', value: 'true' },
        { name: 'file', filename: 'Grüße.txt', data: 'x' }
      ];
      const paths = [];
      for (const charset of ['', '; charset=UTF-8']) {
        const { body, contentType } = multipart(parts);
        const typed = contentType.replace('multipart/form-data', `multipart/form-data${charset}`);
        const r = await request(emu.url, 'POST', '/review/api/asset/upload', { body, headers: { 'Content-Type': typed } });
        r.json.success.should.be.true(r.text);
        const asset = (await request(emu.url, 'GET', `/emulator/assets/${r.json.data.fuids[0]}`)).json.asset;
        paths.push(asset.path);
      }
      paths.should.eql([`${mangled('/inbox/Zürich')}/Grüße.txt`, '/inbox/Zürich/Grüße.txt']);
    });

    it('the API client (which declares UTF-8) stores what it sent', async () => {
      const client = new AssetClient({ baseUrl: emu.url, cookie: 'local-dev' });
      try {
        const out = await client.upload({ file: { buffer: Buffer.from('x') }, name: 'Bericht "São Paulo".txt', destination: '/inbox/Überweisungen', wait: true });
        const asset = (await request(emu.url, 'GET', `/emulator/assets/${out.fuids[0]}`)).json.asset;
        asset.path.should.equal('/inbox/Überweisungen/Bericht "São Paulo".txt');
        await client.registerSubscription('charset-client-1', { callback: 'http://127.0.0.1:9/x', watchPath: [WATCH] });
        (await client.getSubscription('charset-client-1')).subscription.watchPath.should.eql([WATCH]);
      } finally {
        client.close();
      }
    });
  });

  describe('formCharset utf-8 (for clients that send UTF-8 without declaring it)', () => {
    let emu;
    before(async () => { emu = await startTestEmulator({ formCharset: 'utf-8' }); });
    after(() => emu.stop());

    it('reads a body without charset as UTF-8; a declared charset still wins', async () => {
      (await register(emu, 'charset-opt-01', 'application/x-www-form-urlencoded')).watchPath.should.eql([WATCH]);
      const body = Buffer.from(`callback=http://127.0.0.1:9/x&watchPath=${WATCH}`, 'latin1');
      (await register(emu, 'charset-opt-02', 'application/x-www-form-urlencoded; charset=iso-8859-1', body)).watchPath.should.eql([WATCH]);
    });
  });

  it('startEmulator refuses an unknown formCharset; the CLI takes --form-charset', async () => {
    await startTestEmulator({ formCharset: 'utf-16' }).should.be.rejectedWith(/formCharset must be one of iso-8859-1, utf-8/);
    parseCli([]).formCharset.should.equal('iso-8859-1');
    parseCli(['--form-charset', 'UTF-8']).formCharset.should.equal('utf-8');
    (() => parseCli(['--form-charset', 'latin9'])).should.throw(/--form-charset must be iso-8859-1 or utf-8/);
  });
});
