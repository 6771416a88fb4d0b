'use strict';
// Issue 23 #5: "Test connection" after a base URL typo said "check the cookie: cookie: type the
// cookie again ..." (the saved cookie only goes to the deployed base URL), and the real problem
// (host not found) showed only after retyping the cookie. Now the base URL is tried first,
// without cookie or login, and the answer says what is wrong with it; no field named twice.
// Over HTTP: a real Node-RED (test/e2e/lib/browser-node-red.js, no browser) and the emulator.
require('should');
const net = require('net');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { startEmulator } = require('../../dist/emulator');

const SAVED = '__PWRD__';
const DEPLOYED = 'cr00000000000001';

describe('Test connection: the base URL is checked first, without the cookie', function () {
  this.timeout(60000);
  let emulator, nr, closedPort;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ port: 0, sessions: [{ value: 'reach-cookie-0001', permissions: ['events'] }] });
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = probe.address().port;
    await new Promise((resolve) => probe.close(resolve));
    nr = await startNodeRed();
    const flows = [
      { id: 'cr00000000000000', type: 'tab', label: 'reachability' },
      { id: DEPLOYED, type: 'asset-server', name: 'deployed', baseUrl: emulator.url, timeout: 10, credentials: { cookie: 'reach-cookie-0001' } }
    ];
    const res = await nr.deploy(flows);
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
  });

  async function connectionTest(values) {
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: DEPLOYED, timeout: '10', rejectUnauthorized: true, tls: '', cookie: SAVED, ...values })
    });
    res.status.should.equal(200);
    return res.json();
  }

  it('a host name typo with the saved cookie: "host name not found", naming the base URL, not the cookie', async function () {
    const report = await connectionTest({ baseUrl: 'http://locahost.invalid:8873' });
    report.should.containEql({ result: 'network', part: 'baseUrl' });
    report.message.should.match(/host name not found/);
    report.message.should.containEql('http://locahost.invalid:8873');
    report.message.should.not.match(/cookie/);
  });

  it('a port where nothing listens: "connection refused"', async function () {
    const report = await connectionTest({ baseUrl: `http://127.0.0.1:${closedPort}`, cookie: 'typed-cookie' });
    report.should.containEql({ result: 'network', part: 'baseUrl' });
    report.message.should.match(/connection refused/);
  });

  it('a base URL that is not a URL: says so once, without repeating the field', async function () {
    const report = await connectionTest({ baseUrl: 'locahost:8873' });
    report.should.containEql({ result: 'config', part: 'baseUrl' });
    report.message.should.not.match(/^baseUrl:/);
    report.message.should.match(/http:\/\/ or https:\/\//);
  });

  it('a reachable other server with the saved cookie: "type the cookie again", said once', async function () {
    const other = await startEmulator({ port: 0, sessions: [] });
    try {
      const report = await connectionTest({ baseUrl: other.url });
      report.should.containEql({ result: 'config', part: 'cookie' });
      report.message.should.match(/^type the cookie again/);
      (report.message.match(/cookie:/g) || []).length.should.equal(0);
      // The probe went there without any cookie: the saved one never leaves for another server.
      other.requestsWith("reach-cookie-0001").should.equal(0);
    } finally {
      await other.close();
    }
  });

  it('the deployed base URL and the saved cookie: ok', async function () {
    (await connectionTest({ baseUrl: emulator.url })).result.should.equal('ok');
  });
});
