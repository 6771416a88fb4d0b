'use strict';
/**
 * The asset-server dialog's Proxy setting in headless Chromium against a real Node-RED
 * (test/e2e/lib/browser-node-red.js), a real squid with basic authentication (test/api/squid.js)
 * and the emulator: the setting shows what is deployed, the http proxy row follows the choice,
 * every string is translated, and "Test connection" goes through the chosen http proxy node
 * (squid's log) and says `proxy` when that node's password is wrong.
 */
const should = require('should');
const { startNodeRed } = require('./lib/browser-node-red');
const { closeBrowser, chromiumOrSkip, CHROMIUM_ARGS, watchPageProblems, untranslatedKeys } = require('./lib/browser-page');
const { startEmulator } = require('../../dist/emulator');
const { startSquid } = require('../api/squid');

const COOKIE = 'browser-proxy-cookie-19';
const PROXY = { username: 'browser-proxy-user', password: 'Browser-Proxy-Pw-27' };
const IDS = { server: 'dam00000000000p1', good: 'dam00000000000p2', bad: 'dam00000000000p3' };

describe('asset-server Proxy setting in a real browser (Chromium), through squid', function () {
  this.timeout(60000);
  let emulator, squid, nr, browser, page, problems;

  before(async function () {
    this.timeout(120000);
    const chromiumPath = chromiumOrSkip(this, 'the proxy browser test');
    emulator = await startEmulator({ port: 0, sessions: [{ value: COOKIE, permissions: ['events', 'add'] }] });
    squid = await startSquid({ auth: PROXY });
    nr = await startNodeRed();
    const flows = [
      { id: IDS.good, type: 'http proxy', name: 'corporate proxy', url: squid.url, noproxy: [], credentials: { ...PROXY } },
      { id: IDS.bad, type: 'http proxy', name: 'wrong password', url: squid.url, noproxy: [], credentials: { username: PROXY.username, password: 'not-the-password' } },
      {
        id: IDS.server, type: 'asset-server', name: 'behind proxy', baseUrl: emulator.url, timeout: 10, rejectUnauthorized: true,
        proxyMode: 'node', proxy: IDS.good, credentials: { cookie: COOKIE }
      }
    ];
    const res = await nr.deploy(flows);
    res.status.should.be.within(200, 204);
    const { chromium } = require('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
    page = await (await browser.newContext({ viewport: { width: 1300, height: 1000 } })).newPage();
    const watched = watchPageProblems(page);
    await page.goto(nr.url);
    await page.waitForFunction(() => window.RED && window.RED.nodes && $('.red-ui-header-toolbar').is(':visible') &&
      !$('#red-ui-loading-progress').is(':visible') && RED.workspaces.active(), null, { timeout: 60000 });
    problems = watched;
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
    await squid?.stop();
    await emulator?.close();
  });

  async function testConnection() {
    await page.locator('#node-config-dam-test').click();
    await page.waitForFunction(() => !!$('#node-config-dam-test-result').attr('data-result'));
    const kind = await page.locator('#node-config-dam-test-result').getAttribute('data-result');
    const text = await page.locator('#node-config-dam-test-result').innerText();
    await page.evaluate(() => $('#node-config-dam-test-result').attr('data-result', ''));
    return { kind, text };
  }

  it('shows the deployed choice, hides the http proxy row unless chosen, and tests the connection through the chosen proxy', async () => {
    await page.evaluate((id) => RED.editor.editConfig('', 'asset-server', id), IDS.server);
    await page.locator('#node-config-dam-test').waitFor({ state: 'visible' });
    (await page.locator('#node-config-input-proxyMode').inputValue()).should.equal('node');
    (await page.locator('#node-config-row-proxy').isVisible()).should.be.true();
    (await untranslatedKeys(page, '.red-ui-tray', ['asset-server'])).should.eql([]);
    await page.locator('#node-config-input-proxyMode').selectOption('env');
    (await page.locator('#node-config-row-proxy').isVisible()).should.be.false();
    await page.locator('#node-config-input-proxyMode').selectOption('node');
    (await page.locator('#node-config-row-proxy').isVisible()).should.be.true();

    const ok = await testConnection();
    ok.kind.should.equal('ok', ok.text);
    (await squid.waitForLog((l) => l.includes('dam-connection-check-probe')))[0].should.containEql(`user=${PROXY.username}`);

    // Another proxy: the saved cookie is not sent through it (a proxy sees a plain-http cookie)...
    await page.evaluate((id) => $('#node-config-input-proxy').val(id).trigger('change'), IDS.bad);
    const retype = await testConnection();
    retype.kind.should.equal('config', retype.text);
    retype.text.should.match(/type the cookie again/);
    // ... a typed one is, and that proxy refuses its credentials.
    await page.locator('#node-config-input-cookie').fill(COOKIE);
    const refused = await testConnection();
    refused.kind.should.equal('proxy', refused.text);
    refused.text.should.match(/proxy authentication failed/);
    refused.text.should.not.containEql('not-the-password');
    should(problems.all()).eql([]);
  });
});
