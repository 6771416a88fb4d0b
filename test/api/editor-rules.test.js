'use strict';
/**
 * The editor keeps browser copies of runtime rules in resources/dam-editor.js: the subscription
 * id and header name of src/api/values.ts (DamEditor.SUBSCRIPTION_ID, DamEditor.HEADER_NAME) and
 * "Parallel requests" of src/nodes/shared/request-tracker.ts (DamEditor.validateInFlight). This test runs the
 * real editor file and the compiled source on the same cases and fails when any answer differs.
 */
const { loadDamEditor, runEditorScript } = require('../lib/editor-script');
const should = require('should');
const values = require('../../dist/api/values');
const { validateSubscriptionId } = require('../../dist/api/validate');
const { inFlightLimit, MAX_IN_FLIGHT_LIMIT, isBlankSetting, numberSetting } = require('../../dist/nodes/shared');
const eventInSettings = require('../../dist/nodes/asset-event-in/settings');


const SUBSCRIPTION_IDS = [
  'abcdefgh', 'ABCDEFGH', '12345678', 'nr-12345', '--------', 'a'.repeat(40), 'a'.repeat(41), 'abcdefg', '',
  'nr-1234 ', ' nr-12345', 'nr_12345', 'nr.12345', 'nr-1234\n', 'nr-12345\n', 'nr-1234é', 'ＡＢＣＤＥＦＧＨ', 'nr-1234/x',
  'abc-DEF-123-xyz', 'x'.repeat(8) + '\u0000'
];
const HEADER_NAMES = [
  'X-DAM-Secret', 'x', "!#$%&'*+.^_`|~-", 'Authorization', 'X Secret', 'X:Secret', 'X-Secret:', '', ' X', 'X\t',
  'X-Sécret', 'X(1)', 'X"1"', 'X,Y', 'X;Y', 'X=Y', 'X@Y', 'X[1]', 'X{1}', 'X/Y', 'X\\Y', 'X?Y', 'X\nY', '0'
];

/** The `defaults` of a node's registerType, from the real editor file (its text/javascript block). */
function editorDefaults(type, DamEditor) {
  const registered = {};
  const RED = { _: (key) => key, settings: {}, nodes: { registerType: (name, def) => { registered[name] = def; }, node: () => null }, validators: { typedInput: () => () => true } };
  runEditorScript(type, { RED, DamEditor });
  return registered[type].defaults;
}

/** Editor-side answer of a `defaults.<prop>.validate`: true or the error text. */
function editorAccepts(defaults, prop, value, node = {}) {
  return defaults[prop].validate.call(node, value, {}) === true;
}

/** Settings texts a user may type, blank and spaces among them. */
const NUMBER_TEXTS = ['', ' ', '   ', '\t', ' \n ', undefined, null, '0', ' 0 ', '1', ' 7 ', '200', ' 204 ', '299', '300', '-1', '1.5', ' 2.5 ',
  '1e3', '0x10', 'Infinity', 'NaN', 'abc', '12abc', '10000', 0, 1, 200, 600, 1.5, -3];
/** The same with header names, blank and spaces around among them. */
const HEADER_SETTINGS = [...HEADER_NAMES, '   ', '\t', ' X-Secret ', '\tX-Secret', 'X-Secret  ', ' X Secret ', undefined, null, 'User-Agent', ' accept ', 'Cache-Control', 'X-User-Agent'];

