'use strict';
// Issue 23 #1, the DAM tab's half: the sidebar's subscription details (admin route
// dam-assets/subscriptions/:server/:id) flag a subscription whose callback points at an
// asset-event-in of this Node-RED that listens for another method. Over HTTP: a real Node-RED
// (test/e2e/lib/browser-node-red.js, no browser; httpNodeRoot /api) and the emulator.
require('should');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { startEmulator } = require('../../dist/emulator');

const COOKIE = 'JSESSIONID=local-dev';

describe('DAM tab: a subscription calling an asset-event-in with another method is flagged', function () {
  this.timeout(60000);
  let emulator, nr;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ host: '127.0.0.1', port: 0 });
    nr = await startNodeRed();
    const flows = [
      { id: 'dm00000000000000', type: 'tab', label: 'method' },
      { id: 'dm0000000000000s', type: 'asset-server', name: 'emu', baseUrl: emulator.url, timeout: 10, credentials: { cookie: COOKIE } },
      { id: 'dm0000000000000e', type: 'asset-event-in', z: 'dm00000000000000', name: 'changes', path: '/dam/events', method: 'post',
        server: 'dm0000000000000s', manage: false, x: 100, y: 40, wires: [[]] },
      // Both with their old defaults: the subscribe node sends no method (the server's GET).
      { id: 'dm0000000000000g', type: 'asset-subscribe', z: 'dm00000000000000', name: '', server: 'dm0000000000000s', action: 'register',
        subscriptionId: 'method-get-0001', subscriptionIdType: 'str', method: '', x: 100, y: 100, wires: [[]] },
      { id: 'dm0000000000000p', type: 'asset-subscribe', z: 'dm00000000000000', name: '', server: 'dm0000000000000s', action: 'register',
        subscriptionId: 'method-post-0001', subscriptionIdType: 'str', method: 'POST', x: 100, y: 160, wires: [[]] }
    ];
    const res = await nr.deploy(flows);
    [200, 204].should.containEql(res.status, res.text);
    // What the two asset-subscribe nodes register (the server stores it as sent).
    const callback = new URL('api/dam/events', nr.url).href;
    for (const [id, method] of [['method-get-0001', undefined], ['method-post-0001', 'POST']]) {
      const body = new URLSearchParams({ callback, watchPath: '* /inbox', ...(method ? { method } : {}) });
      const r = await fetch(`${emulator.url}/review/api/events/assets/subscribe/${id}`, {
        method: 'POST', headers: { Cookie: COOKIE, 'Content-Type': 'application/x-www-form-urlencoded' }, body
      });
      (await r.json()).success.should.be.true();
    }
    // The deploy's answer can come before its nodes are live (seen on a loaded machine: the route
    // answered 404 "no deployed asset-server"): wait for the state, not a time.
    for (const deadline = Date.now() + 60000; ; await new Promise(resolve => setTimeout(resolve, 100))) {
      const r = await fetch(new URL('dam-assets/subscriptions/dm0000000000000s/method-post-0001', nr.url));
      if (r.status !== 404) break;
      if (Date.now() > deadline) throw new Error(`the deployed flows are not live after 60 s: ${await r.text()}`);
    }
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
  });

  const details = async (id) => (await fetch(new URL(`dam-assets/subscriptions/dm0000000000000s/${id}`, nr.url))).json();

  it('GET (the server default) towards an asset-event-in listening for POST: flagged, naming the node, path and methods', async () => {
    const answer = await details('method-get-0001');
    answer.should.have.property('ok', true);
    answer.methodMismatch.should.eql({ nodeId: 'dm0000000000000e', nodeName: 'changes', path: '/dam/events', eventInMethod: 'POST', subscriptionMethod: 'GET' });
  });

  it('POST towards the same node: not flagged', async () => {
    const answer = await details('method-post-0001');
    answer.should.have.property('ok', true);
    (answer.methodMismatch === undefined).should.be.true();
  });
});
