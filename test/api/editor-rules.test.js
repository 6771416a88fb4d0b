'use strict';
/**
 * The editor keeps browser copies of runtime rules in resources/dam-editor.js: the subscription
 * id and header name of src/api/values.ts (DamEditor.SUBSCRIPTION_ID, DamEditor.HEADER_NAME) and
 * "Parallel requests" of src/nodes/common.ts (DamEditor.validateInFlight). This test runs the
 * real editor file and the compiled source on the same cases and fails when any answer differs.
 */
const fs = require('fs');
const path = require('path');
const vm = require('vm');
require('should');
const values = require('../../dist/api/values');
const { validateSubscriptionId } = require('../../dist/api/validate');
const { inFlightLimit, MAX_IN_FLIGHT_LIMIT } = require('../../dist/nodes/common');

function loadDamEditor() {
  const source = fs.readFileSync(path.join(__dirname, '../../resources/dam-editor.js'), 'utf8');
  const window = {};
  vm.runInNewContext(source, { window, RED: { _: (key) => key } });
  return window.DamEditor;
}

const SUBSCRIPTION_IDS = [
  'abcdefgh', 'ABCDEFGH', '12345678', 'nr-12345', '--------', 'a'.repeat(40), 'a'.repeat(41), 'abcdefg', '',
  'nr-1234 ', ' nr-12345', 'nr_12345', 'nr.12345', 'nr-1234\n', 'nr-12345\n', 'nr-1234é', 'ＡＢＣＤＥＦＧＨ', 'nr-1234/x',
  'abc-DEF-123-xyz', 'x'.repeat(8) + '\u0000'
];
const HEADER_NAMES = [
  'X-DAM-Secret', 'x', "!#$%&'*+.^_`|~-", 'Authorization', 'X Secret', 'X:Secret', 'X-Secret:', '', ' X', 'X\t',
  'X-Sécret', 'X(1)', 'X"1"', 'X,Y', 'X;Y', 'X=Y', 'X@Y', 'X[1]', 'X{1}', 'X/Y', 'X\\Y', 'X?Y', 'X\nY', '0'
];

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
    const cases = ['', undefined, null, 1, 2, 32, 33, 0, -1, 1.5, '1', ' 2 ', '32', '33', '0', '-1', '+2', '1.5', '1e1', 'two', '０', String(MAX_IN_FLIGHT_LIMIT)];
    for (const value of cases) {
      let warned = false;
      const limit = inFlightLimit(undefined, { warn: () => { warned = true; } }, value);
      const runtimeTakes = !warned && (value === '' || value === undefined || value === null || limit === Number(value));
      (editor.validateInFlight(value) === true).should.equal(runtimeTakes, `validateInFlight on ${JSON.stringify(value)}`);
    }
  });
});
