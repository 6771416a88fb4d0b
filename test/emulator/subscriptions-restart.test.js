'use strict';
// kill -9 of the emulator process (the `dam-emulator` CLI) in the middle of subscription work:
// everything it acknowledged is there after a restart on the same data folder, and undelivered
// entries are delivered.
require('should');
const path = require('path');
const { spawn } = require('child_process');
const { startReceiver, tempDir, removeDir, eventually } = require('./delivery-receiver');

const CLI = path.join(__dirname, '../../dist/emulator/cli.js');
const COOKIE = 'JSESSIONID=local-dev';
const SUBSCRIBE = '/review/api/events/assets/subscribe/';

function startCli(dataDir) {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--data', dataDir, '--retry-delay', '200ms', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`emulator did not start: ${out}`)); }, 10000);
    child.stdout.on('data', d => {
      out += d;
      const m = /dam-emulator listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1] }); }
    });
    child.stderr.on('data', d => { out += d; });
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`emulator exited (${code}): ${out}`)); });
  });
}

function kill9(child) {
  return new Promise(resolve => {
    if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function post(url, form) {
  const res = await fetch(url, { method: 'POST', headers: { Cookie: COOKIE, 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
  return res.json();
}

async function upload(base, destination, name, content) {
  const form = new FormData();
  form.append('destination', destination);
  form.append('wait', 'true');
  form.append('file', new Blob([content]), name);
  const res = await fetch(`${base}/review/api/asset/upload`, { method: 'POST', headers: { Cookie: COOKIE }, body: form });
  return res.json();
}

describe('emulator subscriptions survive kill -9', function () {
  this.timeout(40000);
  let dir;
  let receiver;
  let running;

  beforeEach(async function () {
    dir = tempDir();
    receiver = await startReceiver();
  });
  afterEach(async function () {
    if (running) await kill9(running.child);
    running = undefined;
    await receiver.close();
    removeDir(dir);
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
          const r = await post(base + SUBSCRIBE + id, [['callback', `${receiver.url}/hook?sub=${id}`], ['method', 'POST'], ['retryCount', '100'], ['watchPath', '* /inbox']]);
          if (r.success === true) acknowledged.push(id);
        } catch { /* the process died mid-request */ }
      }
    };
    const registrations = [worker(), worker(), worker(), worker()];
    await eventually(() => acknowledged.length >= 5, 10000, 'some registrations acknowledged');
    const registeredBeforeUpload = acknowledged.slice();
    const uploaded = await upload(base, '/inbox', 'before-kill.jpg', 'x');
    uploaded.success.should.be.true(JSON.stringify(uploaded));
    const fuid = uploaded.data.fuids[0];
    await eventually(() => receiver.calls.length >= 1, 5000, 'a first (failing) callback');
    killed = true;
    await kill9(running.child);
    await Promise.all(registrations);

    receiver.respond = () => 200;
    running = await startCli(dir);
    for (const id of acknowledged) {
      const res = await fetch(running.url + SUBSCRIBE + id, { headers: { Cookie: COOKIE } });
      const body = await res.json();
      body.success.should.be.true(`${id} acknowledged before the kill but missing after it`);
      body.subscription.retryCount.should.equal(100);
    }
    // every subscription registered before the upload gets its entry, successfully, after the restart
    const deliveredTo = () => new Set(receiver.calls
      .filter(c => c.status === 200 && JSON.parse(c.body).data.entry.some(e => e.assetId === fuid))
      .map(c => JSON.parse(c.body).id));
    await eventually(() => registeredBeforeUpload.every(id => deliveredTo().has(id)), 15000, 'entries delivered after the restart');
    const res = await fetch(`${running.url}/emulator/deliveries?subscription=${registeredBeforeUpload[0]}`, { headers: { Cookie: COOKIE } });
    const { deliveries } = await res.json();
    deliveries.some(d => d.state === 'succeeded' && d.entries.some(e => e.assetId === fuid)).should.be.true(JSON.stringify(deliveries));
  });
});
