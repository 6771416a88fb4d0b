'use strict';
/**
 * The editor in a real browser: a real Node-RED with this package loaded
 * (test/e2e/lib/browser-node-red.js), driven by headless Chromium through
 * playwright-core. Screenshots go to test/e2e/screenshots/ for a person to look at.
 *
 * Without Chromium the suite is reported as skipped, with the reason printed.
 * `.ci/run` installs Chromium, so CI always runs it.
 */
const should = require('should');
const fs = require('fs');
const path = require('path');

const { startNodeRed } = require('./lib/browser-node-red');
const { closeBrowser, chromiumOrSkip, CHROMIUM_ARGS, watchPageProblems, untranslatedKeys, overflowingControls, screenshotPath } = require('./lib/browser-page');

const pkg = require('../../package.json');
const MODULE = pkg.name;
const NODE_TYPES = Object.keys(pkg['node-red'].nodes);
const CONFIG_TYPE = 'asset-server';
// Config nodes: no palette entry, no flow dialog.
const FLOW_TYPES = NODE_TYPES.filter(t => t !== CONFIG_TYPE && t !== 'asset-redis');
const CATEGORY = 'DAM';
const SHOTS = path.join(__dirname, 'screenshots');
// Where the subscription id is asked for in asset-subscribe, most likely first.
const SUBSCRIPTION_ID_PROPS = ['subscriptionId', 'subscription', 'subId', 'sid'];

