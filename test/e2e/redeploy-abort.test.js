'use strict';
// Issue 23 #2: what reaches a flow when a redeploy takes away an upload in flight, in a real
// Node-RED (4.1 here; 5 with `npm run test:nr5`). An asset-upload with Parallel 1 holds two
// messages: a.txt sent to a server that never answers, b.txt queued. Then a deploy changes the
// upload node. Our node ends both in done(err) (kind aborted), naming msg.name, and warns
// naming them. Which Catch node gets them depends on the deploy:
//   - "modified nodes" (the editor's default) with the Catch chain unchanged: the running
//     Catch gets both, so the flow can send them again;
//   - a full deploy, "modified flows", or a Catch chain that changed too: the old Catch is
//     stopped and nothing is delivered to any Catch, old or new; the warning in the debug
//     sidebar (and the log) is the trace.
// docs/architecture.md ("Work lost on close") records this.
require('should');
const http = require('http');
const { startNodeRed } = require('./lib/browser-node-red');
const { startCollector, waitFor } = require('./support');

describe('work lost on a redeploy: what a Catch node gets (real Node-RED)', function () {
  this.timeout(60000);
  let nr, collector, hold;
  /** Everything Node-RED printed. */
  let output = '';
  const held = [];

  before(async function () {
    this.timeout(90000);
    // A server that takes the upload's request and never answers.
    hold = http.createServer((req) => { held.push(req); req.resume(); });
    await new Promise((resolve) => hold.listen(0, '127.0.0.1', resolve));
    collector = await startCollector({ key: 'catch' });
    nr = await startNodeRed({ onOutput: (chunk) => { output += chunk; } });
    console.log(`      (Node-RED ${nr.version} on Node ${process.version})`);
  });

  after(async function () {
    this.timeout(30000);
    if (hold) { for (const req of held) req.socket.destroy(); hold.close(); }
    if (nr) {
      if (this.currentTest && this.currentTest.state === 'failed') console.log(nr.output());
      await nr.stop();
    }
    if (collector) await collector.close();
  });

  /** The flow; `version` names the upload node (a change of it restarts it), `catchVersion` the Catch chain's ids. */
  function flow(version, catchVersion) {
    const T = 'ra00000000000000';
    return [
      { id: T, type: 'tab', label: 'redeploy' },
      { id: 'ra0000000000000s', type: 'asset-server', name: 'hold', baseUrl: `http://127.0.0.1:${hold.address().port}`, timeout: 0,
        credentials: { cookie: 'JSESSIONID=redeploy-test' } },
      { id: 'ra0000000000000a', type: 'inject', z: T, name: 'a', props: [{ p: 'payload', v: 'A', vt: 'str' }, { p: 'name', v: 'a.txt', vt: 'str' }],
        repeat: '', once: false, x: 100, y: 40, wires: [['ra0000000000000u']] },
      { id: 'ra0000000000000b', type: 'inject', z: T, name: 'b', props: [{ p: 'payload', v: 'B', vt: 'str' }, { p: 'name', v: 'b.txt', vt: 'str' }],
        repeat: '', once: false, x: 100, y: 80, wires: [['ra0000000000000u']] },
      { id: 'ra0000000000000u', type: 'asset-upload', z: T, name: `upload ${version}`, server: 'ra0000000000000s', destination: '/inbox', destinationType: 'str',
        filename: '', filenameType: 'str', assetName: 'name', assetNameType: 'msg', maxInFlight: 1, x: 300, y: 60, wires: [[]] },
      { id: `ra00000000000c${catchVersion}`, type: 'catch', z: T, name: `catch ${catchVersion}`, scope: null, uncaught: false, x: 100, y: 160,
        wires: [[`ra00000000000f${catchVersion}`]] },
      { id: `ra00000000000f${catchVersion}`, type: 'function', z: T, name: `report ${catchVersion}`, outputs: 1, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [],
        func: `return { payload: { catch: "${catchVersion}", name: msg.name, kind: msg.assetError && msg.assetError.kind, message: msg.error.message } };`,
        x: 300, y: 160, wires: [[`ra00000000000h${catchVersion}`]] },
      { id: `ra00000000000h${catchVersion}`, type: 'http request', z: T, name: 'to the test', method: 'POST', ret: 'txt', paytoqs: 'ignore', url: collector.url,
        tls: '', persist: false, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], x: 500, y: 160, wires: [[]] }
    ];
  }

  let deploys = 0;

  /**
   * Deploys and waits until the flow has started (Node-RED answers a deploy once the old nodes
   * stopped, before the new ones start): a function node added last, new with each deploy,
   * warns a token when it starts.
   */
  async function deploy(nodes, type) {
    const token = `deploy-${++deploys}-started`;
    const marker = { id: `ra00000000m${String(deploys).padStart(5, '0')}`, type: 'function', z: nodes[0].id, name: 'started', func: 'return msg;',
      outputs: 1, timeout: 0, noerr: 0, initialize: `node.warn(${JSON.stringify(token)});`, finalize: '', libs: [], x: 600, y: 40, wires: [[]] };
    const res = await fetch(new URL('flows', nr.url), {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': type }, body: JSON.stringify([...nodes, marker])
    });
    [200, 204].should.containEql(res.status, await res.text());
    await waitFor(`the ${type} deploy to start the flow`, () => output.includes(token), 20000);
  }

  async function click(id) {
    (await fetch(new URL(`inject/${id}`, nr.url), { method: 'POST' })).status.should.equal(200);
  }

  /**
   * Deploys v1, starts a.txt (in flight) and b.txt (queued), deploys v2 with `type`; returns the
   * reports of the Catch chains, once a marker error sent through v2 came back (so that what
   * the close delivered has arrived, if anything did).
   */
  async function redeployDuringUpload(type, catchVersion) {
    await deploy(flow('v1', '1'), 'full');
    const since = collector.reports.length;
    const heldBefore = held.length;
    await click('ra0000000000000a');
    await waitFor('a.txt to reach the server', () => held.length > heldBefore, 10000);
    await click('ra0000000000000b');
    const logFrom = output.length;
    await deploy(flow('v2', catchVersion), type);
    // Marker: an upload refused at once (no destination) through the new node, caught by the running chain.
    await deploy(flow('v2', catchVersion).map((n) => n.id === 'ra0000000000000u' ? { ...n, destination: '' } : n), 'nodes');
    await click('ra0000000000000a');
    await waitFor("the marker error", () => collector.reports.slice(since).some((r) => /Destination/.test(r.message)), 10000)
      .catch((err) => { err.message += ` reports: ${JSON.stringify(collector.reports.slice(since))}\n${output.slice(-3000)}`; throw err; });
    const reports = collector.reports.slice(since).filter((r) => !/Destination/.test(r.message));
    return { reports, log: output.slice(logFrom) };
  }

  const summary = (reports) => reports.map((r) => `${r.catch}:${r.name}:${r.kind}`).sort();

  it('"modified nodes" deploy, Catch chain unchanged: the running Catch gets both, named, kind aborted', async () => {
    const { reports, log } = await redeployDuringUpload('nodes', '1');
    summary(reports).should.eql(['1:a.txt:aborted', '1:b.txt:aborted']);
    reports.find((r) => r.name === 'a.txt').message.should.startWith('msg.name "a.txt": aborted: the node closed');
    reports.find((r) => r.name === 'b.txt').message.should.startWith('msg.name "b.txt": dropped: the node closed before');
    log.should.match(/aborted 1 request\(s\) in flight on close: msg\.name "a\.txt"/);
    log.should.match(/dropped 1 queued message\(s\) on close: msg\.name "b\.txt"/);
  });

  it('"modified flows" deploy, Catch chain unchanged: the Catch of the restarted flow gets both', async () => {
    const { reports, log } = await redeployDuringUpload('flows', '1');
    summary(reports).should.eql(['1:a.txt:aborted', '1:b.txt:aborted']);
    log.should.match(/aborted 1 request\(s\) in flight on close: msg\.name "a\.txt"/);
  });

  for (const [type, catchVersion, what] of [
    ['nodes', '2', '"modified nodes" deploy that also replaces the Catch chain'],
    ['flows', '2', '"modified flows" deploy that also replaces the Catch chain'],
    ['full', '1', 'full deploy']
  ]) {
    it(`${what}: no Catch, old or new, gets them; the warnings name them`, async () => {
      const { reports, log } = await redeployDuringUpload(type, catchVersion);
      summary(reports).should.eql([]);
      log.should.match(/aborted 1 request\(s\) in flight on close: msg\.name "a\.txt"/);
      log.should.match(/dropped 1 queued message\(s\) on close: msg\.name "b\.txt"/);
    });
  }
});
