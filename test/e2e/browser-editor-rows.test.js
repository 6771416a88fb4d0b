'use strict';
/**
 * The edit dialogs' form rows in a real Node-RED + headless Chromium: every flow node's dialog is
 * opened and its rows (ids, controls, labels, placeholders, tips and icons, as the browser shows
 * them, translated) are compared with test/e2e/fixtures/editor-rows.json, taken from the dialogs
 * as they were before the shared rows moved into one builder (DamEditor.fillRows in
 * resources/dam-editor.js). Then values typed into the shared rows (Server, Name, Retries, the
 * upload fields) are saved with Done, are on the node, and show again when the dialog reopens.
 *
 * DAM_UPDATE_ROWS=1 writes the fixture from the dialogs as they are now (do it only on purpose,
 * and read the diff).
 */
const should = require('should');
const fs = require('fs');
const path = require('path');
const { closeBrowser, openEditor } = require('./lib/browser-page');

const pkg = require('../../package.json');
const FLOW_TYPES = Object.keys(pkg['node-red'].nodes).filter((t) => t !== 'asset-server' && t !== 'asset-redis');
const FIXTURE = path.join(__dirname, 'fixtures', 'editor-rows.json');
const UPLOAD_FIELDS = ['assetName', 'destination', 'destinationFuid', 'collectionId', 'wait', 'waitInMinutes', 'expandZip'];