describe('editor in a real browser (Chromium)', function () {
  this.timeout(30000);
  let nr, browser, page, problems;
  /** Editor definitions of our node types, read from the page (null: not registered). */
  let defs = {};
  /** Workspace node id per node type, created by the dialog tests. */
  const nodeIds = {};

  before(async function () {
    this.timeout(120000);
    const chromiumPath = chromiumOrSkip(this, 'the browser test');
    const { chromium } = require('playwright-core');
    nr = await startNodeRed();
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
    // launch() gives every browser a fresh, temporary user-data-dir.
    console.log(`      (Node-RED ${nr.version} on Node ${process.version}, Chromium ${browser.version()} at ${chromiumPath})`);
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    problems = watchPageProblems(page);
    await page.goto(nr.url);
    await page.waitForFunction(() => window.RED && window.RED.nodes && $('.red-ui-header-toolbar').is(':visible') &&
      !$('#red-ui-loading-progress').is(':visible') && RED.workspaces.active(), null, { timeout: 60000 });
    defs = await page.evaluate(types => {
      const out = {};
      for (const type of types) {
        const d = RED.nodes.getType(type);
        out[type] = d && {
          category: d.category,
          inputs: d.inputs || 0,
          outputs: d.outputs || 0,
          defaults: Object.fromEntries(Object.entries(d.defaults || {}).map(([k, v]) => [k, { type: v.type || null }])),
          credentials: Object.fromEntries(Object.entries(d.credentials || {}).map(([k, v]) => [k, { type: v.type || 'text' }])),
        };
      }
      return out;
    }, NODE_TYPES);
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
  });

  // A failed test must not leave a tray or dialog open over the next one.
  afterEach(async function () {
    if (!page) return;
    await page.keyboard.press('Escape').catch(() => {});
    for (let i = 0; i < 4; i++) {
      const cancel = page.locator('#node-config-dialog-cancel:visible, #node-dialog-cancel:visible').first();
      if (!(await cancel.count())) break;
      await cancel.click().catch(() => {});
      await page.waitForTimeout(400);
    }
  });

  /** Fail with every problem the page reported since `mark`. */
  function noProblemsSince(mark, what) {
    const found = problems.since(mark);
    should(found).eql([], `${what}:\n  ${found.join('\n  ')}`);
  }

  function requireDef(type) {
    should.exist(defs[type], `${type} is not registered in the editor (nodes/${type}.html missing or broken?)`);
    return defs[type];
  }

  /** Add a node of `type` to the active flow the way a palette drop does. */
  async function addNode(type) {
    const index = Object.keys(nodeIds).length;
    nodeIds[type] = await page.evaluate(({ type, index }) => {
      const created = RED.view.createNode(type, 200 + 220 * (index % 3), 100 + 80 * Math.floor(index / 3));
      const node = RED.nodes.add(created.node);
      RED.history.push(created.historyEvent);
      RED.nodes.dirty(true);
      RED.view.redraw(true);
      return node.id;
    }, { type, index });
    return nodeIds[type];
  }

  /** Open the edit tray of a node in the workspace and wait until it has slid in. */
  async function openEditDialog(type) {
    const id = nodeIds[type] || await addNode(type);
    await page.evaluate(id => RED.editor.edit(RED.nodes.node(id)), id);
    await page.locator('.red-ui-tray #dialog-form').waitFor({ state: 'visible' });
    await waitForTrayToSettle();
  }

  async function waitForTrayToSettle() {
    // The tray slides in; wait until the top tray stops moving.
    let last = null;
    for (let i = 0; i < 20; i++) {
      const box = await page.locator('.red-ui-tray').last().boundingBox();
      const now = box && `${Math.round(box.x)},${Math.round(box.width)}`;
      if (now && now === last) break;
      last = now;
      await page.waitForTimeout(150);
    }
  }

  /** Click a tray button (Done, Cancel, Add) and wait until that tray is gone. */
  async function closeTopTray(buttonId) {
    const button = page.locator(`#${buttonId}`);
    await button.click();
    await button.waitFor({ state: 'detached' });
  }

  /**
   * Open Node-RED's export dialog and wait until it is ready: each library browser in it selects
   * its first folder 100 ms after opening (RED.library createBrowser). Closing and reopening the
   * dialog before then empties it, and that pending select throws "cannot call methods on
   * treeList prior to initialization" in the page.
   */
  async function showExportDialog() {
    await page.evaluate(() => RED.actions.invoke('core:show-export-dialog'));
    await page.waitForFunction(() => $('#red-ui-clipboard-dialog').is(':visible') &&
      $('#red-ui-clipboard-dialog .red-ui-clipboard-dialog-tab-library').toArray()
        .every(browser => $(browser).find('.red-ui-treeList-label.selected').length > 0));
  }

  async function shoot(name, locator) {
    const file = screenshotPath(SHOTS, name);
    await (locator || page).screenshot({ path: file });
    return file;
  }

  it('opens the editor with no console error and no failed request', function () {
    noProblemsSince(0, 'while the editor loaded');
  });

  it('loads every node of the package into the Node-RED runtime', async function () {
    const res = await fetch(new URL('nodes', nr.url), { headers: { Accept: 'application/json' } });
    res.status.should.equal(200);
    const sets = (await res.json()).filter(s => s.module === MODULE);
    sets.length.should.be.above(0, `module ${MODULE} is not loaded; Node-RED said:\n${nr.output()}`);
    for (const set of sets) {
      should.not.exist(set.err, `node set ${set.id} failed to load: ${set.err}`);
      set.enabled.should.be.true();
    }
    const loaded = sets.flatMap(s => s.types);
    for (const type of NODE_TYPES) loaded.should.containEql(type);
  });

  it(`shows every node of the package under category ${CATEGORY} with its icon`, async function () {
    const config = requireDef(CONFIG_TYPE);
    config.category.should.equal('config');
    const category = page.locator(`#red-ui-palette-container-${CATEGORY}`);
    await category.scrollIntoViewIfNeeded();
    (await category.isVisible()).should.be.true(`palette category ${CATEGORY} is not shown`);
    for (const type of FLOW_TYPES) {
      requireDef(type).category.should.equal(CATEGORY, `category of ${type}`);
      const entry = page.locator(`#red-ui-palette-base-category-${CATEGORY} .red-ui-palette-node[data-palette-type="${type}"]`);
      (await entry.count()).should.equal(1, `${type} is not in palette category ${CATEGORY}`);
      (await entry.isVisible()).should.be.true(`${type} palette entry is hidden`);
      const label = (await entry.locator('.red-ui-palette-label').innerText()).trim();
      label.should.not.be.empty();
      // On one line, as core's labels are (issue 23 #11: "asset subscribe" wrapped onto two).
      const height = (locator) => locator.evaluate(el => el.getBoundingClientRect().height);
      const oneLine = await height(page.locator('.red-ui-palette-node[data-palette-type="inject"] .red-ui-palette-label'));
      (await height(entry.locator('.red-ui-palette-label'))).should.be.belowOrEqual(oneLine, `the palette label "${label}" of ${type} wraps`);
      const iconUrl = await entry.locator('.red-ui-palette-icon-container').getAttribute('data-palette-icon');
      should.exist(iconUrl, `${type} has no icon`);
      iconUrl.should.startWith(`icons/${MODULE}/`, `${type} icon ${iconUrl} is not one of the package's icons`);
      const background = await entry.locator('.red-ui-palette-icon').evaluate(el => getComputedStyle(el).backgroundImage);
      background.should.containEql(iconUrl);
      const icon = await page.request.get(new URL(iconUrl, nr.url).href);
      icon.status().should.equal(200, `GET ${iconUrl}`);
      icon.headers()['content-type'].should.match(/^image\//);
    }
    // The config node has no palette entry; its icon still shows in the config-nodes sidebar.
    const configIcon = await page.evaluate(t => RED.utils.getNodeIcon(RED.nodes.getType(t)), CONFIG_TYPE);
    if (!/^font-awesome\//.test(configIcon)) {
      (await page.request.get(new URL(configIcon, nr.url).href)).status().should.equal(200, `GET ${configIcon}`);
    }
    (await untranslatedKeys(page, `#red-ui-palette-container-${CATEGORY}`, NODE_TYPES)).should.eql([], 'untranslated keys in the palette');
    await shoot('palette', category);
  });

  for (const type of FLOW_TYPES) {
    it(`opens the edit dialog of ${type} with no console error`, async function () {
      requireDef(type);
      const mark = problems.mark();
      await openEditDialog(type);
      await shoot(`dialog-${type}`);
      (await untranslatedKeys(page, '.red-ui-tray', NODE_TYPES)).should.eql([], `untranslated keys in the ${type} dialog`);
      (await overflowingControls(page, '.red-ui-tray')).should.eql([], `controls wider than the ${type} dialog`);
      noProblemsSince(mark, `while the ${type} dialog opened`);
      await closeTopTray('node-dialog-cancel');
      noProblemsSince(mark, `while the ${type} dialog closed`);
    });
  }

  for (const type of NODE_TYPES) {
    it(`shows the help of ${type} in the help sidebar`, async function () {
      const def = requireDef(type);
      const mark = problems.mark();
      const source = await page.evaluate(t => RED.nodes.getNodeHelp(t), type);
      should(source).be.a.String().and.not.be.empty(`${type} has no help text`);
      await page.evaluate(t => RED.sidebar.help.show(t), type);
      const help = page.locator('.red-ui-sidebar-help-stack .red-ui-help').first();
      await help.waitFor({ state: 'visible' });
      (await help.locator('.red-ui-help-info-none').count()).should.equal(0, `${type} help shows "None"`);
      const text = (await help.innerText()).trim();
      text.length.should.be.above(40, `${type} help is too short: ${JSON.stringify(text)}`);
      (await untranslatedKeys(page, '.red-ui-sidebar-help-stack', NODE_TYPES)).should.eql([], `untranslated keys in the ${type} help`);
      if (def.inputs || def.outputs) {
        // Core-node style: the msg properties in and out are listed in a dl.message-properties.
        (await help.locator('dl.message-properties').count()).should.be.above(0, `${type} help lists no msg properties`);
      }
      await shoot(`help-${type}`, page.locator('#red-ui-sidebar'));
      noProblemsSince(mark, `while the ${type} help showed`);
    });
  }

  it('marks an invalid subscription id in asset-subscribe and clears the mark for a valid one', async function () {
    const def = requireDef('asset-subscribe');
    const prop = SUBSCRIPTION_ID_PROPS.find(p => def.defaults[p]);
    should.exist(prop, `no subscription id field among asset-subscribe properties ${Object.keys(def.defaults).join(', ')}`);
    const mark = problems.mark();
    await openEditDialog('asset-subscribe');
    const selector = `#node-input-${prop}`;
    const typed = await page.evaluate(s => $(s).next().hasClass('red-ui-typedInput-container'), selector);
    if (typed) {
      // A typedInput (literal or msg property): validate the literal form.
      await page.evaluate(s => $(s).typedInput('type', 'str'), selector);
    }
    const field = typed ? page.locator(`${selector} + .red-ui-typedInput-container input.red-ui-typedInput-input`) : page.locator(selector);
    const markedInvalid = () => page.evaluate(s => $(s).hasClass('input-error') ||
      $(s).next('.red-ui-typedInput-container').hasClass('input-error'), selector);
    async function enter(value) {
      await field.fill(value);
      await field.press('End'); // keyup: the editor validates as you type
      await field.press('Tab'); // change
    }
    const invalid = ['a_b', 'abcdefg', 'x'.repeat(41), 'with space', 'sub/id/with/slash'];
    const valid = ['abcdefgh', 'dam-sub-0001', 'Z'.repeat(40), '3f2b8c1e-7d4a-4c2b-9e1f-0a1b2c3d4e5f'];
    for (const value of invalid) {
      await enter(value);
      (await markedInvalid()).should.be.true(`subscription id ${JSON.stringify(value)} (${value.length} chars) not marked invalid`);
      if (value === 'a_b') await shoot('dialog-asset-subscribe-invalid-id');
      await enter(valid[0]);
      (await markedInvalid()).should.be.false(`mark not cleared after typing ${JSON.stringify(valid[0])}`);
    }
    for (const value of valid) {
      await enter(value);
      (await markedInvalid()).should.be.false(`subscription id ${JSON.stringify(value)} marked invalid`);
    }
    await closeTopTray('node-dialog-cancel');
    noProblemsSince(mark, 'while typing subscription ids');
  });

  describe('secrets: the session cookie and webhook secrets', function () {
    const unique = () => `${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
    const secretValue = `brs${unique()}`;
    const cookie = `JSESSIONID=${secretValue}`;
    let configId;
    /** Every secret typed in, with the node and credential holding it. */
    const typed = [];

    it('asks for the cookie in a password field of the asset-server dialog', async function () {
      const server = requireDef(CONFIG_TYPE);
      const cookieProp = Object.keys(server.credentials).find(k => /cookie/i.test(k));
      should.exist(cookieProp, `${CONFIG_TYPE} has no cookie credential (credentials: ${Object.keys(server.credentials).join(', ') || 'none'})`);
      server.credentials[cookieProp].type.should.equal('password');
      // Open it the way a user does: from a node's server field, "add new".
      const user = FLOW_TYPES.find(t => defs[t] && Object.values(defs[t].defaults).some(d => d.type === CONFIG_TYPE));
      should.exist(user, `no node has a property of type ${CONFIG_TYPE}`);
      const serverProp = Object.keys(defs[user].defaults).find(k => defs[user].defaults[k].type === CONFIG_TYPE);
      const mark = problems.mark();
      await openEditDialog(user);
      await page.locator(`#node-input-btn-${serverProp}-add`).click();
      await page.locator('#node-config-dialog-edit-form').waitFor({ state: 'visible' });
      await waitForTrayToSettle();
      await shoot(`dialog-${CONFIG_TYPE}`);
      (await untranslatedKeys(page, '.red-ui-tray', NODE_TYPES)).should.eql([], `untranslated keys in the ${CONFIG_TYPE} dialog`);
      (await overflowingControls(page, '.red-ui-tray')).should.eql([], `controls wider than the ${CONFIG_TYPE} dialog`);
      const input = page.locator(`#node-config-input-${cookieProp}`);
      (await input.getAttribute('type')).should.equal('password');
      await input.fill(cookie);
      // Automatic login: hidden until ticked; a preset fills the login request, the password is a password field.
      (await page.locator('#node-config-input-loginUrl').isVisible()).should.be.false();
      await page.locator('#node-config-input-loginEnabled').check();
      await page.locator('#node-config-input-loginUrl').waitFor({ state: 'visible' });
      (await page.locator('#node-config-input-loginUrl').inputValue()).should.equal('/command');
      await page.locator('#node-config-input-loginPreset').selectOption('form');
      (await page.locator('#node-config-input-loginUrl').inputValue()).should.equal('/review/j_security_check');
      (await page.locator('#node-config-input-sessionFrom').inputValue()).should.equal('set-cookie');
      (await page.locator('#node-config-input-loginSessionUrl').inputValue()).should.equal('/review/');
      (await page.locator('#node-config-input-loginFields').inputValue()).should.containEql('j_password={{password}}');
      (await page.locator('#node-config-input-password').getAttribute('type')).should.equal('password');
      await page.locator('#node-config-input-username').fill('editor-robot');
      const loginPassword = `lpw${unique()}`;
      await page.locator('#node-config-input-password').fill(loginPassword);
      await shoot(`dialog-${CONFIG_TYPE}-login`);
      (await untranslatedKeys(page, '.red-ui-tray', NODE_TYPES)).should.eql([], `untranslated keys in the ${CONFIG_TYPE} login fields`);
      (await overflowingControls(page, '.red-ui-tray')).should.eql([], `controls wider than the ${CONFIG_TYPE} dialog with login fields`);
      await closeTopTray('node-config-dialog-ok');
      await closeTopTray('node-dialog-ok');
      configId = await page.evaluate(t => {
        let id = null;
        RED.nodes.eachConfig(n => { if (n.type === t) id = n.id; });
        return id;
      }, CONFIG_TYPE);
      should.exist(configId, `no ${CONFIG_TYPE} node after the dialog closed with Done`);
      typed.push({ type: CONFIG_TYPE, id: configId, prop: cookieProp, value: secretValue });
      typed.push({ type: CONFIG_TYPE, id: configId, prop: 'password', value: loginPassword });
      noProblemsSince(mark, `while the ${CONFIG_TYPE} dialog was used`);
    });

    // Other secrets (asset-event-in's shared secret): password fields too.
    it('asks for the other password credentials (webhook secrets) in password fields', async function () {
      const owners = FLOW_TYPES.filter(t => defs[t] && Object.values(defs[t].credentials).some(c => c.type === 'password'));
      owners.should.containEql('asset-event-in');
      const mark = problems.mark();
      for (const type of owners) {
        await openEditDialog(type);
        for (const prop of Object.keys(defs[type].credentials).filter(k => defs[type].credentials[k].type === 'password')) {
          const input = page.locator(`#node-input-${prop}`);
          (await input.getAttribute('type')).should.equal('password', `${type} ${prop}`);
          const value = `wbs${unique()}`;
          await input.fill(value);
          typed.push({ type, id: nodeIds[type], prop, value });
        }
        await closeTopTray('node-dialog-ok');
      }
      noProblemsSince(mark, 'while the secrets were typed');
    });

    it('asks for the Redis password in a password field of the asset-redis dialog', async function () {
      const redis = requireDef('asset-redis');
      redis.category.should.equal('config');
      redis.credentials.password.type.should.equal('password');
      const mark = problems.mark();
      await openEditDialog('asset-event-in');
      await page.locator('#node-input-btn-redis-add').click();
      await page.locator('#node-config-dialog-edit-form').waitFor({ state: 'visible' });
      await waitForTrayToSettle();
      await shoot('dialog-asset-redis');
      (await untranslatedKeys(page, '.red-ui-tray', NODE_TYPES)).should.eql([], 'untranslated keys in the asset-redis dialog');
      (await overflowingControls(page, '.red-ui-tray')).should.eql([], 'controls wider than the asset-redis dialog');
      const input = page.locator('#node-config-input-password');
      (await input.getAttribute('type')).should.equal('password');
      const value = `rds${unique()}`;
      await input.fill(value);
      // The claim lease must be longer than the timeout (the runtime refuses it otherwise).
      const leaseInvalid = () => page.evaluate(() => $('#node-config-input-lease').hasClass('input-error'));
      const type = async (id, text) => { const f = page.locator(id); await f.fill(text); await f.press('End'); await f.press('Tab'); };
      await type('#node-config-input-timeout', '2000');
      await type('#node-config-input-lease', '2');
      (await leaseInvalid()).should.be.true('a 2 s lease with a 2000 ms timeout is not marked invalid');
      await type('#node-config-input-lease', '3');
      (await leaseInvalid()).should.be.false('a 3 s lease with a 2000 ms timeout is marked invalid');
      await type('#node-config-input-timeout', '1000');
      await type('#node-config-input-lease', '10');
      await closeTopTray('node-config-dialog-ok');
      await closeTopTray('node-dialog-ok');
      const id = await page.evaluate(() => { let found = null; RED.nodes.eachConfig(n => { if (n.type === 'asset-redis') found = n.id; }); return found; });
      should.exist(id, 'no asset-redis node after the dialog closed with Done');
      typed.push({ type: 'asset-redis', id, prop: 'password', value });
      noProblemsSince(mark, 'while the asset-redis dialog was used');
    });

    it('are not in an exported flow (current flow and all flows)', async function () {
      should.exist(configId, 'needs the previous test');
      // The editor does hold the secrets (deploy sends them to the runtime), so
      // their absence from the exports below means something.
      const withCredentials = await page.evaluate(() => JSON.stringify(RED.nodes.createCompleteNodeSet()));
      for (const t of typed) withCredentials.should.containEql(t.value, `the editor lost ${t.type} ${t.prop}`);
      const mark = problems.mark();
      for (const range of ['flow', 'full']) {
        await showExportDialog();
        await page.locator(`#red-ui-clipboard-dialog-export-rng-${range}`).click();
        await page.waitForFunction(t => ($('#red-ui-clipboard-dialog-export-text').val() || '').includes(`"${t}"`), CONFIG_TYPE);
        const exported = await page.locator('#red-ui-clipboard-dialog-export-text').inputValue();
        if (range === 'full') await shoot('export-dialog');
        exported.should.containEql(configId, `the ${range} export lacks the ${CONFIG_TYPE} node`);
        for (const t of typed) exported.should.not.containEql(t.value, `the ${range} export contains ${t.type} ${t.prop}`);
        await page.keyboard.press('Escape');
        await page.locator('#red-ui-clipboard-dialog').waitFor({ state: 'hidden' });
      }
      noProblemsSince(mark, 'while exporting');
    });

    it('are deployed as credentials only: not in GET /flows, not in flows.json', async function () {
      should.exist(configId, 'needs the previous tests');
      await page.locator('#red-ui-header-button-deploy').click();
      // Nodes left unconfigured by the dialog tests make the editor ask first.
      const confirm = page.locator('#red-ui-deploy-dialog-confirm-deploy-deploy');
      await Promise.race([
        confirm.waitFor({ state: 'visible', timeout: 5000 }).then(() => confirm.click()).catch(() => {}),
        page.waitForFunction(() => !RED.nodes.dirty()),
      ]);
      await page.waitForFunction(() => !RED.nodes.dirty() && !$('.ui-dialog:visible').length &&
        !$('.red-ui-deploy-button-spinner').is(':visible') && !$('#red-ui-editor-shade').is(':visible'), null, { timeout: 15000 });
      const flows = await (await fetch(new URL('flows', nr.url), { headers: { Accept: 'application/json' } })).text();
      flows.should.containEql(configId);
      const onDisk = fs.readFileSync(path.join(nr.userDir, 'flows.json'), 'utf8');
      onDisk.should.containEql(configId);
      const credFile = fs.readFileSync(path.join(nr.userDir, 'flows_cred.json'), 'utf8');
      for (const t of typed) {
        flows.should.not.containEql(t.value, `GET /flows shows ${t.type} ${t.prop}`);
        onDisk.should.not.containEql(t.value, `flows.json holds ${t.type} ${t.prop}`);
        credFile.should.not.containEql(t.value, `flows_cred.json holds ${t.type} ${t.prop} unencrypted`);
        // It did reach the runtime, as a credential (encrypted on disk).
        const creds = await (await fetch(new URL(`credentials/${t.type}/${t.id}`, nr.url))).json();
        creds.should.have.property(`has_${t.prop}`, true);
        JSON.stringify(creds).should.not.containEql(t.value);
      }
      // The deploy notification would cover the flow in the picture.
      await page.evaluate(() => $('.red-ui-notification').remove());
      await shoot('workspace');
    });
  });
});
