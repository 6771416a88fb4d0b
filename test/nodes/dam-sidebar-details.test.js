'use strict';
// The DAM sidebar's subscription details (GET dam-assets/subscriptions/:server/:id, guarded by
// asset-server.read only, real Node-RED): when the DAM server answers with an error, a read-only
// user gets our classified words (kind, HTTP status), never the server's own error text, as
// Test connection does (issue 22 item 3).
require('should');
const http = require('http');
const { startNodeRed } = require('../e2e/lib/browser-node-red');

const SERVER_TEXT = 'server-side-detail-Rt62Wq';

describe('DAM sidebar: subscription details never pass on the server\'s error text', function () {
  this.timeout(60000);
  let nr, dam;
  // path prefix of each asset-server -> what the DAM server answers there
  const ANSWERS = {
    '/e500': [500, { success: false, error: `${SERVER_TEXT} 500` }],
    '/e403': [403, { error: `${SERVER_TEXT} 403` }],
    '/e503': [503, { error: `${SERVER_TEXT} 503` }],
    '/rejected': [200, { success: false, error: `no such subscription ${SERVER_TEXT}` }],
    '/permission': [200, { success: false, error: `permission denied: ${SERVER_TEXT}` }]
  };

  before(async function () {
    this.timeout(90000);
    dam = http.createServer((req, res) => {
      const [status, body] = ANSWERS[Object.keys(ANSWERS).find((p) => req.url.startsWith(p))] || [404, {}];
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    await new Promise((resolve) => dam.listen(0, '127.0.0.1', resolve));
    nr = await startNodeRed();
    const base = `http://127.0.0.1:${dam.address().port}`;
    const flows = [{ id: 'tab1', type: 'tab', label: 'details' }];
    Object.keys(ANSWERS).forEach((prefix, i) => {
      flows.push({ id: `srv${i}`, type: 'asset-server', baseUrl: `${base}${prefix}`, timeout: 5, credentials: { cookie: 'c' } });
      flows.push({ id: `sub${i}`, type: 'asset-subscribe', z: 'tab1', server: `srv${i}`, subscriptionId: 'watched-sub', subscriptionIdType: 'str', wires: [] });
    });
    const res = await fetch(new URL('flows', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': 'full' }, body: JSON.stringify(flows)
    });
    [200, 204].should.containEql(res.status);
    // The admin API answers before the flows run: wait until every asset-server is running.
    for (;;) {
      const overview = await (await fetch(new URL('dam-assets/overview', nr.url))).json();
      if (overview.servers.length === Object.keys(ANSWERS).length && overview.servers.every((s) => s.running)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  after(async function () {
    this.timeout(30000);
    if (nr) await nr.stop();
    if (dam) dam.close();
  });

  Object.entries(ANSWERS).forEach(([prefix, [status]], i) => {
    it(`${prefix.slice(1)} (HTTP ${status}): ok false with a kind and our words only`, async function () {
      const res = await fetch(new URL(`dam-assets/subscriptions/srv${i}/watched-sub`, nr.url));
      const text = await res.text();
      res.status.should.equal(200, text);
      const answer = JSON.parse(text);
      answer.ok.should.be.false();
      answer.error.kind.should.be.a.String();
      answer.error.message.should.be.a.String().and.not.be.empty();
      text.should.not.containEql(SERVER_TEXT);
    });
  });
});