describe('editor rules: browser copies answer as the source does', function () {
  const editor = loadDamEditor();

  it('subscription id: DamEditor.SUBSCRIPTION_ID and validateSubscriptionId agree with src/api/values.ts', function () {
    for (const id of SUBSCRIPTION_IDS) {
      const expected = values.isSubscriptionId(id);
      editor.SUBSCRIPTION_ID.test(id).should.equal(expected, `SUBSCRIPTION_ID on ${JSON.stringify(id)}`);
      (editor.validateSubscriptionId(id) === true).should.equal(expected, `validateSubscriptionId on ${JSON.stringify(id)}`);
      let clientAccepts = true;
      try { validateSubscriptionId(id); } catch { clientAccepts = false; }
      clientAccepts.should.equal(expected, `client on ${JSON.stringify(id)}`);
    }
    SUBSCRIPTION_IDS.filter((id) => values.isSubscriptionId(id)).length.should.be.above(3);
  });

  it('header name: DamEditor.HEADER_NAME agrees with isToken of src/api/values.ts', function () {
    for (const name of HEADER_NAMES) {
      editor.HEADER_NAME.test(name).should.equal(values.isToken(name), `HEADER_NAME on ${JSON.stringify(name)}`);
    }
    HEADER_NAMES.filter((name) => values.isToken(name)).length.should.be.above(3);
  });

  it('every ASCII character is judged alike by both copies', function () {
    for (let code = 0; code < 128; code++) {
      const c = String.fromCharCode(code);
      editor.HEADER_NAME.test(c).should.equal(values.isToken(c), `HEADER_NAME on char ${code}`);
      editor.SUBSCRIPTION_ID.test(c.repeat(8)).should.equal(values.isSubscriptionId(c.repeat(8)), `SUBSCRIPTION_ID on char ${code}`);
    }
  });

  it('Parallel requests: DamEditor.validateInFlight accepts what inFlightLimit takes without a warning', function () {
    const cases = ['', undefined, null, 1, 2, 32, 33, 0, -1, 1.5, '1', ' 2 ', '32', '33', '0', '-1', '+2', '1.5', '1e1', 'two', '０', String(MAX_IN_FLIGHT_LIMIT),
      ' ', '   ', '\t'];
    for (const value of cases) {
      let warned = false;
      const limit = inFlightLimit(undefined, { warn: () => { warned = true; } }, value);
      const runtimeTakes = !warned && (isBlankSetting(value) || limit === Number(value));
      (editor.validateInFlight(value) === true).should.equal(runtimeTakes, `validateInFlight on ${JSON.stringify(value)}`);
    }
    inFlightLimit(undefined, { warn: () => { throw new Error('warned'); } }, '   ').should.equal(2, 'only spaces: the default');
  });

  it('Retries: DamEditor.validateRetries accepts what retriesSetting (shared/retry.ts) takes', function () {
    const { retriesSetting } = require('../../dist/nodes/shared/retry');
    const cases = ['', undefined, null, 0, 1, 2, 10, 11, -1, 1.5, '0', ' 2 ', '10', '11', '-1', '+2', '1.5', '1e1', 'two', '０', ' ', '\t'];
    for (const value of cases) {
      let runtimeTakes = true;
      try { retriesSetting(value); } catch { runtimeTakes = false; }
      (editor.validateRetries(value) === true).should.equal(runtimeTakes, `validateRetries on ${JSON.stringify(value)}`);
    }
  });

  it('hot folder: Parallel, Untouched and Rescan in the editor agree with hotFolderSettings', function () {
    const { hotFolderSettings } = require('../../dist/nodes/asset-hot-folder/settings');
    const defaults = editorDefaults('asset-hot-folder', editor);
    for (const [prop, cases] of [['maxParallel', ['', ' ', 1, 32, 33, 0, '2', ' 3 ', '+2', '1e1', '1.5', 'x']],
      ['untouchedSeconds', NUMBER_TEXTS], ['rescanSeconds', NUMBER_TEXTS]]) {
      for (const value of cases) {
        let runtimeTakes = true;
        try { hotFolderSettings({ folder: '/tmp/x', destination: '/inbox', [prop]: value }, (p) => p); } catch { runtimeTakes = false; }
        editorAccepts(defaults, prop, value, { _: (k) => k }).should.equal(runtimeTakes, `${prop} on ${JSON.stringify(value)}`);
      }
    }
  });

  it('blank settings: DamEditor.isBlankSetting agrees with isBlankSetting (empty or only spaces = the default)', function () {
    for (const value of [...NUMBER_TEXTS, ...HEADER_SETTINGS]) {
      editor.isBlankSetting(value).should.equal(isBlankSetting(value), `isBlankSetting on ${JSON.stringify(value)}`);
    }
    isBlankSetting(' \t ').should.be.true();
  });

  it('number settings: DamEditor.numberSetting accepts what numberSetting takes; blank and only spaces give the default', function () {
    const checks = [(n) => n > 0, (n) => n >= 0, (n) => Number.isInteger(n) && n >= 1, (n) => n >= 200 && n <= 299];
    for (const check of checks) {
      for (const value of NUMBER_TEXTS) {
        let taken;
        try { taken = numberSetting(value, 'f', 42, check, 'rule'); } catch { taken = undefined; }
        editor.numberSetting(value, check).should.equal(taken !== undefined, `numberSetting(${JSON.stringify(value)}, ${check})`);
        if (isBlankSetting(value)) should(taken).equal(42, `${JSON.stringify(value)} is the default`);
      }
    }
  });

  describe('asset-event-in: the editor\'s validators (nodes/asset-event-in.html) and readSettings / subscriptionFields', function () {
    const defaults = editorDefaults('asset-event-in', editor);
    const runtimeTakes = (config) => {
      try {
        const settings = eventInSettings.readSettings({ path: '/x', ...config }, 'node-1');
        return { settings, fields: eventInSettings.subscriptionFields({ path: '/x', ...config }, settings, 'http://127.0.0.1:1/x', 's3cret-value') };
      } catch (err) {
        return undefined;
      }
    };

    it('number settings (successCode, maxBodyMB, maxEntries, dedupWindow, dedupMax, retryCount): same answer; only spaces = the default', function () {
      for (const prop of ['successCode', 'maxBodyMB', 'maxEntries', 'dedupWindow', 'dedupMax', 'retryCount']) {
        for (const value of NUMBER_TEXTS) {
          const taken = runtimeTakes({ [prop]: value });
          editorAccepts(defaults, prop, value).should.equal(taken !== undefined, `${prop} = ${JSON.stringify(value)}`);
        }
      }
      const blank = runtimeTakes({ successCode: '  ', maxBodyMB: ' ', dedupWindow: '\t', dedupMax: '   ', retryCount: '  ' });
      should.exist(blank, 'only spaces are accepted');
      blank.settings.successCode.should.equal(eventInSettings.DEFAULTS.successCode);
      blank.settings.maxBodyBytes.should.equal(eventInSettings.DEFAULTS.maxBodyMB * 1e6);
      blank.settings.dedup.should.eql({ windowMs: eventInSettings.DEFAULTS.dedupWindowS * 1000, maxKeys: eventInSettings.DEFAULTS.dedupMax });
      blank.fields.should.not.have.property('retryCount'); // left to the server's default, as when empty
    });

    it('Delivery\'s number settings (inboxMax, inboxMaxMB, maxInFlight, ...): the editor takes what readDeliverySettings takes; blank = the default', function () {
      const { readDeliverySettings, DELIVERY_DEFAULTS } = require('../../dist/nodes/asset-event-in/delivery');
      const takes = (config) => { try { return readDeliverySettings({ delivery: 'atLeastOnce', ...config }, 'post', false); } catch { return undefined; } };
      for (const prop of ['inboxMax', 'inboxMaxMB', 'maxInFlight', 'visibilityTimeout', 'maxDeliveries', 'rejectBackoff', 'holdMax']) {
        for (const value of NUMBER_TEXTS) editorAccepts(defaults, prop, value).should.equal(takes({ [prop]: value }) !== undefined, `${prop} = ${JSON.stringify(value)}`);
      }
      takes({}).maxBytes.should.equal(DELIVERY_DEFAULTS.inboxMaxMB * 1e6); // flows saved before the setting
      takes({ inboxMaxMB: '2.5' }).maxBytes.should.equal(2500000);
      (() => readDeliverySettings({ delivery: 'atLeastOnce', inboxMaxMB: '0' }, 'post', false)).should.throw('inboxMaxMB: must be a number of MB, 0.001 (1 kB) or more');
      // Below a byte the journal would refuse all and the Redis inbox take 0 as no bound: refused in both places.
      (takes({ inboxMaxMB: '0.0000001' }) === undefined).should.be.true();
      editorAccepts(defaults, 'inboxMaxMB', '0.0000001').should.be.false();
      takes({ inboxMaxMB: '0.001' }).maxBytes.should.equal(1000);
    });

    it('path: the same answer, managed or not (route patterns; a managed path is the callback URL)', function () {
      const node = { _: (k) => k };
      for (const manage of [false, true]) {
        for (const value of ['/dam/events', 'dam/events', '/dam/param/:source', '/dam/*', '/dam/cb?x', '/dam/a.b+', '/dam/(x)', '/dam/[x]', '/dam/x#y', '/dam/ä', '/dam/a b', '/dam/a-b_c.d~e']) {
          const editorTakes = defaults.path.validate.call({ ...node, manage }, value, {}) === true;
          editorTakes.should.equal(runtimeTakes({ path: value, manage, subscriptionId: manage ? 'abcdefgh' : undefined, server: 'x' }) !== undefined, `${value} manage=${manage}`);
        }
      }
    });

    it('secret header name: same answer; spaces around are trimmed, only spaces = X-DAM-Secret', function () {
      for (const value of HEADER_SETTINGS) {
        const taken = runtimeTakes({ secretHeader: value });
        editorAccepts(defaults, 'secretHeader', value).should.equal(taken !== undefined, `secretHeader = ${JSON.stringify(value)}`);
      }
      runtimeTakes({ secretHeader: ' X-Hook-Key\t' }).settings.secretHeader.should.equal('X-Hook-Key');
      runtimeTakes({ secretHeader: ' X-Hook-Key ' }).fields.header.should.eql(['X-Hook-Key: s3cret-value']);
      runtimeTakes({ secretHeader: '   ' }).settings.secretHeader.should.equal('X-DAM-Secret');
    });
  });
});

