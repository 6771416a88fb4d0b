'use strict';
/**
 * The editor shows where each value comes from (real Node-RED + headless Chromium):
 * new nodes point their per-message fields at msg explicitly, every request node has a
 * "Parallel" setting, asset-subscribe offers "set by msg.action", and asset-event-in marks
 * "manage subscription" when the selected server has no Public URL.
 */
const should = require('should');
const { closeBrowser, openEditor } = require('./lib/browser-page');

describe('editor: field sources and marks (Chromium)', function () {
  this.timeout(30000);
  let nr, browser, page, problems;

  before(async function () {
    this.timeout(120000);
    ({ nr, browser, page, problems } = await openEditor(this, 'the editor source test'));
  });

  after(async function () {
    this.timeout(30000);
    await closeBrowser(browser);
    if (nr) await nr.stop();
  });

  it('new download, export and upload nodes point fuid, rrn and the upload file at msg explicitly', async function () {
    const defaults = await page.evaluate(() => {
      const d = type => Object.fromEntries(Object.entries(RED.nodes.getType(type).defaults).map(([k, v]) => [k, v.value]));
      return { download: d('asset-download'), export: d('asset-export'), upload: d('asset-upload') };
    });
    defaults.download.should.containDeep({ fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg', filename: '', filenameType: 'str' });
    defaults.export.should.containDeep({ fuid: 'fuid', fuidType: 'msg', rrn: 'rrn', rrnType: 'msg', exportType: 'json' });
    defaults.upload.should.containDeep({ filename: 'filename', filenameType: 'msg' });
  });

  it('every request node has a Parallel setting (default 2, 1 to 32) and asset-subscribe offers "set by msg.action"', async function () {
    const found = await page.evaluate(() => ({
      defaults: ['asset-upload', 'asset-download', 'asset-export', 'asset-subscribe']
        .map(type => RED.nodes.getType(type).defaults.maxInFlight && RED.nodes.getType(type).defaults.maxInFlight.value),
      checks: ['', '1', '2', '32', '0', '33', '1.5', 'two'].map(v => window.DamEditor.validateInFlight(v) === true)
    }));
    found.defaults.should.eql([2, 2, 2, 2]);
    found.checks.should.eql([true, true, true, true, false, false, false, false]);

    const id = await page.evaluate(() => {
      const created = RED.view.createNode('asset-subscribe', 300, 200);
      RED.nodes.add(created.node);
      RED.editor.edit(created.node);
      return created.node.id;
    });
    await page.locator('.red-ui-tray #node-input-action').waitFor({ state: 'visible' });
    const options = await page.evaluate(() => $('#node-input-action option').map((i, o) => [[o.value, $(o).text()]]).get());
    options.should.containDeep([['msg', 'set by msg.action']]);
    await page.locator('#node-dialog-cancel').click();
    await page.locator('#node-dialog-cancel').waitFor({ state: 'detached' });
    await page.evaluate(id => RED.nodes.remove(id), id);
  });

  it('asset-event-in: "manage subscription" is marked when the selected server has no Public URL', async function () {
    const mark = problems.mark();
    const result = await page.evaluate(() => {
      const z = RED.workspaces.active();
      RED.nodes.import([
        { id: 'srvnopublic00001', type: 'asset-server', name: 'no public url', baseUrl: 'http://127.0.0.1:8873', timeout: 30, publicBaseUrl: '' },
        { id: 'srvpublic0000001', type: 'asset-server', name: 'with public url', baseUrl: 'http://127.0.0.1:8873', timeout: 30, publicBaseUrl: 'http://127.0.0.1:1880' },
        { id: 'evnopublic000001', type: 'asset-event-in', z, x: 200, y: 400, name: 'ev no public', method: 'post', path: '/ev-a', manage: true, server: 'srvnopublic00001', wires: [] },
        { id: 'evpublic00000001', type: 'asset-event-in', z, x: 200, y: 460, name: 'ev public', method: 'post', path: '/ev-b', manage: true, server: 'srvpublic0000001', wires: [] },
        { id: 'evunmanaged00001', type: 'asset-event-in', z, x: 200, y: 520, name: 'ev unmanaged', method: 'post', path: '/ev-c', manage: false, server: 'srvnopublic00001', wires: [] }
      ]);
      const valid = id => { const n = RED.nodes.node(id); RED.editor.validateNode(n); return n.valid; };
      return { noPublic: valid('evnopublic000001'), withPublic: valid('evpublic00000001'), unmanaged: valid('evunmanaged00001') };
    });
    result.should.eql({ noPublic: false, withPublic: true, unmanaged: true });

    await page.evaluate(() => RED.editor.edit(RED.nodes.node('evnopublic000001')));
    await page.locator('.red-ui-tray #node-input-manage').waitFor({ state: 'visible' });
    const marked = () => page.evaluate(() => $('#node-input-manage').hasClass('input-error'));
    (await marked()).should.be.true();
    (await page.locator('#node-input-callbackPreview').textContent()).should.match(/Public URL/);
    await page.evaluate(() => $('#node-input-server').val('srvpublic0000001').trigger('change'));
    (await marked()).should.be.false();
    (await page.locator('#node-input-callbackPreview').textContent()).should.match(/http:\/\/127\.0\.0\.1:1880\/(.*\/)?ev-a$/);
    await page.locator('#node-dialog-cancel').click();
    await page.locator('#node-dialog-cancel').waitFor({ state: 'detached' });
    should(problems.since(mark)).eql([]);
  });

  it('asset-event-in: Secret header (spaces around ignored, blank = the default) and Subscription id are checked with the shared editor rules', async function () {
    const checks = await page.evaluate(() => {
      const defaults = RED.nodes.getType('asset-event-in').defaults;
      const header = v => defaults.secretHeader.validate.call({}, v) === true;
      const id = v => defaults.subscriptionId.validate.call({}, v) === true;
      return {
        header: ['X-DAM-Secret', '', 'X Secret', 'X:Secret', 'X-Sécret', ' X-DAM-Secret ', '   '].map(header),
        id: ['nr-12345', '', 'short', 'nr_12345', 'a'.repeat(41)].map(id)
      };
    });
    checks.should.eql({ header: [true, true, false, false, false, true, true], id: [true, true, false, false, false] });
  });

  it('asset-event-in: each number setting is accepted by the editor exactly when the runtime accepts it', async function () {
    const { readSettings, subscriptionFields } = require('../../dist/nodes/asset-event-in/settings');
    const cases = {
      successCode: [200, 204, 299, '250', 199, 300, 200.5, 'x', -200, '2e2', '  ', ' 204 '],
      maxBodyMB: [50, 0.5, '1', 0, -1, 'x', '1e3', ' '],
      dedupWindow: [600, 0, 0.5, '10', -1, 'x', '\t'],
      dedupMax: [10000, 1, '5', 0, 1.5, -3, 'x', '   '],
      retryCount: [0, 3, '7', -1, 1.5, 'x', '  ']
    };
    const runtime = (field, value) => {
      const config = { path: '/x', [field]: value };
      try {
        const settings = readSettings(config, 'n1');
        if (field === 'retryCount') subscriptionFields(config, settings, 'http://127.0.0.1/x', undefined);
        return true;
      } catch (err) {
        return false;
      }
    };
    const editor = await page.evaluate((all) => {
      const defaults = RED.nodes.getType('asset-event-in').defaults;
      const out = {};
      for (const [field, values] of Object.entries(all)) out[field] = values.map(v => defaults[field].validate.call({}, v, {}) === true);
      return out;
    }, cases);
    for (const [field, values] of Object.entries(cases)) {
      editor[field].should.eql(values.map(v => runtime(field, v)), `${field}: editor verdicts on ${JSON.stringify(values)}`);
    }
  });
});
