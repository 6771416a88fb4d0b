'use strict';
// No cookie value in any error of the api suite, whatever order mocha runs the files in:
// - this file provokes errors of its own (auth, permission, http, network, invalid-input) with
//   both test cookies and checks them, so it holds when run alone or first;
// - a root-level after() hook checks every error the api tests caught (helpers.expectError
//   records them), after ALL files have run, wherever this file sorts.
// Each api test file also ends with the same check for its own errors.
const util = require('util');
require('should');
const { AssetClient } = require('../../dist/api/client');
const { AssetApiError } = require('../../dist/api/errors');
const { COOKIES, seenErrors, assertNoCookieIn, serialise, startTestEmulator, expectError } = require('./helpers');

// Root level (outside any describe): runs once, after every test of the run.
after(function () {
  for (const error of seenErrors) error.should.be.instanceOf(AssetApiError);
  assertNoCookieIn(seenErrors);
});

describe('api client: no cookie in any error of the suite', () => {
  it('the check finds a cookie when one is there (so it can fail)', () => {
    const leaky = new AssetApiError('auth', `bad cookie ${COOKIES.editor}`);
    (() => assertNoCookieIn([leaky])).should.throw(/cookie value found/);
    const hidden = Object.assign(new Error('x'), { config: { headers: { Cookie: `JSESSIONID=${COOKIES.viewer}` } } });
    (() => assertNoCookieIn([hidden])).should.throw(/cookie value found/);
    serialise(hidden).should.containEql(util.inspect(hidden.config.headers.Cookie).slice(1, -1));
  });

  it('errors of every kind this file provokes, serialised (JSON, util.inspect depth Infinity, stack), hold no cookie', async function () {
    const server = await startTestEmulator();
    const own = [];
    const clients = [];
    const client = (cookie, baseUrl = server.url) => { const c = new AssetClient({ baseUrl, cookie, timeout: 5000 }); clients.push(c); return c; };
    try {
      own.push(await expectError(client(`JSESSIONID=${COOKIES.editor}x`).getSubscription('nr-00000001'), 'auth'));
      own.push(await expectError(client(COOKIES.viewer).getSubscription('nr-00000001'), 'permission'));
      own.push(await expectError(client(COOKIES.editor, `${server.url}/wrong-prefix`).getSubscription('nr-00000001'), 'http'));
      own.push(await expectError(client(COOKIES.editor).getSubscription('no'), 'invalid-input'));
      const closed = await startTestEmulator();
      const closedUrl = closed.url;
      await closed.close();
      own.push(await expectError(client(COOKIES.editor, closedUrl).getSubscription('nr-00000001'), 'network'));
    } finally {
      clients.forEach((c) => c.close());
      await server.close();
    }
    for (const error of own) error.should.be.instanceOf(AssetApiError);
    assertNoCookieIn(own);
    // And those of the files that ran before this one (the after() hook sees all of them).
    assertNoCookieIn(seenErrors);
    const kinds = new Set(seenErrors.map((e) => e.kind));
    console.log(`      ${seenErrors.length} errors checked so far; kinds: ${[...kinds].sort().join(', ')}`);
  });
});
