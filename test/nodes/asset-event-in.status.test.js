'use strict';
// Issue 23 #10: asset-event-in's status was cut mid-sentence without a sign of it
// ("...has no public base URL, so no"). A cut status ends with an ellipsis.
require('should');
const helper = require('node-red-node-test-helper');
const eventIn = require('../../nodes/asset-event-in.js');
const server = require('../../nodes/asset-server.js');
const { shortStatus } = require('../../dist/nodes/asset-event-in/endpoint');

helper.init(require.resolve('node-red'));

describe('asset-event-in status text', function () {
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it('shortStatus: short texts as they are; long ones cut with an ellipsis', () => {
    shortStatus('sub-1 · last event 10:00:01').should.equal('sub-1 · last event 10:00:01');
    const long = 'server: the asset-server node has no public base URL, so no callback URL can be built';
    const cut = shortStatus(long);
    cut.length.should.be.belowOrEqual(60);
    cut.should.endWith('…');
    long.startsWith(cut.slice(0, -1)).should.be.true();
  });

  it('a managed node whose server has no Public URL: the status is cut with an ellipsis, the log has it whole', async () => {
    const flow = [
      { id: 's1', type: 'asset-server', name: 'dam', baseUrl: 'http://127.0.0.1:9', publicBaseUrl: '' },
      { id: 'n1', type: 'asset-event-in', path: '/dam/events', manage: true, server: 's1', wires: [[]] }
    ];
    await helper.load([server, eventIn], flow, { s1: { cookie: 'x' } });
    const n1 = helper.getNode('n1');
    const status = n1.status.lastCall.args[0];
    status.fill.should.equal('red');
    status.text.should.endWith('…');
    status.text.length.should.be.belowOrEqual(60);
    const logged = helper.log().args.map((a) => String(a[0] && a[0].msg)).join('\n');
    logged.should.match(/no public base URL, so no callback URL can be built/);
  });
});
