'use strict';
// kill -9 of the emulator process (the `dam-emulator` CLI) in the middle of subscription work:
// everything it acknowledged is there after a restart on the same data folder, and undelivered
// entries are delivered.
require('should');
const { startReceiver, eventually } = require('./delivery-receiver');
const { tmpDir, rmDir, request, uploadFile, spawnCli } = require('./support');

const SUBSCRIBE = '/review/api/events/assets/subscribe/';

const startCli = dataDir => spawnCli(['--port', '0', '--data', dataDir, '--retry-delay', '200ms', '--quiet']);

function kill9(child) {
  return new Promise(resolve => {
    if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('emulator subscriptions survive kill -9', function () {
  this.timeout(40000);
  let dir;
  let receiver;
  let running;

  beforeEach(async function () {
    dir = tmpDir();
    receiver = await startReceiver();
  });
  afterEach(async function () {
    if (running) await kill9(running.child);
    running = undefined;
    await receiver.close();
    rmDir(dir);
  });

  it('keeps every acknowledged registration and delivers every acknowledged change after kill -9', async function () {
    receiver.respond = () => 503; // nothing gets through before the kill
    running = await startCli(dir);
    const base = running.url;

    // registrations keep coming until the process dies: every one answered success must survive
    const acknowledged = [];
    let next = 0;
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const id = `kill-sub-${String(next++).padStart(4, '0')}`;
        try {
          const r = await request(base, 'POST', SUBSCRIBE + id, { form: [['callback', `${receiver.url}/hook?sub=${id}`], ['method', 'POST'], ['retryCount', '100'], ['watchPath', '* /inbox']] });
          if (r.json && r.json.success === true) acknowledged.push(id);
        } catch { /* the process died mid-request */ }
      }
    };
    const registrations = [worker(), worker(), worker(), worker()];
    await eventually(() => acknowledged.length >= 5, 10000, 'some registrations acknowledged');
    const registeredBeforeUpload = acknowledged.slice();
    const uploaded = (await uploadFile(base, '/inbox', 'before-kill.jpg', 'x')).json;
    uploaded.success.should.be.true(JSON.stringify(uploaded));
    const fuid = uploaded.data.fuids[0];
    await eventually(() => receiver.calls.length >= 1, 5000, 'a first (failing) callback');
    killed = true;
    await kill9(running.child);
    await Promise.all(registrations);

    receiver.respond = () => 200;
    running = await startCli(dir);
    for (const id of acknowledged) {
      const body = (await request(running.url, 'GET', SUBSCRIBE + id)).json;
      body.success.should.be.true(`${id} acknowledged before the kill but missing after it`);
      body.subscription.retryCount.should.equal(100);
    }
    // every subscription registered before the upload gets its entry, successfully, after the restart
    const deliveredTo = () => new Set(receiver.calls
      .filter(c => c.status === 200 && JSON.parse(c.body).data.entry.some(e => e.assetId === fuid))
      .map(c => JSON.parse(c.body).id));
    await eventually(() => registeredBeforeUpload.every(id => deliveredTo().has(id)), 15000, 'entries delivered after the restart');
    const { deliveries } = (await request(running.url, 'GET', `/emulator/deliveries?subscription=${registeredBeforeUpload[0]}`)).json;
    deliveries.some(d => d.state === 'succeeded' && d.entries.some(e => e.assetId === fuid)).should.be.true(JSON.stringify(deliveries));
  });
});
