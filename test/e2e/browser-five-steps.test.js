'use strict';
/**
 * The README's "A first flow in five steps", clicked through in the real editor (headless
 * Chromium through playwright-core, a real Node-RED with this package, the emulator), the way a
 * new user does it: nodes dragged from the palette, wires drawn from port to port, dialogs filled
 * in, the + next to Server, Deploy, the inject button. Each step's picture goes to
 * test/e2e/screenshots/five-steps/, or to docs/images/ with DAM_DOCS_IMAGES=1 (what
 * `npm run screenshots` does; the README shows them).
 *
 * Checks what the README promises: the + adds the server and picks it; a node dropped in later
 * has the only server picked; the debug sidebar shows the answer with the fuid; msg.fuid is set;
 * the download needs nothing filled in and gives the bytes back.
 */
require('should');
const path = require('path');
const { startNodeRed } = require('./lib/browser-node-red');
const { closeBrowser, chromiumOrSkip, CHROMIUM_ARGS, watchPageProblems, screenshotPath } = require('./lib/browser-page');
const { startEmulator } = require('../../dist/emulator');

const SHOTS = process.env.DAM_DOCS_IMAGES === '1' ? path.join(__dirname, '..', '..', 'docs', 'images')
  : path.join(__dirname, 'screenshots', 'five-steps');

