'use strict';
// Issue 22 items 1 and 2 against a real Node-RED process with a small heap
// (--max-old-space-size=256): the callbacks that took Node-RED down before (a million tiny
// entries, a 48 MB body of six million, forty callbacks of one 10 MB entry, one callback larger
// than the duplicate filter's cap sent twice) are answered as documented, and Node-RED stays up
// and keeps answering the editor. Before the fix the 10 MB entries alone filled the heap (the
// filter kept each entry's whole text as its key) and the process died.
require('should');
const http = require('http');
const { LONG, figure, launchNodeRed, ids, monitorNodes, monitorStats, monitorReset, mib } = require('./lib/rig');
const { waitFor } = require('./lib/support');

const HEAP_MB = 256;

/** POSTs a JSON text; resolves { status, json }. */
function post(url, text) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = JSON.parse(body); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, json, text: body });
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

function tinyEntries(count) {
  return `{"success":true,"data":{"entry":[${Array(count).fill('{"a":1}').join(',')}]}}`;
}
function callback(entries) {
  return JSON.stringify({ success: true, id: 'sub-hardening-01', data: { entry: entries } });
}

describe(`reliability: one callback cannot take down a Node-RED with a ${HEAP_MB} MB heap (issue 22)`, function () {
  this.timeout(LONG ? 600000 : 120000);
  let rig;
  let hook;

  before(async function () {
    rig = await launchNodeRed({ env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` } });
    const next = ids('b22');
    const tab = { id: next(), type: 'tab', label: 'hardening' };
    const monitor = monitorNodes(tab.id, next);
    const hookNode = {
      id: next(), type: 'asset-event-in', z: tab.id, name: 'attacked', method: 'post', path: '/dam/attacked', dedup: true,
      wires: [[monitor.counter]]
    };
    await rig.deploy([tab, hookNode, ...monitor.nodes]);
    hook = `${rig.url}/dam/attacked`;
  });

  afterEach(async function () {
    rig.running.should.equal(true, 'Node-RED is still running');
    const editor = await fetch(`${rig.url}/`);
    editor.status.should.equal(200);
    await editor.arrayBuffer();
    const flows = await fetch(`${rig.url}/flows`);
    flows.status.should.equal(200);
    (await flows.json()).length.should.be.above(0);
    rig.crashLines().should.eql([]);
  });

  after(async function () {
    if (rig) {
      const s = await monitorStats(rig, { gc: true }).catch(() => undefined);
      if (s) figure(`issue 22: after the attacks, heap used ${mib(s.memory.heapUsed)}, RSS ${mib(s.memory.rss)} (heap limit ${HEAP_MB} MB)`);
      if (process.env.RELIABILITY_DEBUG) console.log(rig.lines.join('\n'));
      await rig.close();
    }
  });

  it('a million tiny entries (8 MB), three times, and six million (48 MB): 413 naming Max entries, nothing emitted', async function () {
    await monitorReset(rig);
    const million = tinyEntries(1000000);
    for (let i = 0; i < 3; i++) {
      const r = await post(hook, million);
      r.status.should.equal(413, r.text);
      r.json.error.should.match(/more than 100000 entries.*Max entries/);
    }
    const six = await post(hook, tinyEntries(6000000));
    six.status.should.equal(413, six.text);
    (await monitorStats(rig)).count.total.should.equal(0);
  });

  it('two callbacks at once of 14 million plain values (49 MB) beside one entry: 413 naming Max entries', async function () {
    // Before: numbers and strings were not counted before parsing; the first was parsed into about
    // 280 MB of heap and Node-RED died ("JavaScript heap out of memory").
    await monitorReset(rig);
    const junk = `{"success":true,"data":{"entry":[{"assetId":1,"rrn":1}]},"x":[${'1.5,"",'.repeat(7000000)}0]}`;
    const answers = await Promise.all([post(hook, junk), post(hook, junk)]);
    for (const r of answers) {
      r.status.should.equal(413, r.text);
      r.json.error.should.match(/values.*Max entries/);
    }
    (await monitorStats(rig)).count.total.should.equal(0);
  });

  it('forty callbacks of one distinct 10 MB entry: each 200 and emitted; the heap does not keep them', async function () {
    await monitorReset(rig);
    const rounds = LONG ? 100 : 40;
    const filler = 'x'.repeat(10e6);
    for (let i = 0; i < rounds; i++) {
      const r = await post(hook, callback([{ assetId: 700 + i, rrn: 9000 + i, path: `/big/${i}.bin`, owner: filler, action: 'added' }]));
      r.status.should.equal(200, r.text);
      r.json.emitted.should.equal(1);
    }
    await waitFor(`${rounds} messages`, async () => (await monitorStats(rig)).count.total === rounds, 20000);
    const s = await monitorStats(rig, { gc: true });
    figure(`issue 22: ${rounds} callbacks of one 10 MB entry; heap used after GC ${mib(s.memory.heapUsed)}`);
  });

  it('a callback of 15,000 entries (more than the filter keeps, 10,000) sent twice: emitted once', async function () {
    await monitorReset(rig);
    const body = callback(Array.from({ length: 15000 }, (_, i) => ({ assetId: 20000 + i, rrn: 30000 + i, path: `/b/${i}`, owner: 'o', action: 'added' })));
    const first = await post(hook, body);
    first.json.should.eql({ success: true, received: 15000, emitted: 15000 });
    const again = await post(hook, body);
    again.json.should.eql({ success: true, received: 15000, emitted: 0 });
  });

  it('a callback at the cap (100,000 entries) is emitted while the editor keeps answering', async function () {
    await monitorReset(rig);
    const body = callback(Array.from({ length: 100000 }, (_, i) => ({ assetId: 100000 + i, rrn: 200000 + i, action: 'added' })));
    const answer = post(hook, body);
    let editorAnswers = 0;
    let done = false;
    answer.then(() => { done = true; }, () => { done = true; });
    while (!done) {
      const r = await fetch(`${rig.url}/flows`, { signal: AbortSignal.timeout(30000) });
      await r.arrayBuffer();
      if (r.ok) editorAnswers++;
    }
    const r = await answer;
    r.json.should.eql({ success: true, received: 100000, emitted: 100000 });
    editorAnswers.should.be.above(0);
    figure(`issue 22: GET /flows answered ${editorAnswers} times while a 100,000-entry callback was read and emitted`);
  });
});
