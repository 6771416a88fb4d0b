'use strict';
require('should');
const s = require('./nodes-support');
const { helper } = s;
const { AssetClient } = require('../../dist/api/client');

describe('asset-export node (against the emulator)', function () {
  let emulator;
  let client;
  let asset;   // { fuid, rrn1, rrn2 }
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
    client = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE });
    const one = await client.upload({ file: { buffer: Buffer.from('v1') }, name: 'meta.txt', destination: '/meta', wait: true });
    const res = await fetch(`${emulator.url}/emulator/assets/${one.fuids[0]}/metadata`, {
      method: 'PUT', headers: { Cookie: s.COOKIE, 'Content-Type': 'application/json' }, body: JSON.stringify({ City: 'SFO' })
    });
    res.status.should.equal(200);
    const record = (await s.emulatorGet(`${emulator.url}/emulator/assets/${one.fuids[0]}`)).body.asset;
    const rrns = record.revisions.map(r => r.rrn);
    asset = { fuid: one.fuids[0], rrn1: one.rrn, rrn2: rrns[rrns.length - 1] };
    String(asset.rrn2).should.not.equal(String(asset.rrn1));
  });
  after(async function () {
    if (client) client.close();
    if (emulator) await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  it('exports the latest metadata as parsed JSON by default', async function () {
    await s.load(s.flow('asset-export', {}, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const msg = await s.run({ fuid: asset.fuid });
    msg.payload.should.be.an.Object();
    JSON.stringify(msg.payload).should.containEql('meta.txt');
    JSON.stringify(msg.payload).should.containEql('SFO');
    msg.contentType.should.match(/json/);
    statuses[statuses.length - 1].should.containDeep({ fill: 'green', shape: 'dot' });
  });

  it('msg.rrn selects an older revision (before the metadata change)', async function () {
    await s.load(s.flow('asset-export', {}, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: asset.fuid, rrn: asset.rrn1 });
    JSON.stringify(msg.payload).should.not.containEql('SFO');
  });

  it('the editor format pick list (xml) gives text; msg.type does not take over (the core watch node sets it)', async function () {
    await s.load(s.flow('asset-export', { fuid: String(asset.fuid), fuidType: 'num', exportType: 'xml', exportTypeType: 'fmt' }, { baseUrl: emulator.url }));
    const xml = await s.run({});
    xml.payload.should.be.a.String();
    xml.payload.should.match(/^\s*</);
    xml.payload.should.containEql('SFO');
    const still = await s.run({ type: 'json' });
    still.payload.should.be.a.String();
    still.payload.should.match(/^\s*</);
  });

  it('a blank Type is the server default, never msg.type (e.g. "file" from a watch node)', async function () {
    await s.load(s.flow('asset-export', { exportType: '', exportTypeType: 'str' }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: asset.fuid, type: 'file' });
    msg.payload.should.be.an.Object();
  });

  it('msg.type is the export type only when the Type field points at it', async function () {
    await s.load(s.flow('asset-export', { exportType: 'type', exportTypeType: 'msg' }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: asset.fuid, type: 'xml' });
    msg.payload.should.be.a.String();
  });

  it('evaluates a JSONata editor value', async function () {
    await s.load(s.flow('asset-export', { fuid: '$number(ref.id)', fuidType: 'jsonata' }, { baseUrl: emulator.url }));
    const msg = await s.run({ ref: { id: String(asset.fuid) } });
    JSON.stringify(msg.payload).should.containEql('meta.txt');
  });

  it('a fuid set in the node wins over msg.fuid; a msg.fuid TypedInput (new nodes) reads it', async function () {
    await s.load(s.flow('asset-export', { fuid: String(asset.fuid), fuidType: 'num' }, { baseUrl: emulator.url }));
    const msg = await s.run({ fuid: 424242 });
    JSON.stringify(msg.payload).should.containEql('meta.txt');
    await helper.unload();
    await s.load(s.flow('asset-export', { fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg' }, { baseUrl: emulator.url }));
    const fromMsg = await s.run({ fuid: asset.fuid, rrn: asset.rrn1 });
    JSON.stringify(fromMsg.payload).should.containEql('meta.txt');
    JSON.stringify(fromMsg.payload).should.not.containEql('SFO');
  });

  it('an unknown fuid is a rejected error', async function () {
    await s.load(s.flow('asset-export', {}, { baseUrl: emulator.url }));
    const caught = await s.runFailing({ fuid: 31337 });
    caught.assetError.kind.should.equal('rejected');
  });

  describe('invalid input is refused with an error naming the field', function () {
    const cases = [
      ['no fuid anywhere', {}, {}, /fuid/],
      ['a msg.fuid that is not an integer', {}, { fuid: { id: 1 } }, /msg\.fuid/],
      ['a msg.type that is not a string, when Type points at it', { exportType: 'type', exportTypeType: 'msg' }, { fuid: 1, type: ['json'] }, /msg\.type/],
      ['a bad JSON editor value', { fuid: '{nope', fuidType: 'json' }, {}, /fuid/]
    ];
    for (const [title, props, msg, field] of cases) {
      it(title, async function () {
        await s.load(s.flow('asset-export', props, { baseUrl: emulator.url }));
        const caught = await s.runFailing(msg);
        caught.assetError.kind.should.equal('invalid-input');
        caught.assetError.field.should.match(field);
      });
    }
  });

  s.describeFailures('asset-export', async () => ({
    emulator, props: {}, msg: () => ({ fuid: asset.fuid })
  }), { needsPermission: false });
});
