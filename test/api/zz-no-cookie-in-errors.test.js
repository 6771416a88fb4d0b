'use strict';
// Runs after the other api test files (mocha sorts them): every error the api suite
// caught is serialised every way we know, and no cookie value may appear in it.
// Each api test file also ends with the same check for its own errors, so running
// one file alone is covered too.
const util = require('util');
require('should');
const { AssetApiError } = require('../../dist/api/errors');
const { COOKIES, seenErrors, assertNoCookieIn, serialise } = require('./helpers');

describe('api client: no cookie in any error of the suite', () => {
  it('the check finds a cookie when one is there (so it can fail)', () => {
    const leaky = new AssetApiError('auth', `bad cookie ${COOKIES.editor}`);
    (() => assertNoCookieIn([leaky])).should.throw(/cookie value found/);
    const hidden = Object.assign(new Error('x'), { config: { headers: { Cookie: `JSESSIONID=${COOKIES.viewer}` } } });
    (() => assertNoCookieIn([hidden])).should.throw(/cookie value found/);
    serialise(hidden).should.containEql(util.inspect(hidden.config.headers.Cookie).slice(1, -1));
  });

  it('every error caught in the api tests, serialised (JSON, util.inspect depth Infinity, stack), holds no cookie', () => {
    seenErrors.length.should.be.above(0);
    for (const error of seenErrors) error.should.be.instanceOf(AssetApiError);
    assertNoCookieIn(seenErrors);
    const kinds = new Set(seenErrors.map((e) => e.kind));
    console.log(`      ${seenErrors.length} errors checked; kinds: ${[...kinds].sort().join(', ')}`);
  });
});