describe('README: a first flow in five steps, clicked through in Chromium', function () {
  this.timeout(60000);
  let nr, emulator, browser, page, problems;

  before(async function () {
    this.timeout(120000);
    const chromiumPath = chromiumOrSkip(this, 'the five-step browser test');
    const { chromium } = require('playwright-core');
    emulator = await startEmulator({ host: '127.0.0.1', port: 0 }); // the session local-dev, as `npx dam-emulator`
    nr = await startNodeRed();
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 800 } });
    page = await context.newPage();
    problems = watchPageProblems(page);
    await page.goto(nr.url);
    await page.waitForFunction(() => window.RED && RED.workspaces && RED.workspaces.active() &&
      $('.red-ui-header-toolbar').is(':visible') && !$('#red-ui-loading-progress').is(':visible'), null, { timeout: 60000 });
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
    if (emulator) await emulator.close();
  });

  /** A picture of the editor as the user sees it: no stacked notifications, the flow's top left corner in view. */
  async function shoot(name, { debugTab = false } = {}) {
    await page.evaluate((showDebug) => {
      $('.red-ui-notification').remove();
      $('#red-ui-workspace-chart').scrollLeft(0).scrollTop(0);
      if (showDebug) RED.sidebar.show('debug');
    }, debugTab);
    await page.screenshot({ path: screenshotPath(SHOTS, name) });
  }

  /** Ids of the nodes of `type` on the active flow, in the order they were added. */
  const idsOf = (type) => page.evaluate((t) => RED.nodes.filterNodes({ z: RED.workspaces.active(), type: t }).map((n) => n.id), type);

  /** Drags a node from the palette onto the workspace at (x, y) of the chart; returns its id. */
  async function dragFromPalette(type, x, y) {
    const before = await idsOf(type);
    const entry = page.locator(`.red-ui-palette-node[data-palette-type="${type}"]`);
    await entry.scrollIntoViewIfNeeded();
    const from = await entry.boundingBox();
    const chart = await page.locator('#red-ui-workspace-chart').boundingBox();
    await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
    await page.mouse.down();
    await page.mouse.move(chart.x + x, chart.y + y, { steps: 12 });
    await page.mouse.up();
    const after = await idsOf(type);
    const added = after.filter((id) => !before.includes(id));
    added.length.should.equal(1, `dragging ${type} from the palette added ${added.length} node(s)`);
    return added[0];
  }

  /** Draws a wire from a node's output port to another node's input port. */
  async function wire(fromId, toId) {
    const out = await page.locator(`[id="${fromId}"] .red-ui-flow-port-output`).first().boundingBox();
    const into = await page.locator(`[id="${toId}"] .red-ui-flow-port-input`).first().boundingBox();
    await page.mouse.move(out.x + out.width / 2, out.y + out.height / 2);
    await page.mouse.down();
    await page.mouse.move(into.x + into.width / 2, into.y + into.height / 2, { steps: 8 });
    await page.mouse.up();
    const linked = await page.evaluate(([a, b]) => RED.nodes.filterLinks({ source: { id: a }, target: { id: b } }).length, [fromId, toId]);
    linked.should.equal(1, `no wire from ${fromId} to ${toId}`);
  }

  async function waitForTray() {
    await page.locator('.red-ui-tray').last().waitFor({ state: 'visible' });
    let last = null;
    for (let i = 0; i < 20; i++) {
      const box = await page.locator('.red-ui-tray').last().boundingBox();
      const now = box && `${Math.round(box.x)},${Math.round(box.width)}`;
      if (now && now === last) break;
      last = now;
      await page.waitForTimeout(150);
    }
  }

  /**
   * Opens a node's dialog with a double-click on it. The editor counts a double-click only when its
   * two mousedowns are at least 1 ms apart (view.js nodeMouseUp: `clickElapsed > 0`); Playwright's
   * dblclick can send both in the same millisecond, which selects the node and opens nothing. The
   * delay holds each press 20 ms, so the second mousedown comes 20 ms or more after the first.
   */
  async function open(id) {
    await page.locator(`[id="${id}"] .red-ui-flow-node`).first().dblclick({ delay: 20 });
    await page.locator('#node-dialog-ok').waitFor({ state: 'visible' });
    await waitForTray();
  }

  async function done() {
    await page.locator('#node-dialog-ok').click();
    await page.locator('#node-dialog-ok').waitFor({ state: 'detached' });
  }

  async function deploy() {
    await page.locator('#red-ui-header-button-deploy').click();
    await page.waitForFunction(() => !$('#red-ui-header-button-deploy').hasClass('disabled') === false || !RED.nodes.dirty(), null, { timeout: 20000 });
    await page.waitForFunction(() => !RED.nodes.dirty(), null, { timeout: 20000 });
    // The editor is told "deployed" before the flows start: an inject clicked at once can get 404.
    await nr.started(await page.evaluate(() => RED.nodes.version()));
  }

  async function clickInject(id) {
    await page.locator(`[id="${id}"] .red-ui-flow-node-button`).first().click();
  }

  /** Texts of the debug sidebar's messages. */
  const debugTexts = () => page.locator('.red-ui-debug-msg').allInnerTexts();

  let ids = {};

  it('step 1: the emulator runs (npx dam-emulator): the editor is open', function () {
    emulator.url.should.match(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('step 2: inject -> asset-upload -> debug, the + next to Server adds the asset-server and picks it', async () => {
    ids.inject = await dragFromPalette('inject', 150, 120);
    ids.upload = await dragFromPalette('asset-upload', 380, 120);
    ids.debug = await dragFromPalette('debug', 620, 120);
    await wire(ids.inject, ids.upload);
    await wire(ids.upload, ids.debug);

    await open(ids.upload);
    // No asset-server yet: the select offers to add one, the pencil is greyed out, the + adds it.
    (await page.locator('#node-input-btn-server-edit').getAttribute('class')).should.match(/disabled/);
    await page.locator('#node-input-btn-server-add').click();
    await page.locator('#node-config-input-baseUrl').waitFor({ state: 'visible' });
    await waitForTray();
    await page.locator('#node-config-input-baseUrl').fill(emulator.url);
    await page.locator('#node-config-input-cookie').fill('local-dev');
    await shoot('five-steps-2-add-server');
    await page.locator('#node-config-dialog-ok').click();
    await page.locator('#node-config-dialog-ok').waitFor({ state: 'detached' });
    const picked = await page.locator('#node-input-server').inputValue();
    picked.should.not.equal('_ADD_');
    (await page.evaluate((id) => RED.nodes.node(id).type, picked)).should.equal('asset-server');
  });

  it('step 3: Destination typed (it starts empty), msg.payload the string "hello DAM", Deploy', async () => {
    // Still in asset-upload.
    // The TypedInput's visible field (the original input is hidden inside it).
    const destination = page.locator('#node-input-destination + .red-ui-typedInput-container input.red-ui-typedInput-input');
    (await destination.inputValue()).should.equal('', 'Destination starts empty');
    (await destination.getAttribute('placeholder')).should.not.match(/^\//, 'no placeholder that looks like a folder');
    await destination.fill('/inbox');
    await shoot('five-steps-3-destination');
    await done();

    await open(ids.inject);
    // The inject node's first property is msg.payload (a timestamp): make it the string "hello DAM".
    const row = page.locator('#node-input-property-container .red-ui-editableList-item-content').first();
    await row.locator('.red-ui-typedInput-container').last().locator('button.red-ui-typedInput-type-select').click();
    await page.locator('.red-ui-typedInput-options a[value="str"], .red-ui-typedInput-options [data-value="str"]').first().click();
    await row.locator('.red-ui-typedInput-container').last().locator('input.red-ui-typedInput-input').fill('hello DAM');
    await done();
    await deploy();
    problems.since(0).filter((p) => !/favicon/.test(p)).should.eql([]);
  });

  it('step 4: the inject button uploads; the debug sidebar shows the answer; the status turns green with the fuid', async () => {
    await clickInject(ids.inject);
    await page.waitForFunction(() => $('.red-ui-debug-msg').length > 0, null, { timeout: 20000 });
    // The answer, collapsed as the sidebar shows objects: { success: true, data: object, ... }.
    (await debugTexts()).join('\n').should.match(/msg\.payload : Object[\s\S]*success: true/);
    // The status under the node, as the editor holds it: green, with the new asset's fuid.
    await page.waitForFunction((id) => { const st = RED.nodes.node(id).status; return st && st.fill === 'green' && /^fuid \d+/.test(st.text); },
      ids.upload, { timeout: 10000 });
    const status = await page.evaluate((id) => RED.nodes.node(id).status.text, ids.upload);
    (await page.locator(`[id="${ids.upload}"] .red-ui-flow-node-status-label`).first().textContent()).should.equal(status);
    await shoot('five-steps-4-uploaded', { debugTab: true });
    const fuid = Number(/fuid (\d+)/.exec(status)[1]);
    (await (await fetch(`${emulator.url}/review/api/asset/download?fuid=${fuid}&rrn=-1`, { headers: { Cookie: 'JSESSIONID=local-dev' } })).text()).should.equal('hello DAM');
  });

  it('step 5: asset-download after asset-upload needs nothing filled in (server picked, fuid from msg.fuid): the bytes come back', async () => {
    ids.download = await dragFromPalette('asset-download', 380, 220);
    ids.debug2 = await dragFromPalette('debug', 620, 220);
    // The only asset-server is picked in the new node (issue 23 #3).
    const server = await page.evaluate((id) => RED.nodes.node(id).server, ids.download);
    server.should.equal(await page.evaluate((id) => RED.nodes.node(id).server, ids.upload));
    await wire(ids.upload, ids.download);
    await wire(ids.download, ids.debug2);
    await deploy();
    const before = (await debugTexts()).length;
    await clickInject(ids.inject);
    await page.waitForFunction((n) => $('.red-ui-debug-msg').length >= n + 2, before, { timeout: 20000 });
    const texts = (await debugTexts()).slice(before).join('\n');
    texts.should.match(/buffer\[9\]/i);
    await shoot('five-steps-5-downloaded', { debugTab: true });
  });

  // Beyond the five steps, the next things a new user adds (issue 23 #1 and #10).
  it('asset-subscribe warns when its callback reaches an asset-event-in here that listens for another method', async () => {
    ids.eventIn = await dragFromPalette('asset-event-in', 150, 330);
    ids.subscribe = await dragFromPalette('asset-subscribe', 380, 330);
    (await page.evaluate((id) => RED.nodes.node(id).method, ids.subscribe)).should.equal('POST', 'a new asset-subscribe sends POST');
    await open(ids.eventIn);
    await page.locator('#node-input-path').fill('/dam/events');
    await done();

    await open(ids.subscribe);
    const callback = page.locator('#node-input-callback + .red-ui-typedInput-container input.red-ui-typedInput-input');
    await callback.fill(new URL('api/dam/events', nr.url).href); // httpNodeRoot is /api here
    await callback.press('Tab');
    const warning = page.locator('.node-input-method-warning');
    (await warning.isVisible()).should.be.false('POST meets POST: no warning');
    await page.locator('#node-input-method').selectOption('');
    await warning.waitFor({ state: 'visible' });
    (await warning.innerText()).should.match(/listens for POST; this subscription makes the server send GET/);
    await shoot('five-steps-method-warning');
    await page.locator('#node-input-method').selectOption('POST');
    await warning.waitFor({ state: 'hidden' });
    await done();
  });

  it('the DAM tab flags a registered subscription whose method differs from its asset-event-in\'s', async () => {
    // Registered the way an old flow did: server default method (GET).
    await open(ids.subscribe);
    await page.locator('#node-input-subscriptionId + .red-ui-typedInput-container input.red-ui-typedInput-input').fill('five-steps-get-0001');
    await page.locator('#node-input-method').selectOption('');
    await done();
    ids.register = await dragFromPalette('inject', 150, 420);
    await wire(ids.register, ids.subscribe);
    await deploy();
    await clickInject(ids.register);
    await page.waitForFunction((id) => { const st = RED.nodes.node(id).status; return st && st.fill === 'green'; }, ids.subscribe, { timeout: 20000 });
    await page.evaluate(() => RED.actions.invoke('dam-assets:show-dam-tab'));
    const flagged = page.locator('.dam-subscription[data-id="five-steps-get-0001"] .dam-warning');
    await flagged.waitFor({ state: 'visible', timeout: 20000 });
    (await flagged.innerText()).should.match(/Method mismatch: .*listens for POST, but the server sends GET/);
    await shoot('five-steps-dam-tab-method');
  });

  it('asset-event-in with Server "none" asks for a server, not for the Public URL', async () => {
    await open(ids.eventIn);
    await page.locator('#node-input-manage').check(); // the callback URL matters when the node registers it
    // The only asset-server was picked when it was dropped in: set it to none as a user would.
    await page.locator('#node-input-server').selectOption({ index: await page.locator('#node-input-server option').count() - 1 });
    await page.locator('#node-input-server').dispatchEvent('change');
    (await page.locator('#node-input-callbackPreview').textContent()).should.match(/^Pick a Server/);
    await page.locator('#node-dialog-cancel').click();
    await page.locator('#node-dialog-cancel').waitFor({ state: 'detached' });
  });
});
