'use strict';
// Issue 23 #4: a failure reaches the debug sidebar whole, as core nodes report theirs
// (node.error(message string, msg)): an Error object is shown cut at about 80 characters,
// and the advice at the end of our messages was lost. msg.assetError stays for Catch flows.
require('should');
const s = require('./nodes-support');
const { helper } = s;

describe('errors reported as whole strings (debug sidebar, Catch nodes)', function () {
  let emulator;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  /** The helper's log entries of level error (what the debug sidebar shows for an uncaught error). */
  const loggedErrors = () => helper.log().args.map((a) => a[0]).filter((e) => e && e.level === helper.log().ERROR);

  it('an uncaught failure is logged as the whole message string, advice included', async function () {
    const flow = s.flow('asset-export', {}, { baseUrl: emulator.url }).filter((n) => n.type !== 'catch');
    await s.load(flow, s.credentials(`JSESSIONID=${s.WRONG_COOKIE_VALUE}`));
    const before = loggedErrors().length;
    helper.getNode('n1').receive({ fuid: 1 });
    const { waitFor } = require('../e2e/support');
    const entry = await waitFor('the error in the log', () => loggedErrors().slice(before).find((e) => e.id === 'n1'), 15000);
    entry.msg.should.be.a.String();
    entry.msg.length.should.be.above(120);
    entry.msg.should.match(/authentication failed/);
    entry.msg.should.match(/automatic login/); // the advice, at the end of the text
    entry.msg.should.not.containEql(s.WRONG_COOKIE_VALUE);
  });

  it('a Catch node gets the whole message in msg.error.message, and msg.assetError', async function () {
    await s.load(s.flow('asset-export', {}, { baseUrl: emulator.url }), s.credentials(`JSESSIONID=${s.WRONG_COOKIE_VALUE}`));
    const caught = await s.runFailing({ fuid: 1 });
    caught.error.message.should.startWith('exportMetadata: authentication failed');
    caught.error.message.should.match(/automatic login/);
    caught.assetError.should.containEql({ kind: 'auth', status: 401 });
  });

  describe('errors name a field by its editor label and its msg property (issue 23 #7)', () => {
    async function failure(type, props, msg) {
      await helper.unload();
      await s.load(s.flow(type, props, { baseUrl: emulator.url }));
      const caught = await s.runFailing(msg);
      caught.assetError.kind.should.equal('invalid-input');
      return caught;
    }

    it('upload without a destination: Destination (msg.destination) or Folder fuid (msg.destinationFuid)', async () => {
      const caught = await failure('asset-upload', { destination: '', destinationType: 'str', filename: '', filenameType: 'str' }, { payload: 'x' });
      caught.error.message.should.startWith('Destination (msg.destination) or Folder fuid (msg.destinationFuid) is required');
      caught.assetError.field.should.equal('destination');
    });

    it('a blank Folder fuid reading a wrong msg.destinationFuid', async () => {
      const caught = await failure('asset-upload', { destination: '', destinationFuid: '', destinationFuidType: 'num' }, { payload: 'x', destinationFuid: 'inbox' });
      caught.error.message.should.startWith('Folder fuid (msg.destinationFuid): must be an integer');
      caught.assetError.field.should.equal('msg.destinationFuid');
    });

    it('download: Asset fuid pointing at msg.fuid, missing or wrong', async () => {
      (await failure('asset-download', { fuid: 'fuid', fuidType: 'msg' }, {})).error.message.should.startWith('Asset fuid (msg.fuid): is required');
      (await failure('asset-download', { fuid: 'fuid', fuidType: 'msg' }, { fuid: 'abc' })).error.message.should.startWith('Asset fuid (msg.fuid): must be an integer');
    });

    it('download: Asset fuid read from flow, global or env context names where (a new-user audit: "Asset fuid: is required" with an empty flow.exampleFuid)', async () => {
      (await failure('asset-download', { fuid: 'exampleFuid', fuidType: 'flow' }, {})).error.message.should.startWith('Asset fuid (flow.exampleFuid): is required');
      (await failure('asset-download', { fuid: '#:(memory)::lastFuid', fuidType: 'global' }, {})).error.message.should.startWith('Asset fuid (global.lastFuid): is required');
      delete process.env.DAM_TEST_NO_FUID;
      (await failure('asset-download', { fuid: 'DAM_TEST_NO_FUID', fuidType: 'env' }, {})).error.message.should.startWith('Asset fuid (env.DAM_TEST_NO_FUID): is required');
    });

    it('the client\'s options a node fills are named by the editor label: download File and If it exists, subscribe Id, the server\'s Base URL', async () => {
      // A new-user audit: "path: cannot create the folder of …", "id: must be 8 to 40 …", "baseUrl: …".
      const { AssetClient } = require('../../dist/api/client');
      const api = new AssetClient({ baseUrl: emulator.url, cookie: s.COOKIE });
      const fuid = String((await api.upload({ file: { buffer: Buffer.from('labels') }, name: 'labels.txt', destination: '/labels', wait: true })).fuids[0]);
      api.close();
      const file = await failure('asset-download', { fuid, fuidType: 'num', output: 'file', filename: '/dev/null/mirror/a.txt', filenameType: 'str' }, {});
      file.error.message.should.startWith('File: cannot create the folder of /dev/null/mirror/a.txt');
      file.assetError.field.should.equal('path');
      const blank = await failure('asset-download', { fuid, fuidType: 'num', output: 'file', filename: '', filenameType: 'str' }, {});
      blank.error.message.should.startWith('File: is blank');
      const ifExists = await failure('asset-download', { fuid, fuidType: 'num', output: 'file', filename: '/tmp/', filenameType: 'str', ifExists: 'merge' }, {});
      ifExists.error.message.should.startWith('If it exists: must be');
      (await failure('asset-subscribe', { action: 'get', subscriptionId: 'short', subscriptionIdType: 'str' }, {})).error.message.should.startWith('Id: must be 8 to 40');
      await helper.unload();
      await s.load(s.flow('asset-export', { fuid: '1', fuidType: 'num' }, { baseUrl: '' }));
      const server = await s.runFailing({});
      server.error.message.should.startWith('Base URL: is required');
      server.assetError.field.should.equal('baseUrl');
    });

    it('export: a fixed Revision that is not a number names the field without a msg property', async () => {
      const caught = await failure('asset-export', { fuid: '1', fuidType: 'num', rrn: 'latest', rrnType: 'str' }, {});
      caught.error.message.should.startWith('Revision: must be an integer');
    });

    it('subscribe: Callback (msg.subscription.callback) is required to register', async () => {
      const caught = await failure('asset-subscribe', { action: 'register', subscriptionId: 'label-test-1', subscriptionIdType: 'str', callback: '' }, {});
      caught.error.message.should.startWith('Callback (msg.subscription.callback) is required to register');
    });
  });
});