describe('editor rules: fixed values of request fields (DamEditor.literalRules) as the nodes and the client take them', function () {
  const editor = loadDamEditor();
  const shared = require('../../dist/nodes/shared');
  const validate = require('../../dist/api/validate');
  // A num field's text becomes Number(text) in Node-RED (evaluateNodeProperty); a str field is sent as typed.
  const asTyped = (text, type) => (type === 'num' ? Number(text) : text);
  const takes = (fn) => { try { fn(); return true; } catch { return false; } };
  const field = (value) => ({ label: 'f', value });
  const RUNTIME = {
    id: (v) => validate.validateFuid(shared.asIntegerId(field(v))),
    rrn: (v) => validate.validateRrn(shared.asIntegerId(field(v))),
    count: (v) => validate.validateSubscriptionFields({ callback: 'http://h/x', retryCount: shared.asInteger(field(v)) }),
    code: (v) => validate.validateSubscriptionFields({ callback: 'http://h/x', successCode: shared.asInteger(field(v)) }),
    minutes: (v) => validate.validateUploadFields({ destination: '/x', waitInMinutes: shared.asNumber(field(v)) }),
    callback: (v) => validate.validateSubscriptionFields({ callback: shared.asString(field(v)) })
  };
  const NUMBERS = ['0', '1', ' 7 ', '-1', '-2', '1.5', '1e3', '2.0', '99', '100', '599', '600', '12345678901234567890', '9007199254740993',
    '0x10', '+5', 'abc', '1 2', '-0', '.5', '5.', '0.25'];
  const URLS = ['http://h/x', 'https://node-red.example/dam-events', 'http://127.0.0.1:1880/hook?x=1', 'ftp://h/x', 'not a url', 'http:/h', 'http:///x',
    'http://h/a b', 'http://h\\x', 'HTTP://H/X', '//h/x', 'http://', 'https://[::1]:8080/x', 'http://user@h/x'];

  // The fields' editor types (DamEditor.fieldTypes): ids take num or str, the others num only.
  for (const [kind, types] of [['id', ['num', 'str']], ['rrn', ['num', 'str']], ['count', ['num']], ['code', ['num']], ['minutes', ['num']]]) {
    it(`${kind}: the editor refuses exactly what the runtime refuses (${types.join(' and ')} values)`, function () {
      for (const type of types) {
        for (const text of NUMBERS) {
          const runtime = takes(() => RUNTIME[kind](asTyped(text, type)));
          editor.literalRules[kind](text, type).should.equal(runtime, `${kind} ${type} ${JSON.stringify(text)}`);
        }
      }
    });
  }

  it('a ${VAR} (or $(VAR)) value is left to the runtime, which reads the variable at deploy; a msg property is not judged', function () {
    const withValidators = loadDamEditor({ _: (key) => key, validators: { typedInput: () => () => true } });
    for (const value of ['${FOLDER_FUID}', ' ${X} ', '$(X)']) {
      withValidators.literalField('fuidType', 'id').call({ fuidType: 'num' }, value, {}).should.be.true(value);
    }
    withValidators.literalField('fuidType', 'id').call({ fuidType: 'msg' }, 'fuid', {}).should.be.true();
    withValidators.literalField('fuidType', 'id').call({ fuidType: 'num' }, '-3', {}).should.match(/errors\.id$/);
  });

  it('callback: the editor refuses exactly what the client refuses', function () {
    for (const text of URLS) editor.literalRules.callback(text, 'str').should.equal(takes(() => RUNTIME.callback(text)), JSON.stringify(text));
  });
});

