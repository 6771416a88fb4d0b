'use strict';
// The DAM sidebar's delete of a subscription an asset-event-in manages (DELETE
// dam-assets/subscriptions/:server/:id, real Node-RED, the emulator): the node no longer says
// "registered" (changes stopped arriving while it stayed green); "register again" registers it.
require('should');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { startEmulator } = require('../../dist/emulator');

describe('DAM sidebar: deleting a subscription a node manages shows on the node', function () {
  this.timeout(60000);
  let nr, emulator;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ host: '127.0.0.1', port: 0, retryDelayMs: 200 });
    nr = await startNodeRed();
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
  });

  const overviewOf = async (id) => (await (await fetch(new URL('dam-assets/overview', nr.url))).json()).eventIns.find((e) => e.id === id);
  async function until(what, check) {
    for (let i = 0; i < 400; i++) {
      const value = await check();
      if (value) return value;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`not reached: ${what}`);
  }
  const registered = async () => (await (await fetch(`${emulator.url}/review/api/events/assets/subscribe/sidebar-del-01`, { headers: { Cookie: 'JSESSIONID=local-dev' } })).json()).success;

  it('the node shows "deleted in the DAM tab"; register again brings it back', async function () {
    await nr.deploy([
      { id: 'tab1', type: 'tab', label: 'sidebar delete' },
      { id: 'srv1', type: 'asset-server', baseUrl: emulator.url, publicBaseUrl: 'http://127.0.0.1:9', timeout: 5, credentials: { cookie: 'local-dev' } },
      { id: 'ev1', type: 'asset-event-in', z: 'tab1', x: 100, y: 100, path: '/dam/sidebar-del', method: 'post', manage: true, server: 'srv1',
        subscriptionId: 'sidebar-del-01', watchPath: ['* /inbox'], wires: [[]] }
    ]);
    await until('registered', async () => (await overviewOf('ev1'))?.owned?.state === 'registered');
    const res = await (await fetch(new URL('dam-assets/subscriptions/srv1/sidebar-del-01', nr.url), { method: 'DELETE' })).json();
    res.ok.should.be.true();
    (await registered()).should.be.false();
    const owned = await until('shown as deleted', async () => { const o = (await overviewOf('ev1')).owned; return o.state === 'failed' && o; });
    owned.error.should.match(/deleted in the DAM tab/);
    (await (await fetch(new URL('dam-assets/event-in/ev1/register', nr.url), { method: 'POST' })).json()).ok.should.be.true();
    (await registered()).should.be.true();
    (await overviewOf('ev1')).owned.state.should.equal('registered');
  });
});
