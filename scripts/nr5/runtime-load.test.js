'use strict';
/**
 * Node-RED 5 loads node files with import() (4.1 used require). Start a real
 * Node-RED 5 with this package in a child process (same launcher as the browser
 * test) and check that every node type and the sidebar plugin registered without error.
 */
require('should');
const { startNodeRed } = require('../../test/e2e/lib/browser-node-red');
const pkg = require('../../package.json');

describe('Node-RED 5 runtime loads the package', function () {
  this.timeout(60000);
  let nr;
  before(async function () { nr = await startNodeRed(); });
  after(async function () { if (nr) await nr.stop(); });

  it('runs Node-RED 5', function () {
    console.log(`      runtime: Node-RED ${nr.version}`);
    nr.version.should.match(/^5\./);
  });

  it('registers every node type of the package with no load error', async function () {
    const res = await fetch(new URL('nodes', nr.url), { headers: { Accept: 'application/json' } });
    res.status.should.equal(200);
    const sets = (await res.json()).filter(s => s.module === pkg.name);
    sets.length.should.be.above(0, `module ${pkg.name} not loaded; Node-RED said:\n${nr.output()}`);
    for (const set of sets) {
      (set.err === undefined).should.be.true(`node set ${set.id} failed to load: ${set.err}`);
    }
    const types = sets.flatMap(s => s.types);
    for (const type of Object.keys(pkg['node-red'].nodes)) types.should.containEql(type);
  });

  it('registers the DAM sidebar plugin (GET /plugins) and serves its editor half', async function () {
    const res = await fetch(new URL('plugins', nr.url), { headers: { Accept: 'application/json' } });
    res.status.should.equal(200);
    const plugins = (await res.json()).filter(p => p.module === pkg.name);
    const ids = plugins.map(p => p.id);
    for (const name of Object.keys(pkg['node-red'].plugins)) ids.should.containEql(`${pkg.name}/${name}`);
    for (const plugin of plugins) {
      (plugin.err === undefined).should.be.true(`plugin ${plugin.id} failed to load: ${plugin.err}`);
      plugin.enabled.should.be.true();
    }
    // The runtime half answers its admin route (no adminAuth here).
    const overview = await fetch(new URL('dam-assets/overview', nr.url));
    overview.status.should.equal(200);
    (await overview.json()).should.have.properties(['servers', 'subscriptions', 'eventIns']);
    const html = await (await fetch(new URL('plugins', nr.url), { headers: { Accept: 'text/html' } })).text();
    html.should.containEql('RED.sidebar.addTab');
  });
});
