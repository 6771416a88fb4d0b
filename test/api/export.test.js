'use strict';
// Metadata export (spec 4.4) against the real emulator; odd answers from a small real server.
const should = require('should');
const axios = require('axios');
const { AssetClient } = require('../../dist/api/client');
const {
  COOKIES, startTestEmulator, startCountingProxy, startServer, expectError, seenErrors, assertNoCookieIn
} = require('./helpers');

describe('api client: export metadata against the emulator', () => {
  let emu;
  let proxy;
  let api;
  let asset; // { fuid, rrn }
  before(async () => {
    emu = await startTestEmulator();
    proxy = await startCountingProxy(emu.url);
    api = new AssetClient({ baseUrl: proxy.url, cookie: COOKIES.editor });
    const up = await api.upload({ file: { buffer: Buffer.from('meta') }, name: 'meta.txt', destination: '/exp', wait: true });
    asset = { fuid: up.fuids[0], rrn: up.rrn };
    // Another user changes the metadata: a new revision (emulator-only endpoint).
    await axios.put(`${emu.url}/emulator/assets/${asset.fuid}/metadata`, { City: 'SFO' }, { headers: { Cookie: `JSESSIONID=${COOKIES.editor}` } });
  });
  after(async () => {
    api.close();
    await proxy.close();
    await emu.close();
  });

  it('returns parsed JSON by default (rrn -1 sent as a query parameter; no type unless given: the server\'s default)', async () => {
    proxy.seen.length = 0;
    const out = await api.exportMetadata({ fuid: asset.fuid });
    out.contentType.should.match(/^application\/json/);
    out.data.path.should.equal('/exp/meta.txt');
    out.data.metadata.should.eql({ City: 'SFO' });
    proxy.seen.should.eql([`GET /review/api/asset/export/metadata?fuid=${asset.fuid}&rrn=-1`]);
  });

  it('exports an older revision by rrn', async () => {
    const out = await api.exportMetadata({ fuid: String(asset.fuid), rrn: asset.rrn });
    out.data.metadata.should.eql({});
  });

  it('returns the text when the server sends XML', async () => {
    const out = await api.exportMetadata({ fuid: asset.fuid, type: 'xml' });
    out.contentType.should.match(/xml/);
    out.data.should.be.a.String();
    out.data.should.match(/^<\?xml/);
    out.data.should.match(/<path>\/exp\/meta\.txt<\/path>/);
  });

  it('an unknown fuid or an unsupported type is kind rejected; 401 is auth', async () => {
    (await expectError(api.exportMetadata({ fuid: 424242 }), 'rejected')).serverMessage.should.match(/424242/);
    (await expectError(api.exportMetadata({ fuid: asset.fuid, type: 'csv-of-doom' }), 'rejected')).serverMessage.should.match(/type/);
    const wrong = new AssetClient({ baseUrl: emu.url, cookie: COOKIES.wrong });
    await expectError(wrong.exportMetadata({ fuid: asset.fuid }), 'auth');
    wrong.close();
  });
});

describe('api client: export answers the emulator does not give', () => {
  let server;
  let reply;
  let api;
  before(async () => {
    server = await startServer((req, res) => reply(req, res));
    api = new AssetClient({ baseUrl: server.url, cookie: COOKIES.editor });
  });
  after(async () => {
    api.close();
    await server.close();
  });
  function answer(status, contentType, body) {
    reply = (req, res) => {
      res.writeHead(status, { 'Content-Type': contentType });
      res.end(body);
    };
  }

  it('keeps 64-bit revisions exact', async () => {
    answer(200, 'application/json', '{"success":true,"fuid":3,"rrn":9223372036854775806,"revisions":[{"rrn":9223372036854775807}]}');
    const out = await api.exportMetadata({ fuid: 3, rrn: '9223372036854775806' });
    out.data.rrn.should.equal('9223372036854775806');
    out.data.revisions[0].rrn.should.equal('9223372036854775807');
  });

  it('a success:"false" answer is an error even when labelled as text', async () => {
    answer(200, 'text/plain', '{"success":"false","errorInfo":"no metadata"}');
    (await expectError(api.exportMetadata({ fuid: 3 }), 'rejected')).serverMessage.should.equal('no metadata');
    answer(200, 'text/plain', 'Key: value');
    (await api.exportMetadata({ fuid: 3, type: 'text' })).data.should.equal('Key: value');
  });

  it('JSON that does not parse is kind http; 449 is server busy', async () => {
    answer(200, 'application/json', '{"success": tru');
    (await expectError(api.exportMetadata({ fuid: 3 }), 'http')).message.should.match(/not a JSON object/);
    answer(449, 'application/json', '{"success":false,"errorCode":"busy"}');
    (await expectError(api.exportMetadata({ fuid: 3 }), 'http')).message.should.match(/server busy/);
    should.exist(api);
  });
});

describe('api export: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(5);
    assertNoCookieIn(seenErrors);
  });
});
