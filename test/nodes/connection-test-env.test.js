'use strict';
// "Test connection" with values typed as ${NAME} (Node-RED's environment variable form, common in
// containers): the deployed node reads the variable, the dialog's test took the text itself as the
// base URL ("must start with http:// or https://"). Now the test reads a ${NAME} value as the node
// would (the running node's flow first, then Node-RED's environment), and names an unset variable.
// Over HTTP: a real Node-RED (test/e2e/lib/browser-node-red.js, no browser) and the emulator.
require('should');
const { startNodeRed } = require('../e2e/lib/browser-node-red');
const { startEmulator } = require('../../dist/emulator');

const SAVED = '__PWRD__';
const DEPLOYED = 'ce00000000000001';
const COOKIE = 'env-cookie-00001';

describe('Test connection: values typed as ${NAME} are read as the node reads them', function () {
  this.timeout(60000);
  let emulator, other, nr;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ port: 0, sessions: [{ value: COOKIE, permissions: ['events'] }] });
    other = await startEmulator({ port: 0, sessions: [] });
    nr = await startNodeRed({ env: { DAM_CT_URL: emulator.url, DAM_CT_OTHER_URL: other.url, DAM_CT_COOKIE: COOKIE } });
    const flows = [
      { id: 'ce00000000000000', type: 'tab', label: 'env' },
      { id: DEPLOYED, type: 'asset-server', name: 'deployed', baseUrl: '${DAM_CT_URL}', timeout: 10, credentials: { cookie: '${DAM_CT_COOKIE}' } }
    ];
    const res = await nr.deploy(flows);
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
    if (other) await other.close();
  });

  async function connectionTest(values) {
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ timeout: '10', rejectUnauthorized: true, tls: '', ...values })
    });
    res.status.should.equal(200);
    return res.json();
  }

  it('a new node: base URL and cookie as ${NAME}', async function () {
    const report = await connectionTest({ id: 'ce0000000000000a', baseUrl: '${DAM_CT_URL}', cookie: '${DAM_CT_COOKIE}' });
    report.result.should.equal('ok', report.message);
  });

  it('the deployed node with a changed timeout and its saved cookie: the base URL read from the variable is the deployed one', async function () {
    const report = await connectionTest({ id: DEPLOYED, baseUrl: '${DAM_CT_URL}', timeout: '9', cookie: SAVED });
    report.result.should.equal('ok', report.message);
  });

  it('the saved cookie never goes to another server named by a variable', async function () {
    const report = await connectionTest({ id: DEPLOYED, baseUrl: '${DAM_CT_OTHER_URL}', cookie: SAVED });
    report.should.containEql({ result: 'config', part: 'cookie' });
    other.requestsWith(COOKIE).should.equal(0);
  });

  it('an unset variable is named, with the field', async function () {
    const report = await connectionTest({ id: 'ce0000000000000b', baseUrl: '${DAM_CT_UNSET}', cookie: 'x' });
    report.should.containEql({ result: 'config', part: 'baseUrl' });
    report.message.should.match(/environment variable DAM_CT_UNSET, which is not set/);
    const cookie = await connectionTest({ id: 'ce0000000000000b', baseUrl: '${DAM_CT_URL}', cookie: '$(DAM_CT_UNSET)' });
    cookie.should.containEql({ result: 'config', part: 'cookie' });
    cookie.message.should.match(/DAM_CT_UNSET/);
  });
});

describe('Test connection: an unchanged node whose user name and password are ${NAME} uses its running session', function () {
  this.timeout(60000);
  const LOGIN_ID = 'ce00000000000021';
  let emulator, nr;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ port: 0, sessions: [], users: [{ name: 'robot', password: 'env-login-pass-9', permissions: ['events', 'add'] }] });
    nr = await startNodeRed({ env: { DAM_CT_URL: emulator.url, DAM_CT_USER: 'robot', DAM_CT_PASS: 'env-login-pass-9' } });
    const res = await nr.deploy([
      { id: 'ce00000000000020', type: 'tab', label: 'env login' },
      { id: LOGIN_ID, type: 'asset-server', name: 'login', baseUrl: '${DAM_CT_URL}', timeout: 10, loginEnabled: true, loginPreset: 'form',
        credentials: { username: '${DAM_CT_USER}', password: '${DAM_CT_PASS}' } }
    ]);
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
  });

  it('the first test logs in; the next one uses that session (no second login: a server with one session per user would end the node\'s own)', async function () {
    const test = async () => (await (await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: LOGIN_ID, baseUrl: '${DAM_CT_URL}', timeout: '10', rejectUnauthorized: true, tls: '', loginEnabled: true, loginPreset: 'form',
        username: '${DAM_CT_USER}', password: SAVED })
    })).json());
    (await test()).result.should.equal('ok');
    const logins = emulator.sessionStats().logins;
    (await test()).result.should.equal('ok');
    emulator.sessionStats().logins.should.equal(logins);
  });
});

describe('Test connection: a ${NAME} value is read only for a user who may deploy flows', function () {
  this.timeout(60000);
  const path = require('path');
  // Node-RED's own bcrypt (adminAuth password hashes), as the project does not depend on it directly.
  const bcrypt = require(require.resolve('bcryptjs', { paths: [path.dirname(require.resolve('node-red'))] }));
  const USERS = { admin: { password: 'env-admin-pass-1', permissions: '*' }, tester: { password: 'env-tester-pass-1', permissions: ['asset-server.write', 'flows.read'] } };
  let emulator, nr;

  before(async function () {
    this.timeout(90000);
    emulator = await startEmulator({ port: 0, sessions: [{ value: COOKIE, permissions: ['events'] }] });
    nr = await startNodeRed({
      env: { DAM_CT_URL: emulator.url, DAM_CT_COOKIE: COOKIE },
      settings: { adminAuth: { type: 'credentials', users: Object.entries(USERS).map(([username, u]) => ({ username, password: bcrypt.hashSync(u.password, 8), permissions: u.permissions })) } }
    });
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (emulator) await emulator.close();
  });

  async function connectionTestAs(user, values) {
    const login = await fetch(new URL('auth/token', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_id: 'node-red-admin', grant_type: 'password', scope: [].concat(USERS[user].permissions).join(' '), username: user, password: USERS[user].password })
    });
    login.status.should.equal(200, `login of ${user}`);
    const { access_token: token } = await login.json();
    const res = await fetch(new URL('dam-assets/connection-test', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ id: 'ce0000000000000c', timeout: '10', rejectUnauthorized: true, tls: '', ...values })
    });
    res.status.should.equal(200);
    return res.json();
  }

  it('a user with every permission: read', async function () {
    (await connectionTestAs('admin', { baseUrl: '${DAM_CT_URL}', cookie: '${DAM_CT_COOKIE}' })).result.should.equal('ok');
  });

  it('a user who may test connections but not deploy: refused, naming the field; a typed value still works', async function () {
    const sentBefore = emulator.requestsWith(COOKIE);
    const report = await connectionTestAs('tester', { baseUrl: emulator.url, cookie: '${DAM_CT_COOKIE}' });
    report.should.containEql({ result: 'config', part: 'cookie' });
    report.message.should.match(/only a user who may deploy flows/);
    emulator.requestsWith(COOKIE).should.equal(sentBefore);
    (await connectionTestAs('tester', { baseUrl: emulator.url, cookie: COOKIE })).result.should.equal('ok');
  });
});
