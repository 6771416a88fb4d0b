'use strict';
// Issue 22 item 8 in a real Node-RED with adminAuth, httpNodeRoot and httpAdminRoot both `/` (the
// default): asset-event-in endpoints at /auth/token and /flows (POST) are refused at deploy with
// an error naming the path and the route, and the editor keeps working: logins and deploys go on.
// Before the fix the endpoint's body guard made the editor API skip the body of every login
// (500) and deploy (400): the user was locked out of the editor.
require('should');
const bcrypt = require('bcryptjs');
const { launchNodeRed } = require('./lib/rig');
const { waitFor, deployStarted } = require('./lib/support');

const PASSWORD = 'clash-admin-pw-4Rt';

describe('asset-event-in cannot lock the user out of the editor (issue 22 item 8)', function () {
  this.timeout(60000);
  let rig;

  before(async function () {
    rig = await launchNodeRed({
      // Anonymous users may read (the launcher waits for GET /settings); deploying needs a login.
      extraSettings: { adminAuth: { type: 'credentials', default: { permissions: 'read' },
        users: [{ username: 'admin', password: bcrypt.hashSync(PASSWORD, 8), permissions: '*' }] } }
    });
  });
  after(async function () { if (rig) await rig.close(); });

  async function login() {
    const res = await fetch(`${rig.url}/auth/token`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_id: 'node-red-editor', grant_type: 'password', scope: '*', username: 'admin', password: PASSWORD })
    });
    const text = await res.text();
    return { status: res.status, token: res.ok ? JSON.parse(text).access_token : undefined, text };
  }

  async function deploy(token, flows) {
    const before = rig.lines.length;
    const res = await fetch(`${rig.url}/flows`, {
      method: 'POST', body: JSON.stringify(flows),
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, 'Node-RED-Deployment-Type': 'full' }
    });
    const text = await res.text();
    if (res.ok) await waitFor('the deployed flows started', () => deployStarted(rig.lines, before), 30000, 50);
    return { status: res.status, text };
  }

  const flows = (extra = '') => [
    { id: 'clash-tab-00000001', type: 'tab', label: `clash ${extra}` },
    { id: 'clash-in-000000001', type: 'asset-event-in', z: 'clash-tab-00000001', name: 'on /auth/token', method: 'post', path: '/auth/token', wires: [[]] },
    { id: 'clash-in-000000002', type: 'asset-event-in', z: 'clash-tab-00000001', name: 'on /flows', method: 'post', path: 'flows', wires: [[]] },
    { id: 'clash-in-000000003', type: 'asset-event-in', z: 'clash-tab-00000001', name: 'fine', method: 'post', path: '/dam/events', wires: [[]] }
  ];

  it('endpoints at /auth/token and /flows are refused naming the route; logins and deploys still work', async function () {
    const first = await login();
    first.status.should.equal(200, first.text);
    (await deploy(first.token, flows('one'))).status.should.be.within(200, 204);
    await waitFor('the refusals in the log', () =>
      rig.lines.some((l) => /on \/auth\/token/.test(l) && /path: collides with the editor's route \/auth/.test(l)) &&
      rig.lines.some((l) => /on \/flows/.test(l) && /path: collides with the editor's route \/flows/.test(l)), 10000, 50);
    // The editor still works: a new login, a second deploy, the flows read back.
    const again = await login();
    again.status.should.equal(200, again.text);
    const second = await deploy(again.token, flows('two'));
    second.status.should.be.within(200, 204, second.text);
    const read = await fetch(`${rig.url}/flows`, { headers: { Authorization: `Bearer ${again.token}` } });
    (await read.json()).some((n) => n.label === 'clash two').should.be.true();
    // The endpoint with a path of its own works.
    const hook = await fetch(`${rig.url}/dam/events`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ success: true, data: { entry: [] } }) });
    hook.status.should.equal(200);
  });
});
