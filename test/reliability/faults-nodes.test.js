'use strict';
// Suite 1 (nodes half): the request nodes in a Node-RED runtime (test helper) against the fault
// proxy in front of the emulator. Each fault must reach a Catch node with msg.assetError.kind
// right, show a red status saying so, leave no file and no open socket, and raise no unhandled
// rejection.
require('should');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const s = require('../nodes/nodes-support');
const r = require('./lib/support');

const { helper } = s;
const COOKIE_VALUE = 'faults-nodes-cookie-8d21f0';
const COOKIE = `JSESSIONID=${COOKIE_VALUE}`;
const SUB_ID = 'faults-nodes-sub-01';

/** The request nodes under test, by id. */
const NODES = {
  upload: 'up1', downloadBuffer: 'dlb', downloadFile: 'dlf', export: 'ex1', subscribe: 'sb1'
};

/** Faults that reached the Catch node with the expected kind, by kind, and proxy connections, over every pass. */
const tally = { kinds: {}, connections: 0 };

/** The suite; run PASSES times (once in CI, 10 times in the long mode). */
function suite(pass) {
  this.timeout(r.pick(20000, 120000));
  let emulator;
  let proxy;
  let work;
  let faults;
  let seed; // { fuid, data }

  before(async function () {
    await helper.startServer();
    work = r.tempDir('dam-faults-nodes-');
    ({ emulator, proxy, seed: seed } = await r.startFaultRig(work, { cookieValue: COOKIE_VALUE, subId: SUB_ID }));
    faults = r.watchProcessFaults();
  });

  after(async function () {
    if (faults) faults.stop();
    if (proxy) tally.connections += proxy.stats.accepted;
    if (pass === PASSES) {
      r.figure(`node faults: ${PASSES} pass(es), Catch-node errors by kind ${JSON.stringify(tally.kinds)}, ` +
        `${tally.connections} connections through the proxy, every one closed again, no unhandled rejection`);
    }
    await helper.unload();
    if (proxy) await proxy.close();
    if (emulator) await emulator.close();
    await helper.stopServer();
    r.rmDir(work);
  });

  afterEach(async function () {
    try {
      await proxy.waitIdle(3000); // closed by the fault handling itself, before the flow stops
    } finally {
      await helper.unload();
      await proxy.setMode({ mode: 'pass' });
    }
    faults.take().should.eql([], 'no unhandled rejection or uncaught exception');
  });

  /** Loads the flow: every request node on one asset-server pointed at the proxy; one Catch node. */
  async function loadFlow({ timeout = 5 } = {}) {
    const z = 'f1';
    const node = (id, type, props) => ({ id, type, z, server: 'server', wires: [['out']], ...props });
    await s.load([
      { id: z, type: 'tab', label: 'faults' },
      { id: 'server', type: 'asset-server', name: 'via proxy', baseUrl: proxy.url, timeout },
      node(NODES.upload, 'asset-upload', { destination: '/faults', destinationType: 'str' }),
      node(NODES.downloadBuffer, 'asset-download', { output: 'buffer' }),
      node(NODES.downloadFile, 'asset-download', { output: 'file', filename: 'filename', filenameType: 'msg' }),
      node(NODES.export, 'asset-export', {}),
      node(NODES.subscribe, 'asset-subscribe', { action: 'get', subscriptionId: SUB_ID, subscriptionIdType: 'str' }),
      { id: 'out', type: 'helper', z, wires: [] },
      { id: 'catch1', type: 'catch', z, scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper', z, wires: [] }
    ], s.credentials(COOKIE));
    const statuses = {};
    for (const id of Object.values(NODES)) statuses[id] = s.recordStatus(helper.getNode(id));
    return statuses;
  }

  /** Sends msg to node `id`; resolves { out } or { caught } with the first message that comes back. */
  function send(id, msg, ms = 15000) {
    const result = s.outcome(ms);
    helper.getNode(id).receive(msg);
    return result;
  }

  /** A download target in a fresh folder, and a check that nothing was left in that folder. */
  function downloadTarget() {
    const dir = fs.mkdtempSync(path.join(work, 'dl-'));
    const target = path.join(dir, 'asset.bin');
    return {
      target,
      clean() {
        fs.existsSync(target).should.be.false('no file at the download target');
        fs.readdirSync(dir).should.eql([], 'no temporary file beside the target');
      }
    };
  }

  /** The messages each node gets in these cases. */
  function messages(label) {
    const t = downloadTarget();
    return {
      target: t,
      [NODES.upload]: { payload: Buffer.alloc(64 * 1024, 1), name: `${label}.bin`, wait: false },
      [NODES.downloadBuffer]: { fuid: seed.fuid },
      [NODES.downloadFile]: { fuid: seed.fuid, filename: t.target },
      [NODES.export]: { fuid: seed.fuid },
      [NODES.subscribe]: {}
    };
  }

  /** Runs `id` with `msg`; it must reach the Catch node with `kind`; returns the caught msg. */
  async function expectCaught(statuses, id, msg, kind, extra = {}) {
    const started = Date.now();
    const result = await send(id, msg);
    if (result.out) throw new Error(`${id}: expected a ${kind} error at the Catch node, got an output message`);
    const caught = result.caught;
    caught.error.source.id.should.equal(id);
    caught.assetError.kind.should.equal(kind, `${id}: ${caught.error.message}`);
    if (extra.status !== undefined) caught.assetError.status.should.equal(extra.status, id);
    if (extra.within !== undefined) (Date.now() - started).should.be.below(extra.within, id);
    const last = statuses[id][statuses[id].length - 1];
    last.should.containDeep({ fill: 'red', shape: 'ring' });
    // Reason first: the kind, or for an HTTP status the status itself ("503: server busy, retry").
    last.text.should.match(kind === 'http' ? /^(http|\d{3}): / : new RegExp(`^${kind}: `));
    tally.kinds[kind] = (tally.kinds[kind] || 0) + 1;
    const everything = s.serialise(caught) + s.serialise(statuses[id]) + s.loggedText();
    everything.should.not.containEql(COOKIE_VALUE);
    return caught;
  }

  async function everyNode(kind, extra = {}, only = Object.values(NODES)) {
    const statuses = await loadFlow(extra.flow);
    const m = messages(`${kind}-${extra.status || ''}`);
    for (const id of only) await expectCaught(statuses, id, m[id], kind, extra);
    m.target.clean();
  }

  it('connection refused: every node reaches the Catch node with kind network and a red "network:" status', async function () {
    await proxy.setMode({ mode: 'refuse' });
    await everyNode('network');
  });

  it('reset mid-upload (1 MiB of 8 MiB): kind network; nothing stored', async function () {
    await proxy.setMode({ mode: 'reset-request', afterBytes: r.MiB });
    const statuses = await loadFlow();
    await expectCaught(statuses, NODES.upload, { payload: crypto.randomBytes(8 * r.MiB), name: 'reset-upload.bin', wait: true }, 'network');
    const found = await (await fetch(`${emulator.url}/emulator/assets?path=${encodeURIComponent('/faults/reset-upload.bin')}`, { headers: { Cookie: COOKIE } })).json();
    found.success.should.be.false();
  });

  it('reset mid-download (300 kB of 2 MiB): kind network to a Buffer and to a file; no file left', async function () {
    await proxy.setMode({ mode: 'reset-response', afterBytes: 300 * 1000 });
    await everyNode('network', {}, [NODES.downloadBuffer, NODES.downloadFile]);
  });

  it('stalled server: the timeout (0.5 s) fires on every node and the status says "timeout:"', async function () {
    await proxy.setMode({ mode: 'stall' });
    await everyNode('timeout', { flow: { timeout: 0.5 }, within: 3000 });
  });

  it('slow drip with gaps longer than the timeout: kind timeout mid-download; no file left', async function () {
    await proxy.setMode({ mode: 'drip', bytes: 4096, intervalMs: 800 });
    await everyNode('timeout', { flow: { timeout: 0.5 }, within: 4000 }, [NODES.downloadFile, NODES.downloadBuffer]);
  });

  it('slow drip that keeps moving (32 KiB every 25 ms, timeout 0.5 s): the download succeeds byte-identical', async function () {
    await proxy.setMode({ mode: 'drip', bytes: 32 * 1024, intervalMs: 25 });
    await loadFlow({ timeout: 0.5 });
    const result = await send(NODES.downloadBuffer, { fuid: seed.fuid });
    if (result.caught) throw new Error(`expected output, got ${result.caught.error.message}`);
    r.sha256(result.out.payload).should.equal(r.sha256(seed.data));
    await helper.unload(); // the keep-alive socket of a successful call closes with the config node
  });

  for (const status of [500, 502, 503, 449]) {
    it(`HTTP ${status}: every node reaches the Catch node with kind http and status ${status}`, async function () {
      await proxy.setMode({ mode: 'status', status });
      await everyNode('http', { status });
    });
  }

  it('a JSON answer that is not JSON: kind http at upload, export and subscribe', async function () {
    await proxy.setMode({ mode: 'not-json' });
    const caught = [];
    const statuses = await loadFlow();
    const m = messages('not-json');
    for (const id of [NODES.upload, NODES.export, NODES.subscribe]) caught.push(await expectCaught(statuses, id, m[id], 'http'));
    for (const c of caught) c.error.message.should.match(/not a JSON object/);
  });

  it('asset-event-in owning its subscription: a stalled server shows "timeout" in its status, and it registers once the server answers', async function () {
    this.timeout(20000);
    await proxy.setMode({ mode: 'stall' });
    const eventIn = require('../../nodes/asset-event-in.js');
    await helper.load([...Object.values(s.nodes), eventIn], [
      { id: 'f1', type: 'tab', label: 'faults' },
      { id: 'server', type: 'asset-server', name: 'via proxy', baseUrl: proxy.url, publicBaseUrl: 'http://127.0.0.1:9', timeout: 0.5 },
      { id: 'ev1', type: 'asset-event-in', z: 'f1', path: '/faults-hook', method: 'post', manage: true, server: 'server',
        subscriptionId: 'faults-owned-sub-01', watchPath: ['* /nowhere'], wires: [[]] }
    ], { server: { cookie: COOKIE } });
    const statuses = s.recordStatus(helper.getNode('ev1'));
    const failed = await r.waitFor('a red timeout status', () => statuses.find((st) => st.fill === 'red' && /timeout:/.test(st.text)), 5000);
    failed.text.should.startWith('faults-owned-sub-01');
    await proxy.setMode({ mode: 'pass' });
    // The node retries after 5 s (its first backoff step).
    await r.waitFor('the subscription registered after the retry', async () => {
      const res = await fetch(`${emulator.url}/review/api/events/assets/subscribe/faults-owned-sub-01`, { headers: { Cookie: COOKIE } });
      return (await res.json()).success === true;
    }, 10000, 100);
    await r.waitFor('a status without the error', () => statuses.length && statuses[statuses.length - 1].fill !== 'red', 3000);
    s.loggedText().should.match(/registering subscription faults-owned-sub-01 failed \(timeout\)/);
    s.loggedText().should.not.containEql(COOKIE_VALUE);
    await helper.unload(); // the keep-alive socket of the registration closes with the config node
  });

  it(`a redirect on upload: kind http, not followed, and a ${r.pick(256, 1024)} MiB file from disk is streamed, not buffered`, async function () {
    this.timeout(r.pick(40000, 180000));
    const size = r.pick(256, 1024) * r.MiB;
    const file = r.sparseFile(path.join(work, 'redirect.bin'), size);
    await proxy.setMode({ mode: 'redirect', answerAfter: 'body' });
    const statuses = await loadFlow({ timeout: 10 });
    const acceptedBefore = proxy.stats.accepted;
    const sentBefore = proxy.stats.bytesFromClient;
    const rss = r.rssSampler();
    const caught = await expectCaught(statuses, NODES.upload, { filename: file }, 'http', { status: 302 });
    const memory = rss.stop();
    fs.rmSync(file);
    caught.error.message.should.match(/redirect/);
    (proxy.stats.accepted - acceptedBefore).should.equal(1, 'the redirect was not followed');
    (proxy.stats.bytesFromClient - sentBefore).should.be.aboveOrEqual(size);
    r.figure(`asset-upload node, redirect after a ${size / r.MiB} MiB body: kind http, Node-RED process RSS growth ${(memory.growth / r.MiB).toFixed(1)} MiB`);
    memory.growth.should.be.below(r.RSS_BOUND, 'RSS stayed flat: the body was streamed, not buffered');
  });
}

const PASSES = r.pick(1, 10);
for (let pass = 1; pass <= PASSES; pass++) {
  describe(`reliability 1: faults on the nodes (test helper, fault proxy in front of the emulator)${PASSES > 1 ? ` (pass ${pass} of ${PASSES})` : ''}`, function () { suite.call(this, pass); });
}
