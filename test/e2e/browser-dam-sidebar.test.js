'use strict';
const http = require('http');
/**
 * The DAM sidebar tab and the asset-server dialog's "Test connection", in headless Chromium
 * against a real Node-RED (test/e2e/lib/browser-node-red.js) and the emulator.
 *
 * Node-RED runs with adminAuth: `admin` (all permissions) and `viewer` ('read'). The flow
 * (deployed through the admin API) has an asset-server on the emulator, an asset-event-in
 * that owns its subscription, an asset-subscribe with a fixed id, an at-least-once asset-event-in
 * and an asset-hot-folder. Every action is checked
 * at the emulator. Screenshots go to test/e2e/screenshots/ (sidebar, dialog).
 */
const should = require('should');
const fs = require('fs');
const os = require('os');
const path = require('path');
// Node-RED's own bcrypt (adminAuth password hashes), as the project does not depend on it directly.
const bcrypt = require(require.resolve('bcryptjs', { paths: [path.dirname(require.resolve('node-red'))] }));

const { startNodeRed } = require('./lib/browser-node-red');
const { closeBrowser, chromiumOrSkip, CHROMIUM_ARGS, watchPageProblems, untranslatedKeys, screenshotPath } = require('./lib/browser-page');
const { startEmulator } = require('../../dist/emulator');
const { freePort, waitFor } = require('./support');

const SHOTS = path.join(__dirname, 'screenshots');
const COOKIE = 'sidebar-good-cookie';
const NO_EVENTS_COOKIE = 'sidebar-no-events';
const SECRET = 'sidebar-webhook-s3cret';
/** A user of the emulator who may log in (automatic login of a new asset-server). */
const LOGIN = { name: 'robot', password: 'sidebar-login-pass-7' };
const USERS = { admin: 'admin-pass-1', viewer: 'viewer-pass-1' };
const IDS = { tab: 'dam0000000000001', server: 'dam0000000000002', eventIn: 'dam0000000000003', subscribe: 'dam0000000000004', inboxIn: 'dam0000000000005', reject: 'dam0000000000006', hotFolder: 'dam0000000000007' };
const OWNED_ID = `nr-${IDS.eventIn}`;
const FIXED_ID = 'sidebar-fixed-0001';

