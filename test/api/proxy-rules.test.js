'use strict';
// Which proxy a URL goes through: literal cases of Node-RED core's rules (the http request node,
// no_proxy forms host, .domain, *.domain, :port, *), then the same answers as core's own helper
// (node_modules/@node-red/nodes/core/network/lib/proxyHelper.js) over many generated cases.
require('should');
const fc = require('fast-check');
const { proxyForUrl, configNodeEnv } = require('../../dist/api/proxy-rules');
const { resolveProxy } = require('../../dist/api/proxy');
const { AssetApiError } = require('../../dist/api/errors');
const core = require('@node-red/nodes/core/network/lib/proxyHelper');

describe('proxy rules (Node-RED core\'s, for the environment and an http proxy config node)', () => {
  const env = (vars) => vars;

  it('takes <scheme>_proxy for the URL\'s scheme, lower case before upper case', () => {
    proxyForUrl('http://dam.example/x', env({ http_proxy: 'http://p1:3128', https_proxy: 'http://p2:3128' })).should.equal('http://p1:3128');
    proxyForUrl('https://dam.example/x', env({ http_proxy: 'http://p1:3128', https_proxy: 'http://p2:3128' })).should.equal('http://p2:3128');
    proxyForUrl('https://dam.example/x', env({ HTTPS_PROXY: 'http://up:1' })).should.equal('http://up:1');
    proxyForUrl('https://dam.example/x', env({ https_proxy: 'http://low:1', HTTPS_PROXY: 'http://up:1' })).should.equal('http://low:1');
    proxyForUrl('https://dam.example/x', env({ https_proxy: 'http://low:1', HTTPS_PROXY: 'http://up:1' }), { favourUpperCase: true }).should.equal('http://up:1');
    proxyForUrl('https://dam.example/x', env({ HTTPS_PROXY: 'http://up:1' }), { lowerCaseOnly: true }).should.equal('');
    // An https target with only http_proxy set goes direct (as in core: no fallback between schemes).
    proxyForUrl('https://dam.example/x', env({ http_proxy: 'http://p1:3128' })).should.equal('');
    // A proxy without scheme gets the target's scheme.
    proxyForUrl('http://dam.example/x', env({ http_proxy: 'p1:3128' })).should.equal('http://p1:3128');
  });

  it('no_proxy: exact host, .domain and *.domain suffixes, :port, *, separated by commas or spaces, any case', () => {
    const p = { http_proxy: 'http://p:1', https_proxy: 'http://p:1' };
    const via = (url, noProxy) => proxyForUrl(url, { ...p, no_proxy: noProxy });
    via('http://dam.example/', 'dam.example').should.equal('');
    via('http://dam.example/', 'other.example').should.equal('http://p:1');
    via('http://sub.dam.example/', 'dam.example').should.equal('http://p:1'); // exact only, without a dot or *
    via('http://sub.dam.example/', '.dam.example').should.equal('');
    via('http://sub.dam.example/', '*.dam.example').should.equal('');
    via('http://dam.example:8873/', 'dam.example:8873').should.equal('');
    via('http://dam.example:8874/', 'dam.example:8873').should.equal('http://p:1');
    via('https://dam.example/', 'dam.example:443').should.equal('');
    via('http://dam.example/', 'a.example dam.example').should.equal('');
    via('http://dam.example/', 'a.example,,DAM.EXAMPLE').should.equal('');
    via('http://dam.example/', '*').should.equal('');
    proxyForUrl('http://dam.example/', { ...p, NO_PROXY: 'dam.example' }).should.equal('');
  });

  it('an http proxy config node: its URL for both schemes and only its own no-proxy list', () => {
    const node = configNodeEnv('http://corp-proxy:8080', ['intranet.example', '127.0.0.1:8873']);
    proxyForUrl('https://dam.example/', node).should.equal('http://corp-proxy:8080');
    proxyForUrl('http://dam.example/', node).should.equal('http://corp-proxy:8080');
    proxyForUrl('http://intranet.example/', node).should.equal('');
    proxyForUrl('http://127.0.0.1:8873/', node).should.equal('');
    proxyForUrl('http://127.0.0.1:8874/', node).should.equal('http://corp-proxy:8080');
  });

  it('gives the same answer as core\'s helper for generated URLs, environments and options', () => {
    const host = fc.constantFrom('dam.example', 'sub.dam.example', 'intranet', '127.0.0.1', 'localhost', '[::1]', 'DAM.Example');
    const entry = fc.constantFrom('dam.example', '.dam.example', '*.dam.example', 'example', '127.0.0.1', '127.0.0.1:8873',
      'localhost:443', '*', '', ' ', 'intranet:80', '[::1]', 'DAM.EXAMPLE:8873');
    const proxyValue = fc.constantFrom(undefined, 'http://p1:3128', 'p2:8080', 'https://p3', 'http://u:pw@p4:1');
    const name = fc.constantFrom('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY',
      'no_proxy', 'NO_PROXY', 'npm_config_proxy', 'npm_config_https_proxy', 'npm_config_no_proxy');
    const envArb = fc.array(fc.tuple(name, proxyValue, fc.array(entry, { maxLength: 4 })), { maxLength: 6 }).map((pairs) => {
      const e = {};
      for (const [n, value, list] of pairs) e[n] = /no_proxy/i.test(n) ? list.join(',') : value;
      return e;
    });
    const url = fc.tuple(fc.constantFrom('http', 'https'), host, fc.constantFrom('', ':80', ':443', ':8873', ':3000'))
      .map(([s, h, p]) => `${s}://${h}${p}/review/api/x`);
    const options = fc.record({ favourUpperCase: fc.boolean(), lowerCaseOnly: fc.boolean(), excludeNpm: fc.boolean() });
    fc.assert(fc.property(url, envArb, options, (u, e, o) => {
      proxyForUrl(u, e, o).should.equal(core.getProxyForUrl(u, { ...o, env: e }), `${u} ${JSON.stringify(e)} ${JSON.stringify(o)}`);
    }), { numRuns: 3000 });
  });

  it('checks a setting: env, none, or a server with a URL; wrong input names the field', () => {
    resolveProxy(undefined).mode.should.equal('env');
    resolveProxy('none').mode.should.equal('none');
    resolveProxy({ url: 'http://p:1', noProxy: 'a, b' }).env.no_proxy.should.equal('a,b');
    const bad = (setting, field) => {
      let error;
      try { resolveProxy(setting); } catch (err) { error = err; }
      error.should.be.instanceOf(AssetApiError);
      error.kind.should.equal('invalid-input');
      error.field.should.equal(field);
      return error;
    };
    bad('sometimes', 'proxy');
    bad({}, 'proxy.url').message.should.match(/proxy\.url: is required/);
    bad({ url: 'socks5://p:1' }, 'proxy.url');
    bad({ url: 'not a url' }, 'proxy.url');
    bad({ url: 'http://p:1', password: 5 }, 'proxy.password');
    bad({ url: 'http://p:1', noProxy: [1] }, 'proxy.noProxy');
  });
});