describe('editor: the form rows of every dialog, and their values saved (Chromium)', function () {
  this.timeout(60000);
  let nr, browser, page, problems;
  const seen = {};

  before(async function () {
    this.timeout(120000);
    ({ nr, browser, page, problems } = await openEditor(this, 'the editor rows test'));
    // One asset-server config node, so that Server has something to select.
    await page.evaluate(() => {
      const def = RED.nodes.getType('asset-server');
      const config = { id: 'rowsserver00001', type: 'asset-server', _def: def, users: [], name: 'rows test server' };
      for (const [k, v] of Object.entries(def.defaults)) if (!(k in config)) config[k] = v.value;
      RED.nodes.add(config);
    });
  });

  after(async function () {
    this.timeout(30000);
    if (process.env.DAM_UPDATE_ROWS === '1' && Object.keys(seen).length === FLOW_TYPES.length) {
      fs.mkdirSync(path.dirname(FIXTURE), { recursive: true });
      fs.writeFileSync(FIXTURE, JSON.stringify(seen, null, 1) + '\n');
      console.log(`      wrote ${FIXTURE}`);
    }
    await closeBrowser(browser);
    if (nr) await nr.stop();
  });

  async function addNode(type) {
    return page.evaluate((t) => {
      const created = RED.view.createNode(t, 300, 200);
      const node = RED.nodes.add(created.node);
      RED.history.push(created.historyEvent);
      RED.view.redraw(true);
      return node.id;
    }, type);
  }

  async function openDialog(id) {
    await page.evaluate((nodeId) => RED.editor.edit(RED.nodes.node(nodeId)), id);
    await page.locator('.red-ui-tray #dialog-form').waitFor({ state: 'visible' });
    // Ready once oneditprepare has run: the TypedInputs are built.
    await page.waitForFunction(() => $('.red-ui-tray #dialog-form .form-row').length > 0 && RED.editor.getEditStack().length > 0);
    // And in place: the tray is built off screen and slides in (`right` from minus its width to 0
    // over 0.25 s); a click on its Done button before it stops can land beside the button.
    await page.waitForFunction(() => { const tray = $('.red-ui-tray').last()[0]; return !!tray && getComputedStyle(tray).right === '0px'; });
  }

  async function closeDialog(button) {
    const b = page.locator(`#${button}`);
    await b.click();
    await b.waitFor({ state: 'detached' });
  }

  /** The dialog's rows as the browser shows them. */
  function rowsOfDialog() {
    return page.evaluate(() => {
      // A node's own id shows in some placeholders (asset-event-in's default subscription id).
      const norm = (v) => v.replace(/\bnr-[0-9a-f]{16}\b/g, 'nr-<node id>');
      const text = (el) => norm((el.textContent || '').replace(/\s+/g, ' ').trim());
      return Array.from(document.querySelectorAll('.red-ui-tray #dialog-form .form-row, .red-ui-tray #dialog-form .form-tips')).map((row) => ({
        kind: row.classList.contains('form-tips') ? 'tips' : 'row',
        id: row.id || '',
        text: text(row),
        labels: Array.from(row.querySelectorAll('label')).map((l) => [l.getAttribute('for') || '', text(l),
          Array.from(l.querySelectorAll('i.fa')).map((i) => i.className).join(' ')]),
        controls: Array.from(row.querySelectorAll('input, select, textarea')).filter((el) => el.id && !el.id.startsWith('red-ui-'))
          .map((el) => [el.tagName.toLowerCase(), el.id, el.getAttribute('type') || '', norm(el.getAttribute('placeholder') || '')]),
        typedInput: row.querySelectorAll('.red-ui-typedInput-container').length
      }));
    });
  }

  for (const type of FLOW_TYPES) {
    it(`${type}: the dialog's rows are the ones it had before the shared builder`, async function () {
      const mark = problems.mark();
      const id = await addNode(type);
      await openDialog(id);
      const rows = await rowsOfDialog();
      seen[type] = rows;
      await closeDialog('node-dialog-cancel');
      should(problems.since(mark)).eql([], `page problems while the ${type} dialog was open`);
      if (process.env.DAM_UPDATE_ROWS === '1') return;
      const expected = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'))[type];
      should.exist(expected, `${type} is not in ${FIXTURE}`);
      for (let i = 0; i < Math.max(rows.length, expected.length); i++) {
        should(rows[i]).eql(expected[i], `${type}, row ${i + 1}: now ${JSON.stringify(rows[i])}, was ${JSON.stringify(expected[i])}`);
      }
    });
  }

  /** Types into the shared rows of `type`'s dialog, saves, and checks the node and the reopened dialog. */
  async function saveAndReopen(type) {
    const id = await addNode(type);
    await openDialog(id);
    const has = await page.evaluate(() => ({
      server: $('#node-input-server').length > 0, retries: $('#node-input-retries').length > 0,
      upload: $('#node-input-destination').length > 0 && $('#node-input-expandZip').length > 0
    }));
    const want = { name: `rows ${type}` };
    if (has.server) want.server = 'rowsserver00001';
    if (has.retries) want.retries = '4';
    if (has.upload) {
      Object.assign(want, {
        assetName: 'name', assetNameType: 'msg', destination: '/rows/test', destinationType: 'str',
        destinationFuid: '123', destinationFuidType: 'num', collectionId: 'coll', collectionIdType: 'flow',
        wait: 'false', waitType: 'bool', waitInMinutes: '7', waitInMinutesType: 'num', expandZip: 'DAM_ZIP', expandZipType: 'env'
      });
    }
    await page.evaluate((w) => {
      $('#node-input-name').val(w.name);
      if (w.server) $('#node-input-server').val(w.server).trigger('change');
      if (w.retries) $('#node-input-retries').val(w.retries);
      for (const field of ['assetName', 'destination', 'destinationFuid', 'collectionId', 'wait', 'waitInMinutes', 'expandZip']) {
        if (w[field] === undefined) continue;
        $(`#node-input-${field}`).typedInput('type', w[`${field}Type`]);
        $(`#node-input-${field}`).typedInput('value', w[field]);
      }
    }, want);
    await closeDialog('node-dialog-ok');
    const stored = await page.evaluate(({ nodeId, keys }) => {
      const node = RED.nodes.node(nodeId);
      return Object.fromEntries(keys.map((k) => [k, node[k] === undefined ? undefined : String(node[k])]));
    }, { nodeId: id, keys: Object.keys(want) });
    stored.should.eql(want, `${type}: saved values`);
    await openDialog(id);
    const shown = await page.evaluate((keys) => Object.fromEntries(keys.map((k) => {
      const base = k.replace(/Type$/, '');
      if (k !== base && $(`#node-input-${base}`).data('noderedTypedInput')) return [k, $(`#node-input-${base}`).typedInput('type')];
      const el = $(`#node-input-${k}`);
      return [k, el.data('noderedTypedInput') ? el.typedInput('value') : String(el.val())];
    })), Object.keys(want));
    await closeDialog('node-dialog-cancel');
    shown.should.eql(want, `${type}: values shown again`);
    return has;
  }

  it('asset-upload and asset-hot-folder: the upload fields have the same ids, controls and icons, in the same order', async function () {
    const fieldRows = (type) => seen[type].filter((r) => r.controls.some((c) => UPLOAD_FIELDS.includes(c[1].replace('node-input-', ''))))
      .map((r) => ({ controls: r.controls.map((c) => c.slice(0, 3)), icons: r.labels.map((l) => l[2]), fors: r.labels.map((l) => l[0]), typedInput: r.typedInput }));
    should.exist(seen['asset-upload']);
    should.exist(seen['asset-hot-folder']);
    fieldRows('asset-hot-folder').should.eql(fieldRows('asset-upload'));
    fieldRows('asset-upload').map((r) => r.controls[0][1]).should.eql(UPLOAD_FIELDS.map((f) => `node-input-${f}`));
  });

  for (const type of FLOW_TYPES) {
    it(`${type}: Name (and Server, Retries, upload fields where it has them) saved with Done and shown again`, async function () {
      const mark = problems.mark();
      const has = await saveAndReopen(type);
      if (['asset-upload', 'asset-hot-folder'].includes(type)) has.should.eql({ server: true, retries: true, upload: true });
      should(problems.since(mark)).eql([], `page problems in the ${type} dialog`);
    });
  }
});