describe('DAM sidebar tab and connection test in a real browser (Chromium)', function () {
  this.timeout(60000);
  let emulator, nr, browser, admin, viewer, adminToken, viewerToken;
  const hotDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-sidebar-hot-'));

  before(async function () {
    this.timeout(120000);
    const chromiumPath = chromiumOrSkip(this, 'the DAM sidebar browser test');
    emulator = await startEmulator({
      port: 0, retryDelayMs: 300,
      sessions: [{ value: COOKIE, permissions: ['events', 'add'] }, { value: NO_EVENTS_COOKIE, permissions: ['add'] }],
      users: [{ name: LOGIN.name, password: LOGIN.password, permissions: ['events', 'add'] }]
    });
    nr = await startNodeRed({
      settings: {
        adminAuth: {
          type: 'credentials',
          users: [
            { username: 'admin', password: bcrypt.hashSync(USERS.admin, 8), permissions: '*' },
            { username: 'viewer', password: bcrypt.hashSync(USERS.viewer, 8), permissions: 'read' }
          ]
        }
      }
    });
    adminToken = await token('admin');
    viewerToken = await token('viewer');
    // The fixed-id subscription exists on the server before the flow starts (asset-subscribe only reads it here).
    (await emulatorJson(`/review/api/events/assets/subscribe/${FIXED_ID}`, {
      method: 'POST', body: new URLSearchParams({ callback: 'http://127.0.0.1:9/unused', watchPath: '* /elsewhere', header: 'X-Token: fixed-sub-secret' })
    })).success.should.be.true();
    await deploy();
    await waitFor('the owned subscription on the emulator', async () => (await emulatorJson(subscribePath(OWNED_ID))).success, 15000);

    const { chromium } = require('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
    console.log(`      (Node-RED ${nr.version} on Node ${process.version}, Chromium ${browser.version()})`);
    admin = await openEditor('admin');
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
    if (emulator) await emulator.close();
    fs.rmSync(hotDir, { recursive: true, force: true });
  });

  // ---- helpers

  async function token(user) {
    const res = await fetch(new URL('auth/token', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_id: 'node-red-admin', grant_type: 'password', scope: user === 'admin' ? '*' : 'read', username: user, password: USERS[user] })
    });
    res.status.should.equal(200, `login of ${user}`);
    return (await res.json()).access_token;
  }

  function adminApi(pathname, init = {}, bearer = adminToken) {
    return fetch(new URL(pathname, nr.url), { ...init, headers: { Authorization: `Bearer ${bearer}`, ...(init.headers || {}) } });
  }

  function subscribePath(id) { return `/review/api/events/assets/subscribe/${id}`; }

  async function emulatorJson(pathname, init = {}, cookie = COOKIE) {
    const res = await fetch(emulator.url + pathname, { ...init, headers: { cookie: `JSESSIONID=${cookie}`, ...(init.headers || {}) } });
    return res.json();
  }

  async function deploy() {
    const publicBaseUrl = nr.url.replace(/\/$/, '');
    const flows = [
      { id: IDS.tab, type: 'tab', label: 'DAM sidebar' },
      {
        id: IDS.server, type: 'asset-server', name: 'emulator', baseUrl: emulator.url, publicBaseUrl, timeout: 10,
        rejectUnauthorized: true, credentials: { cookie: COOKIE }
      },
      {
        id: IDS.eventIn, type: 'asset-event-in', z: IDS.tab, name: 'inbox changes', method: 'post', path: '/dam/sidebar',
        manage: true, server: IDS.server, watchPath: ['* /inbox'], watchMetadata: [], credentials: { secret: SECRET },
        x: 160, y: 80, wires: [[]]
      },
      {
        id: IDS.subscribe, type: 'asset-subscribe', z: IDS.tab, name: 'read fixed', server: IDS.server, action: 'get',
        subscriptionId: FIXED_ID, subscriptionIdType: 'str', x: 160, y: 160, wires: [[]]
      },
      // Delivery at least once, and a flow that rejects every entry: one delivery, then parked.
      {
        id: IDS.inboxIn, type: 'asset-event-in', z: IDS.tab, name: 'at least once', method: 'post', path: '/dam/sidebar-inbox',
        manage: false, checkId: false, delivery: 'atLeastOnce', maxDeliveries: 1, rejectBackoff: 0, outputs: 2,
        x: 160, y: 240, wires: [[IDS.reject], []]
      },
      { id: IDS.reject, type: 'asset-event-ack', z: IDS.tab, name: 'reject', action: 'reject', x: 360, y: 240, wires: [[]] },
      {
        id: IDS.hotFolder, type: 'asset-hot-folder', z: IDS.tab, name: 'scans', server: IDS.server, folder: hotDir,
        untouchedSeconds: 0.2, rescanSeconds: 1, destination: '/hotfolder', destinationType: 'str', retries: 2, x: 160, y: 320, wires: [[], []]
      }
    ];
    const res = await nr.deploy(flows, { headers: { Authorization: `Bearer ${adminToken}` } });
    [200, 204].should.containEql(res.status, `deploy: ${res.text}`);
  }

  /** A browser context logged in as `user` through the editor's login form, with the editor loaded. */
  async function openEditor(user) {
    // Tall enough for the whole tab in one screenshot (docs/images/dam-sidebar.png).
    const context = await browser.newContext({ viewport: { width: 1300, height: 1150 } });
    const page = await context.newPage();
    const watched = watchPageProblems(page);
    await page.goto(nr.url);
    await page.locator('#node-dialog-login-username').fill(user);
    await page.locator('#node-dialog-login-password').fill(USERS[user]);
    await page.locator('#node-dialog-login-submit').click();
    await page.waitForFunction(() => window.RED && window.RED.nodes && $('.red-ui-header-toolbar').is(':visible') &&
      !$('#red-ui-loading-progress').is(':visible') && RED.workspaces.active(), null, { timeout: 60000 });
    // Before the login the editor's first requests answer 401: that is how it knows to show the form.
    const loggedIn = watched.mark();
    return { page, problems: { all: () => watched.since(loggedIn) } };
  }

  /** Opens the DAM tab by clicking it and waits for a fresh listing. */
  async function openTab(page) {
    // Node-RED 5: a button per tab in the bottom bar. Node-RED 4: beside the pinned tabs the
    // sidebar lists the others in its tab menu (the caret).
    await page.waitForFunction(() => document.querySelector('button[data-tab-id="dam-assets"], #red-ui-tab-dam-assets-link-button'));
    const button = page.locator('button[data-tab-id="dam-assets"]');
    const shortcut = page.locator('#red-ui-tab-dam-assets-link-button');
    if (await button.count()) {
      await button.click();
    } else if (await shortcut.isVisible()) {
      await shortcut.click();
    } else {
      await page.locator('#red-ui-sidebar .red-ui-tab-link-button-menu').click();
      await page.locator('.red-ui-menu-dropdown a:visible', { hasText: 'DAM assets' }).click();
    }
    await page.locator('.dam-sidebar[data-loaded]').waitFor({ state: 'visible' });
  }

  async function refresh(page) {
    const before = await page.locator('.dam-sidebar').getAttribute('data-loaded');
    await page.locator('.dam-refresh').click();
    await page.waitForFunction(b => $('.dam-sidebar').attr('data-loaded') !== b, before);
  }

  function item(page, kind, id) {
    return page.locator(`.dam-${kind}[data-id="${id}"]`);
  }

  async function counter(page, name) {
    return Number(await item(page, 'event-in', IDS.eventIn).locator(`tr[data-counter="${name}"] td`).nth(1).innerText());
  }

  async function shoot(page, name, locator) {
    await (locator || page).screenshot({ path: screenshotPath(SHOTS, name) });
  }

  // ---- the tab

  it('registers the plugin with Node-RED (GET /plugins lists it)', async function () {
    const res = await adminApi('plugins', { headers: { Accept: 'application/json' } });
    res.status.should.equal(200);
    const plugin = (await res.json()).find(p => p.id === '@dam-assets/node-red/dam-sidebar');
    should.exist(plugin, 'the dam-sidebar plugin is not listed');
    plugin.enabled.should.be.true();
    should.not.exist(plugin.err);
  });

  it('shows a DAM tab listing the server (connection ok), both subscriptions and the event-in node', async function () {
    const { page, problems } = admin;
    await openTab(page);
    const server = item(page, 'server', IDS.server);
    (await server.innerText()).should.containEql(emulator.url);
    await server.locator('.dam-check[data-result="ok"]').waitFor();
    (await server.locator('.dam-check').textContent()).should.match(/^ok \S/, 'badge and message are two words in the text');

    const owned = item(page, 'subscription', OWNED_ID);
    await owned.locator('[data-state="found"]').waitFor();
    const ownedText = await owned.innerText();
    ownedText.should.containEql('inbox changes').and.containEql('owns it').and.containEql('/dam/sidebar');
    ownedText.should.containEql('X-DAM-Secret: ***');
    ownedText.should.not.containEql(SECRET);

    const fixed = item(page, 'subscription', FIXED_ID);
    await fixed.locator('[data-state="found"]').waitFor();
    const fixedText = await fixed.innerText();
    fixedText.should.containEql('read fixed').and.containEql('X-Token: ***').and.not.containEql('fixed-sub-secret');
    (await fixed.locator('.dam-register').count()).should.equal(0, 'register again is only for owned subscriptions');

    const eventIn = item(page, 'event-in', IDS.eventIn);
    (await eventIn.innerText()).should.containEql('/dam/sidebar');
    await eventIn.locator('.dam-state').getByText('registered').waitFor();
    (await untranslatedKeys(page, '.dam-sidebar-tab', ['dam-sidebar'])).should.eql([], 'untranslated keys in the tab');
    const html = await page.locator('.dam-sidebar-tab').innerHTML();
    html.should.not.containEql(COOKIE).and.not.containEql(SECRET);
    should(problems.all()).eql([]);
  });

  it('moves the counters live as callbacks arrive (upload at the emulator, a callback with a wrong secret)', async function () {
    const { page, problems } = admin;
    const callbacks = await counter(page, 'callbacks');
    const form = new FormData();
    form.append('destination', '/inbox');
    form.append('wait', 'true');
    form.append('file', new Blob(['hello']), 'sidebar.txt');
    (await emulatorJson('/review/api/asset/upload', { method: 'POST', body: form })).success.should.be.true();
    await waitFor('the callbacks counter to move', async () => await counter(page, 'callbacks') > callbacks, 15000);
    (await counter(page, 'entriesEmitted')).should.be.above(0);

    const rejected = await counter(page, 'rejected-secret');
    const res = await fetch(new URL('api/dam/sidebar', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-DAM-Secret': 'wrong' }, body: JSON.stringify({ id: OWNED_ID, data: [] })
    });
    res.status.should.equal(401);
    await waitFor('the rejected counter to move', async () => await counter(page, 'rejected-secret') === rejected + 1, 10000);
    (await item(page, 'event-in', IDS.eventIn).locator('.dam-last-error').innerText()).should.containEql('401');
    // Times as the nodes' statuses show them (HH:MM:SS, 24 hours), whatever the browser's locale.
    (await item(page, 'event-in', IDS.eventIn).locator('[data-counter="lastCallback"] td').nth(1).innerText()).should.match(/^\d\d:\d\d:\d\d$/);
    await shoot(page, 'dam-sidebar', page.locator('#red-ui-sidebar'));
    await shoot(page, 'dam-sidebar-editor');
    should(problems.all()).eql([]);
  });

  it('refresh shows a subscription deleted elsewhere; register again puts it back on the server', async function () {
    const { page, problems } = admin;
    (await emulatorJson(subscribePath(OWNED_ID), { method: 'DELETE' })).success.should.be.true();
    await refresh(page);
    const owned = item(page, 'subscription', OWNED_ID);
    await owned.locator('[data-state="missing"]').waitFor();
    await owned.locator('.dam-register').click();
    await owned.locator('[data-state="found"]').waitFor({ timeout: 15000 });
    const details = await emulatorJson(subscribePath(OWNED_ID));
    details.success.should.be.true();
    details.subscription.callback.should.equal(`${nr.url}api/dam/sidebar`);
    should(problems.all()).eql([]);
  });

  it('delete asks for a confirmation, then deletes the subscription on the server', async function () {
    const { page, problems } = admin;
    const fixed = item(page, 'subscription', FIXED_ID);
    await fixed.locator('.dam-delete').click();
    const confirm = page.locator('.dam-confirm-delete');
    await confirm.click({ trial: true }); // waits until the notification has slid in
    await shoot(page, 'dam-sidebar-delete-confirm');
    (await emulatorJson(subscribePath(FIXED_ID))).success.should.be.true('nothing is deleted before the confirmation');
    await confirm.click();
    await fixed.locator('[data-state="missing"]').waitFor({ timeout: 15000 });
    (await emulatorJson(subscribePath(FIXED_ID))).success.should.be.false();
    should(problems.all()).eql([]);
  });

  // ---- the connection test in the dialog

  async function openServerDialog(page) {
    // Earlier notifications (deleted, registered) must not cover the dialog's screenshots.
    await page.locator('.red-ui-notification').first().waitFor({ state: 'detached', timeout: 10000 }).catch(() => {});
    await page.evaluate(id => RED.editor.editConfig('', 'asset-server', id), IDS.server);
    await page.locator('#node-config-dam-test').waitFor({ state: 'visible' });
  }

  async function testConnection(page, values) {
    if (values.baseUrl !== undefined) await page.locator('#node-config-input-baseUrl').fill(values.baseUrl);
    if (values.cookie !== undefined) await page.locator('#node-config-input-cookie').fill(values.cookie);
    await page.locator('#node-config-dam-test').click();
    const result = page.locator('#node-config-dam-test-result');
    await page.waitForFunction(() => {
      const r = $('#node-config-dam-test-result').attr('data-result');
      return r && r !== '';
    });
    const kind = await result.getAttribute('data-result');
    const text = await result.innerText();
    await page.evaluate(() => $('#node-config-dam-test-result').attr('data-result', ''));
    return { kind, text };
  }

  it('tests the connection with the values typed in the dialog: ok, auth, permission, path, network', async function () {
    const { page, problems } = admin;
    await openServerDialog(page);
    // Saved cookie (the field shows the placeholder): the deployed node's cookie is used.
    (await testConnection(page, {})).kind.should.equal('ok');
    // Badge and message are two words in the text, not "okserver reached".
    (await page.evaluate(() => $('#node-config-dam-test-result').text())).should.match(/^ok \S/);
    await shoot(page, 'asset-server-test-ok', page.locator('.red-ui-tray').last());

    // The saved cookie goes to the deployed server only, never to a host typed in the dialog.
    const cookiesSeen = [];
    const elsewhere = http.createServer((req, res) => { cookiesSeen.push(req.headers.cookie); res.end('{}'); });
    await new Promise((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const other = await testConnection(page, { baseUrl: `http://127.0.0.1:${elsewhere.address().port}` });
      other.kind.should.equal('config');
      other.text.should.match(/type the cookie again/);
      // Only the reachability probe went there, without any cookie (issue 23 #5).
      cookiesSeen.filter((c) => c !== undefined).should.eql([]);
    } finally {
      elsewhere.close();
    }
    await page.locator('#node-config-input-baseUrl').fill(emulator.url);

    const auth = await testConnection(page, { cookie: 'JSESSIONID=not-a-session' });
    auth.kind.should.equal('auth');
    auth.text.should.match(/cookie/i).and.not.containEql('not-a-session');
    await shoot(page, 'asset-server-test-auth', page.locator('.red-ui-tray').last());

    (await testConnection(page, { cookie: NO_EVENTS_COOKIE })).kind.should.equal('permission');
    (await testConnection(page, { cookie: COOKIE })).kind.should.equal('ok');
    (await testConnection(page, { baseUrl: `${emulator.url}/wrong-prefix` })).kind.should.equal('path');

    const nothing = `http://127.0.0.1:${await freePort()}`;
    const network = await testConnection(page, { baseUrl: nothing });
    network.kind.should.equal('network');
    network.text.should.match(/base URL/i);
    await shoot(page, 'asset-server-test-network', page.locator('.red-ui-tray').last());

    await page.locator('#node-config-dialog-cancel').click();
    await page.locator('#node-config-dam-test').waitFor({ state: 'detached' });
    should(problems.all()).eql([]);
  });

  it('tests a new asset-server with automatic login typed in its dialog (no cookie): logs in, then ok', async function () {
    const { page, problems } = admin;
    await page.locator('.red-ui-notification').first().waitFor({ state: 'detached', timeout: 10000 }).catch(() => {});
    await page.evaluate(() => RED.editor.editConfig('', 'asset-server', '_ADD_'));
    await page.locator('#node-config-dam-test').waitFor({ state: 'visible' });
    await page.locator('#node-config-input-baseUrl').fill(emulator.url);
    (await page.locator('#node-config-input-cookie').inputValue()).should.equal('');
    await page.locator('#node-config-input-loginEnabled').check();
    (await page.locator('#node-config-input-loginPreset').inputValue()).should.equal('utility');
    await page.locator('#node-config-input-username').fill(LOGIN.name);
    await page.locator('#node-config-input-password').fill(LOGIN.password);

    const logins = emulator.sessionStats().logins;
    const ok = await testConnection(page, {});
    ok.kind.should.equal('ok', ok.text);
    ok.text.should.match(/login worked/);
    emulator.sessionStats().logins.should.equal(logins + 1, 'the check logged in at the emulator');
    await page.locator('#node-config-dam-test-result').scrollIntoViewIfNeeded();
    await shoot(page, 'asset-server-test-login-ok', page.locator('.red-ui-tray').last());

    await page.locator('#node-config-input-password').fill(`${LOGIN.password}-wrong`);
    const failed = await testConnection(page, {});
    failed.kind.should.equal('login');
    failed.text.should.match(/login failed/).and.match(/user name and password/).and.match(/user name or password refused/);
    failed.text.should.not.containEql(LOGIN.password);
    await page.locator('#node-config-dam-test-result').scrollIntoViewIfNeeded();
    await shoot(page, 'asset-server-test-login-failed', page.locator('.red-ui-tray').last());

    await page.locator('#node-config-dialog-cancel').click();
    await page.locator('#node-config-dam-test').waitFor({ state: 'detached' });
    should(problems.all()).eql([]);
  });

  it('lists the parked entries of an at-least-once node, with deliver again and discard', async function () {
    const { page, problems } = admin;
    const parkedView = async () => (await (await adminApi(`dam-assets/event-in/${IDS.inboxIn}/parked`)).json());
    const res = await fetch(new URL('api/dam/sidebar-inbox', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ success: true, data: { entry: [{ assetId: 77, rrn: 5, path: '/inbox/parked.txt', owner: 'x', action: 'modified' }] }, id: 'sidebar-inbox' })
    });
    res.status.should.equal(200);
    await waitFor('the entry parked', async () => (await parkedView()).parked.length === 1, 15000);
    const first = (await parkedView()).parked[0];
    await refresh(page);
    const inbox = item(page, 'event-in', IDS.inboxIn);
    const entry = inbox.locator(`.dam-parked-entry[data-entry="${first.id}"]`);
    await entry.waitFor();
    (await entry.innerText()).should.containEql('77').and.containEql('/inbox/parked.txt').and.containEql('rejected');
    (await untranslatedKeys(page, '.dam-sidebar-tab', ['dam-sidebar'])).should.eql([], 'untranslated keys in the tab');
    await shoot(page, 'dam-sidebar-parked', page.locator('#red-ui-sidebar'));
    // Deliver again: back in line, delivered, rejected, parked again (a new parking time).
    await entry.locator('.dam-deliver-again').click();
    await waitFor('delivered again and parked again', async () => {
      const view = await parkedView();
      return view.parked.length === 1 && view.parked[0].parkedAt !== first.parkedAt;
    }, 15000);
    await refresh(page);
    await inbox.locator(`.dam-parked-entry[data-entry="${first.id}"] .dam-discard`).click();
    await waitFor('discarded', async () => (await parkedView()).counts.stored === 0, 15000);
    await inbox.locator('.dam-parked-entry').waitFor({ state: 'detached' });
    should(problems.all()).eql([]);
  });

  it('shows a hot folder with its counters, and "server unavailable" while the server answers busy', async function () {
    const { page, problems } = admin;
    await refresh(page);
    const hot = item(page, 'hot-folder', IDS.hotFolder);
    (await hot.innerText()).should.containEql('scans').and.containEql(hotDir);
    // Busy with a Retry-After beyond the test: the folder stays held (the next probe in 5 minutes).
    emulator.injectBusy({ count: 1, status: 503, retryAfterSeconds: 3600, pathContains: '/asset/upload' });
    fs.writeFileSync(path.join(hotDir, 'held.txt'), 'waits out the busy server');
    // The node's state first (the overview route), then what the tab shows of it after a refresh.
    let view;
    await waitFor('the hot folder held', async () => {
      const overview = await (await adminApi('dam-assets/overview')).json();
      view = overview.hotFolders.find(h => h.id === IDS.hotFolder);
      return view && view.serverUnavailable !== undefined;
    }, 30000);
    view.serverUnavailable.should.equal('503: server busy, retry');
    await refresh(page);
    await hot.locator('.dam-state').getByText('server unavailable (503: server busy, retry): files wait in the folder').waitFor({ timeout: 20000 });
    await waitFor('one file waiting', async () => (await hot.locator('tr[data-counter="waiting"] td').nth(1).innerText()) === '1', 10000);
    (await hot.locator('tr[data-counter="failed"] td').nth(1).innerText()).should.equal('0');
    fs.existsSync(path.join(hotDir, 'held.txt')).should.be.true();
    (await untranslatedKeys(page, '.dam-sidebar-tab', ['dam-sidebar'])).should.eql([], 'untranslated keys in the tab');
    await shoot(page, 'dam-sidebar-hot-folder', hot);
    should(problems.all()).eql([]);
  });

  // ---- a user with read permission only

  it('gives a read-only user the views but not the actions (buttons absent, routes refused)', async function () {
    viewer = await openEditor('viewer');
    const { page, problems } = viewer;
    await openTab(page);
    await item(page, 'server', IDS.server).locator('.dam-check[data-result="ok"]').waitFor();
    await item(page, 'subscription', OWNED_ID).locator('[data-state="found"]').waitFor();
    (await item(page, 'event-in', IDS.eventIn).locator('tr[data-counter="callbacks"]').count()).should.equal(1);
    (await page.locator('.dam-sidebar .dam-delete, .dam-sidebar .dam-register, .dam-sidebar .dam-deliver-again, .dam-sidebar .dam-discard').count()).should.equal(0);
    await shoot(page, 'dam-sidebar-read-only', page.locator('#red-ui-sidebar'));
    await openServerDialog(page);
    (await page.locator('#node-config-dam-test').isDisabled()).should.be.true('Test connection needs asset-server.write');
    await page.locator('#node-config-dialog-cancel').click();
    should(problems.all()).eql([]);

    (await adminApi('dam-assets/overview', {}, viewerToken)).status.should.equal(200);
    // Node-RED's needsPermission answers 401 to a logged-in user who lacks the permission.
    (await adminApi(`dam-assets/subscriptions/${IDS.server}/${OWNED_ID}`, { method: 'DELETE' }, viewerToken)).status.should.equal(401);
    (await adminApi(`dam-assets/event-in/${IDS.eventIn}/register`, { method: 'POST' }, viewerToken)).status.should.equal(401);
    (await adminApi(`dam-assets/event-in/${IDS.inboxIn}/parked`, {}, viewerToken)).status.should.equal(200);
    (await adminApi(`dam-assets/event-in/${IDS.inboxIn}/parked/1`, { method: 'DELETE' }, viewerToken)).status.should.equal(401);
    (await adminApi(`dam-assets/event-in/${IDS.inboxIn}/parked/1/deliver`, { method: 'POST' }, viewerToken)).status.should.equal(401);
    (await adminApi('dam-assets/connection-test', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ id: IDS.server, baseUrl: emulator.url, cookie: '__PWRD__' })
    }, viewerToken)).status.should.equal(401);
    (await fetch(new URL('dam-assets/overview', nr.url))).status.should.equal(401, 'no token: refused');
    (await emulatorJson(subscribePath(OWNED_ID))).success.should.be.true('the refused delete left the subscription');
  });
});