describe('editor rules: asset-event-in paths on the editor\'s routes (issue 22 item 8)', function () {
  const editor = loadDamEditor();
  const { adminRouteClash, ADMIN_ROUTE_SEGMENTS } = require('../../dist/nodes/asset-event-in/admin-paths');
  const PATHS = ['/auth/token', 'auth/login', '/AUTH/Token/', '/flows', '/flows/', '//flows', '/flows/state', '/flow/abc', '/nodes', '/context/global',
    '/settings', '/settings/user', '/plugins/messages', '/diagnostics', '/icons', '/resources/x/y', '/theme', '/projects', '/locales/editor',
    '/library/a/b', '/credentials/t/i', '/red/main.js', '/vendor/x', '/types/x', '/favicon.ico', '/comms', '/inject/1', '/debug/view',
    '/udp-ports/1', '/dam-assets/overview', '/', '', '/:id', '/*', '/dam/events', '/flowsx', '/hook/flows', '/admin/flows', '/api/auth/token',
    '/:a/:b', '/:a/*', '/x/:a', '/adm*', '/admin/:a', '/api/:a'];
  const ROOTS = [['/', '/'], [undefined, undefined], ['/', '/admin'], ['/admin', '/admin/'], ['/api', '/'], ['/', false], [false, '/'], ['/api/', '/api/x']];

  it('the same list of route segments', function () {
    should([...editor.ADMIN_ROUTE_SEGMENTS]).eql([...ADMIN_ROUTE_SEGMENTS]);
  });

  it('the same answer for every path and pair of roots', function () {
    for (const [nodeRoot, adminRoot] of ROOTS) {
      for (const p of PATHS) {
        should(editor.adminPathClash(p, nodeRoot, adminRoot)).equal(adminRouteClash(p, nodeRoot, adminRoot), `${p} under ${nodeRoot} / ${adminRoot}`);
      }
    }
  });

  it('refuses the editor\'s routes when both roots are /, and only then', function () {
    adminRouteClash('/auth/token', '/', '/').should.equal('/auth');
    adminRouteClash('/flows', undefined, undefined).should.equal('/flows');
    adminRouteClash('/', '/', '/').should.match(/the editor/);
    should(adminRouteClash('/dam/events', '/', '/')).be.undefined();
    should(adminRouteClash('/flows', '/api', '/')).be.undefined(); // /api/flows is no editor route
    adminRouteClash('/flows', '/admin', '/admin/').should.equal('/admin/flows');
    adminRouteClash('/admin/flows', '/', '/admin').should.equal('/admin/flows');
    should(adminRouteClash('/flows', '/', false)).be.undefined();
  });

  it('refuses a parameter or pattern above the admin root too: it would match every editor route', function () {
    adminRouteClash('/:a/:b', '/', '/admin/').should.equal('/admin (the editor)');
    adminRouteClash('/:a/*', '/', '/admin').should.equal('/admin (the editor)');
    adminRouteClash('/*', '/', '/admin').should.equal('/admin (the editor)');
    adminRouteClash('/adm*', '/', '/admin').should.equal('/admin (the editor)');
    adminRouteClash('/:a', '/api', '/api/x').should.equal('/api/x (the editor)');
    adminRouteClash('/admin/:a', '/', '/admin').should.equal('/admin/:a');
    should(adminRouteClash('/x/:a', '/', '/admin')).be.undefined();
    should(adminRouteClash('/:a', '/api', '/admin')).be.undefined();
  });

  it('the asset-event-in editor marks such a path, naming the route', function () {
    const RED = { _: (key, params) => `${key} ${JSON.stringify(params || {})}`, settings: { httpNodeRoot: '/' } };
    const registered = {};
    runEditorScript('asset-event-in', { RED: { ...RED, nodes: { registerType: (n, d) => { registered[n] = d; }, node: () => null } }, DamEditor: editor });
    registered['asset-event-in'].defaults.path.validate.call({}, '/flows', {}).should.match(/errors\.pathAdmin.*\/flows/);
    registered['asset-event-in'].defaults.path.validate.call({}, '/dam/events', {}).should.be.true();
  });
});
