'use strict';
// asset-event-in in the test helper: the route on the captured httpNode app, hit with supertest.
require('should');
const helper = require('node-red-node-test-helper');
const request = require('supertest');
const fc = require('fast-check');
const eventIn = require('../../nodes/asset-event-in.js');

helper.init(require.resolve('node-red'));

const SECRET = 'webhook-shared-s3cret-value';

function entry(assetId, rrn, action = 'added') {
  return { assetId, rrn, path: `/inbox/file-${assetId}.txt`, owner: 'alice', action };
}
function payload(entries, id = 'sub-test-0001') {
  return { success: true, data: { entry: entries }, id };
}

describe('asset-event-in (test helper)', function () {
  let app;
  let received;

  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(async () => {
    loaded = false;
    await helper.unload();
    helper.settings({}); // back to defaults
  });

  /** Loads an asset-event-in (id n1) wired to a helper node (id h1) that records messages. */
  let loaded = false;
  async function load(props = {}, credentials = {}) {
    if (loaded) await helper.unload(); // a second load in one test
    loaded = true;
    const flow = [
      Object.assign({ id: 'n1', type: 'asset-event-in', name: 'events', path: '/dam/events', wires: [['h1']] }, props),
      { id: 'h1', type: 'helper' }
    ];
    await helper.load((RED) => { app = RED.httpNode; return eventIn(RED); }, flow, { n1: credentials });
    received = [];
    helper.getNode('h1').on('input', (msg) => received.push(msg));
    return helper.getNode('n1');
  }

  /** Waits until `count` messages arrived (sending is asynchronous), then a little more to catch extras. */
  async function messages(count, settleMs = 50) {
    for (let i = 0; i < 200 && received.length < count; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, settleMs));
    return received;
  }

  function lastStatus(node) {
    return node.status.lastCall ? node.status.lastCall.args[0] : undefined;
  }

  /**
   * Status updates after callbacks come at most every 250 ms: waits for the trailing one, i.e.
   * until the last status matches `expected` (a state, not a time: a busy machine delays timers).
   */
  async function settledStatus(node, expected) {
    for (let waited = 0; waited < 10000; waited += 50) {
      const status = lastStatus(node);
      if (status && expected.test(status.text)) return status;
      await new Promise((r) => setTimeout(r, 50));
    }
    return lastStatus(node);
  }

  describe('receiving', function () {
    it('emits one message per entry with topic, subscriptionId, parts and receivedAt, then answers 200', async function () {
      await load();
      const before = Date.now();
      const res = await request(app).post('/dam/events').send(payload([entry(1, 10), entry(2, 11, 'modified'), entry(3, 12, 'deleted')]));
      res.status.should.equal(200);
      res.body.should.eql({ success: true, received: 3, emitted: 3 });
      const msgs = await messages(3);
      msgs.should.have.length(3);
      msgs.map((m) => m.topic).should.eql(['added', 'modified', 'deleted']);
      msgs[1].payload.should.eql(entry(2, 11, 'modified'));
      msgs.forEach((m, i) => {
        m.subscriptionId.should.equal('sub-test-0001');
        m.parts.should.eql({ id: msgs[0].parts.id, index: i, count: 3, type: 'array', len: 1 });
        Date.parse(m.receivedAt).should.be.within(before - 1000, Date.now());
        m.receivedAt.should.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      });
      // The status shows the time of the last event.
      lastStatus(helper.getNode('n1')).text.should.match(/last event \d\d:\d\d:\d\d/);
    });

    it('reads tolerantly: success as a string, numbers as strings, an rrn beyond 2^53 kept exact', async function () {
      await load();
      const body = '{"success":"true","id":"sub-test-0001","data":{"entry":[{"assetId":"7","rrn":18446744073709551615,"action":"added"}]}}';
      const res = await request(app).post('/dam/events').set('Content-Type', 'application/json').send(body);
      res.status.should.equal(200);
      const [msg] = await messages(1);
      msg.payload.should.eql({ assetId: 7, rrn: '18446744073709551615', action: 'added' });
    });

    it('an entry field holding an object without a usable toString is emitted as is, never a 500', async function () {
      await load();
      const body = '{"success":true,"data":{"entry":[{"assetId":{"toString":null},"rrn":{"valueOf":null},"action":{"toString":null}}]}}';
      const res = await request(app).post('/dam/events').set('Content-Type', 'application/json').send(body);
      res.status.should.equal(200);
      const [msg] = await messages(1);
      msg.payload.assetId.should.eql({ toString: null });
    });

    it('drops empty entries by default and counts them in the status; parts count only what is sent', async function () {
      const node = await load();
      const res = await request(app).post('/dam/events').send(payload([{}, entry(1, 10), {}]));
      res.status.should.equal(200);
      res.body.emitted.should.equal(1);
      const msgs = await messages(1);
      msgs.should.have.length(1);
      msgs[0].parts.should.containEql({ index: 0, count: 1 });
      lastStatus(node).text.should.match(/2 empty dropped/);
    });

    it('emits empty entries when asked to', async function () {
      await load({ emitEmpty: true });
      await request(app).post('/dam/events').send(payload([{}, entry(1, 10)])).expect(200);
      const msgs = await messages(2);
      msgs.should.have.length(2);
      msgs[0].payload.should.eql({});
      msgs[0].should.not.have.property('topic');
      msgs[1].topic.should.equal('added');
    });

    it('answers 200 with no message for a callback whose entries are all empty', async function () {
      await load();
      await request(app).post('/dam/events').send(payload([{}, {}])).expect(200);
      (await messages(0, 100)).should.have.length(0);
    });

    it('can emit one message per callback with the entries as an array', async function () {
      await load({ output: 'callback' });
      await request(app).post('/dam/events').send(payload([entry(1, 10), {}, entry(2, 11)])).expect(200);
      const msgs = await messages(1);
      msgs.should.have.length(1);
      msgs[0].payload.should.eql([entry(1, 10), entry(2, 11)]);
      msgs[0].subscriptionId.should.equal('sub-test-0001');
      msgs[0].should.not.have.property('parts');
    });

    it('answers with the configured success status', async function () {
      await load({ successCode: '202' });
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(202);
      await load({ successCode: 204 });
      const res = await request(app).post('/dam/events').send(payload([entry(1, 10)]));
      res.status.should.equal(204);
      res.text.should.equal('');
    });

    it('turns a GET callback into one message with msg.query and an empty payload', async function () {
      await load({ method: 'get', path: '/dam/ping', subscriptionId: 'sub-get-0001' });
      await request(app).get('/dam/ping?source=dam&n=2').expect(200);
      const msgs = await messages(1);
      msgs.should.have.length(1);
      msgs[0].payload.should.eql({});
      msgs[0].query.should.eql({ source: 'dam', n: '2' });
      msgs[0].subscriptionId.should.equal('sub-get-0001');
      // POST is not routed on a GET endpoint.
      await request(app).post('/dam/ping').send(payload([entry(1, 1)])).expect(404);
    });

    it('answers a HEAD probe of a GET endpoint without a message', async function () {
      await load({ method: 'get', path: '/dam/ping' });
      await request(app).head('/dam/ping').expect(200);
      (await messages(0, 100)).should.have.length(0);
    });
  });

  describe('bad input: documented status, no message', function () {
    async function expectRejected(req, status, reason) {
      const res = await req;
      res.status.should.equal(status);
      res.body.success.should.equal(false);
      res.body.error.should.match(reason);
      (await messages(0, 100)).should.have.length(0);
      return res;
    }

    it('400 for malformed JSON', async function () {
      const node = await load();
      await expectRejected(request(app).post('/dam/events').set('Content-Type', 'application/json').send('{"data":{"entry":[{'), 400, /not valid JSON/);
      lastStatus(node).text.should.match(/1 rejected/);
    });

    it('reads a JSON body whatever content type it declares (the spec does not say which the server sends); 400 for one that is not JSON', async function () {
      // Before: 400 for any type but JSON and text/plain, so a server (or Java client) that called
      // the JSON a form or octet-stream had every callback refused, retried, then given up.
      await load({ dedup: false });
      const json = JSON.stringify(payload([entry(1, 1)]));
      for (const type of ['application/x-www-form-urlencoded', 'application/octet-stream']) {
        await request(app).post('/dam/events').set('Content-Type', type).send(json).expect(200);
      }
      (await messages(2)).should.have.length(2);
      received.length = 0;
      await expectRejected(request(app).post('/dam/events').set('Content-Type', 'application/xml').send('<a/>'), 400, /not valid JSON/);
    });

    it('decodes the body in the charset it declares (a Java client may send ISO-8859-1); UTF-8 when none', async function () {
      // Before: always UTF-8, so "München" in ISO-8859-1 arrived as "M\uFFFDnchen", answered 200.
      await load({ dedup: false });
      const body = JSON.stringify(payload([{ ...entry(1, 1), path: '/Bilder/München.jpg' }]));
      await request(app).post('/dam/events').set('Content-Type', 'text/plain; charset=ISO-8859-1').send(Buffer.from(body, 'latin1')).expect(200);
      const utf8 = await request(app).post('/dam/events').set('Content-Type', 'application/json').send(body.replace('/Bilder/', '/Fotos/'));
      utf8.status.should.equal(200, JSON.stringify(utf8.body));
      (await messages(2)).map((m) => m.payload.path).should.eql(['/Bilder/München.jpg', '/Fotos/München.jpg']);
      received.length = 0;
      await expectRejected(request(app).post('/dam/events').set('Content-Type', 'application/json; charset=x-no-such').send(body), 400, /charset x-no-such is not supported/);
    });

    it('400 for JSON that is not the 2.3 shape, naming the field', async function () {
      await load();
      await expectRejected(request(app).post('/dam/events').send([entry(1, 1)]), 400, /^body: must be a JSON object/);
      await expectRejected(request(app).post('/dam/events').send({ success: true, id: 'x' }), 400, /^data:/);
      await expectRejected(request(app).post('/dam/events').send({ data: { entry: [1] } }), 400, /^data\.entry\[0\]/);
      await expectRejected(request(app).post('/dam/events').set('Content-Type', 'application/json').send(''), 400, /body is empty/);
    });

    it('413 past the size limit, declared or chunked', async function () {
      await load({ maxBodyMB: 0.001 }); // 1000 bytes
      const big = payload([{ ...entry(1, 1), path: '/inbox/' + 'x'.repeat(2000) }]);
      await expectRejected(request(app).post('/dam/events').send(big), 413, /larger than 1000 bytes/);
      const chunked = request(app).post('/dam/events').set('Content-Type', 'application/json');
      chunked.write(JSON.stringify(big).slice(0, 800));
      chunked.write(JSON.stringify(big).slice(800));
      await expectRejected(chunked, 413, /larger than 1000 bytes/);
      // Under the limit still works.
      await request(app).post('/dam/events').send(payload([entry(2, 2)])).expect(200);
    });

    it('401 for a missing or wrong shared secret; the secret is never shown', async function () {
      const node = await load({ secretHeader: 'X-Hook-Secret' }, { secret: SECRET });
      await expectRejected(request(app).post('/dam/events').send(payload([entry(1, 1)])), 401, /X-Hook-Secret missing or wrong/);
      await expectRejected(request(app).post('/dam/events').set('X-Hook-Secret', SECRET + 'x').send(payload([entry(1, 1)])), 401, /missing or wrong/);
      await expectRejected(request(app).post('/dam/events').set('X-Hook-Secret', SECRET.slice(0, -1)).send(payload([entry(1, 1)])), 401, /missing or wrong/);
      const ok = await request(app).post('/dam/events').set('x-hook-secret', SECRET).send(payload([entry(1, 1)]));
      ok.status.should.equal(200);
      (await messages(1)).should.have.length(1);
      const seen = JSON.stringify([node.status.args, node.warn.args, node.error.args, node.log.args, received]);
      seen.should.not.containEql(SECRET);
    });

    it('a secret ${ENV_VAR} whose variable is not set: a configuration error naming the secret and the variable, no route', async function () {
      delete process.env.DAM_TEST_UNSET_SECRET;
      const node = await load({}, { secret: '${DAM_TEST_UNSET_SECRET}' });
      node.error.args.map((a) => String(a[0])).join('\n').should.match(/secret: reads the environment variable DAM_TEST_UNSET_SECRET, which is not set/);
      await request(app).post('/dam/events').set('X-DAM-Secret', '${DAM_TEST_UNSET_SECRET}').send(payload([entry(1, 1)])).expect(404);
      process.env.DAM_TEST_UNSET_SECRET = SECRET;
      try {
        await load({}, { secret: '${DAM_TEST_UNSET_SECRET}' });
        await request(app).post('/dam/events').set('X-DAM-Secret', SECRET).send(payload([entry(1, 1)])).expect(200);
      } finally {
        delete process.env.DAM_TEST_UNSET_SECRET;
      }
    });

    it('a secret no header can carry as typed (spaces at its ends, a line break, non-ASCII): a configuration error naming the secret, no route', async function () {
      for (const bad of ['TRAILSECRET ', ' LEAD', 'line\nbreak', 'euro\u20ac']) {
        const node = await load({}, { secret: bad });
        node.error.args.map((a) => String(a[0])).join('\n').should.match(/secret: must be visible ASCII characters/, JSON.stringify(bad));
        await request(app).post('/dam/events').set('X-DAM-Secret', 'TRAILSECRET').send(payload([entry(1, 1)])).expect(404);
      }
      // Spaces inside are carried: accepted.
      await load({}, { secret: 'two words' });
      await request(app).post('/dam/events').set('X-DAM-Secret', 'two words').send(payload([entry(1, 1)])).expect(200);
    });

    it('401 on GET endpoints too', async function () {
      await load({ method: 'get' }, { secret: SECRET });
      await request(app).get('/dam/events').expect(401);
      await request(app).get('/dam/events').set('X-DAM-Secret', SECRET).expect(200);
    });

    it('400 when the payload id is not the subscription id (check on by default)', async function () {
      await load({ subscriptionId: 'sub-expected-1' });
      await expectRejected(request(app).post('/dam/events').send(payload([entry(1, 1)], 'sub-other-0001')), 400, /^id: does not match/);
      await expectRejected(request(app).post('/dam/events').send({ success: true, data: { entry: [entry(1, 1)] } }), 400, /^id:/);
      await request(app).post('/dam/events').send(payload([entry(1, 1)], 'sub-expected-1')).expect(200);
    });

    it('accepts any id when the check is off', async function () {
      await load({ subscriptionId: 'sub-expected-1', checkId: false });
      await request(app).post('/dam/events').send(payload([entry(1, 1)], 'sub-other-0001')).expect(200);
      (await messages(1))[0].subscriptionId.should.equal('sub-other-0001');
    });

    it('warns about rejected callbacks at most once a minute', async function () {
      const node = await load();
      for (let i = 0; i < 5; i++) await request(app).post('/dam/events').type('text/html').send('<html/>').expect(400);
      node.warn.callCount.should.equal(1);
      (await settledStatus(node, /5 rejected/)).text.should.match(/5 rejected/);
    });

    it('updates the status at most every 250 ms during a burst, ending on the final state, and not after close', async function () {
      const node = await load();
      const before = node.status.callCount;
      const started = Date.now();
      // A count of callbacks, not a time: on a busy machine fewer would fit in a time window.
      const n = 20;
      for (let i = 1; i <= n; i++) {
        await request(app).post('/dam/events').send(payload([entry(i, 1)])).expect(200);
        await request(app).post('/dam/events').type('text/html').send('<html/>').expect(400);
      }
      const elapsed = Date.now() - started;
      const during = node.status.callCount - before;
      during.should.be.within(1, Math.ceil(elapsed / 250) + 1); // first at once, then one per interval
      const final = new RegExp(`last event .* · ${n} rejected$`);
      (await settledStatus(node, final)).text.should.match(final);
      // A callback right before close leaves a pending update: it must not fire on the closed node.
      const shown = [];
      const spy = node.status;
      node.status = function (status) { shown.push(status); return spy.apply(this, arguments); };
      await request(app).post('/dam/events').type('text/html').send('<html/>').expect(400);
      await helper.unload();
      loaded = false;
      await new Promise((r) => setTimeout(r, 300));
      // The callback's own update may come at once (its 250 ms window may be over on a slow
      // machine) or be pending; after the clearing on close, nothing.
      const cleared = shown.findIndex((status) => Object.keys(status).length === 0);
      cleared.should.be.above(-1);
      shown.slice(cleared).should.eql([{}]);
    });
  });

  describe('random input (property-based)', function () {
    it('answers every body, content type and secret with 2xx or 4xx, and emits only for accepted calls', async function () {
      this.timeout(60000);
      const node = await load({ maxBodyMB: 0.002, dedup: false }, { secret: SECRET });
      const json = fc.jsonValue({ maxDepth: 4 });
      const entryLike = fc.oneof(fc.constant({}), fc.record({
        assetId: fc.oneof(fc.integer(), fc.string(), fc.constant('18446744073709551615')),
        rrn: fc.oneof(fc.integer(), fc.string(), fc.bigInt().map(String)),
        action: fc.constantFrom('added', 'modified', 'deleted', 'none', '')
      }, { requiredKeys: [] }));
      const body = fc.oneof(
        fc.string({ maxLength: 300 }),
        json.map((v) => JSON.stringify(v)),
        fc.record({ success: fc.oneof(fc.boolean(), fc.constantFrom('true', 'false', 'x')), id: fc.oneof(fc.string(), fc.integer()),
          data: fc.oneof(json, fc.record({ entry: fc.oneof(fc.array(entryLike, { maxLength: 8 }), json) })) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
        fc.string({ maxLength: 50 }).map((s) => '{"rrn": 123456789012345678901234567890' + s)
      );
      const contentType = fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-8');
      const secret = fc.constantFrom(undefined, SECRET, 'wrong', '');
      await fc.assert(fc.asyncProperty(body, contentType, secret, async (text, type, given) => {
        received.length = 0;
        let req = request(app).post('/dam/events');
        if (type) req = req.set('Content-Type', type);
        if (given !== undefined) req = req.set('X-DAM-Secret', given);
        const res = await req.send(text);
        if (res.status !== 200 && (res.status < 400 || res.status > 499)) return false;
        if (given !== SECRET && res.status !== 401) return false;
        if (res.status !== 200) {
          await new Promise((r) => setImmediate(r));
          return received.length === 0 && res.body.success === false && typeof res.body.error === 'string';
        }
        return true;
      }), { numRuns: 300 });
      // Node-RED still answers normally afterwards.
      await request(app).post('/dam/events').set('X-DAM-Secret', SECRET).send(payload([entry(1, 1)])).expect(200);
      node.error.called.should.be.false();
    });
  });

  describe('duplicate filter', function () {
    it('drops an entry seen before with the same subscription id, assetId, rrn and action', async function () {
      const node = await load();
      await request(app).post('/dam/events').send(payload([entry(1, 10), entry(2, 10)])).expect(200);
      // The server retries a delivery it thinks failed, with one new change appended.
      const res = await request(app).post('/dam/events').send(payload([entry(1, 10), entry(2, 10), entry(1, 11, 'modified')]));
      res.body.should.eql({ success: true, received: 3, emitted: 1 });
      const msgs = await messages(3);
      msgs.should.have.length(3);
      msgs[2].payload.should.eql(entry(1, 11, 'modified'));
      msgs[2].parts.should.containEql({ index: 0, count: 1 });
      (await settledStatus(node, /2 dup dropped/)).text.should.match(/2 dup dropped/);
      // Same asset and rrn under another subscription id is not a duplicate.
      await request(app).post('/dam/events').send(payload([entry(1, 10)], 'sub-test-0002')).expect(200);
      (await messages(4)).should.have.length(4);
    });

    it('treats entries that differ in any reported field as different changes', async function () {
      const node = await load();
      // One write transaction (one rrn) that added two files, without assetIds.
      const a = { rrn: 5, path: '/inbox/a.txt', action: 'added' };
      const b = { rrn: 5, path: '/inbox/b.txt', action: 'added' };
      const res = await request(app).post('/dam/events').send(payload([a, b, { ...a, owner: 'bob' }, { ...a, extra: 1 }]));
      res.body.should.eql({ success: true, received: 4, emitted: 4 });
      (await messages(4)).map((m) => m.payload).should.eql([a, b, { ...a, owner: 'bob' }, { ...a, extra: 1 }]);
      // The same batch resent is dropped whole.
      (await request(app).post('/dam/events').send(payload([a, b]))).body.should.eql({ success: true, received: 2, emitted: 0 });
      (await settledStatus(node, /2 dup dropped/)).text.should.match(/2 dup dropped/);
    });

    it('never drops an entry without rrn: nothing tells a resent one from a new change', async function () {
      await load();
      const a = { path: '/inbox/a.txt', action: 'added' };
      const b = { path: '/inbox/b.txt', action: 'added' };
      (await request(app).post('/dam/events').send(payload([a, b]))).body.should.eql({ success: true, received: 2, emitted: 2 });
      (await request(app).post('/dam/events').send(payload([{ ...a, action: 'modified' }]))).body.emitted.should.equal(1);
      (await request(app).post('/dam/events').send(payload([{ ...a, action: 'modified' }]))).body.emitted.should.equal(1);
      (await messages(4)).map((m) => m.payload.path).should.eql(['/inbox/a.txt', '/inbox/b.txt', '/inbox/a.txt', '/inbox/a.txt']);
    });

    it('lets an entry through again after the window', async function () {
      await load({ dedupWindow: 0.2 });
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(200);
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(200);
      (await messages(1)).should.have.length(1);
      await new Promise((r) => setTimeout(r, 250));
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(200);
      (await messages(2)).should.have.length(2);
    });

    it('forgets the oldest entries past its cap', async function () {
      await load({ dedupMax: 2 });
      for (const id of [1, 2, 3]) await request(app).post('/dam/events').send(payload([entry(id, id)])).expect(200);
      await request(app).post('/dam/events').send(payload([entry(1, 1), entry(3, 3)])).expect(200);
      const msgs = await messages(4);
      msgs.map((m) => m.payload.assetId).should.eql([1, 2, 3, 1]);
    });

    it('past its cap never forgets the entries of the callback being checked (issue 22)', async function () {
      await load({ dedupMax: 2 });
      const batch = payload([entry(1, 1), entry(2, 2), entry(3, 3)]);
      (await request(app).post('/dam/events').send(batch).expect(200)).body.emitted.should.equal(3);
      (await request(app).post('/dam/events').send(batch).expect(200)).body.emitted.should.equal(0);
      (await messages(3)).map((m) => m.payload.assetId).should.eql([1, 2, 3]);
    });

    it('can be switched off', async function () {
      await load({ dedup: false });
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(200);
      await request(app).post('/dam/events').send(payload([entry(1, 10)])).expect(200);
      (await messages(2)).should.have.length(2);
    });
  });

  describe('route lifecycle', function () {
    it('removes the route on close', async function () {
      await load();
      await request(app).post('/dam/events').send(payload([entry(1, 1)])).expect(200);
      await helper.unload();
      await request(app).post('/dam/events').send(payload([entry(1, 1)])).expect(404);
      const routes = (app._router || app.router).stack.filter((l) => l.route);
      routes.should.have.length(0);
    });

    it('leaves no stale route after a redeploy with a new path', async function () {
      await load();
      await helper.setFlows([
        { id: 'n1', type: 'asset-event-in', path: '/dam/renamed', wires: [['h1']] },
        { id: 'h1', type: 'helper' }
      ]);
      await request(app).post('/dam/events').send(payload([entry(1, 1)])).expect(404);
      await request(app).post('/dam/renamed').send(payload([entry(1, 1)])).expect(200);
      const paths = (app._router || app.router).stack.filter((l) => l.route).map((l) => l.route.path);
      paths.should.eql(['/dam/renamed']);
    });

    it('runs httpNodeMiddleware before the node, as core http in does', async function () {
      helper.settings({ httpNodeMiddleware: (req, res, next) => (req.headers['x-block'] ? res.status(418).end() : next()) });
      await load();
      await request(app).post('/dam/events').set('X-Block', '1').send(payload([entry(1, 1)])).expect(418);
      await request(app).post('/dam/events').send(payload([entry(1, 1)])).expect(200);
    });

    it('uses a body that a middleware already parsed', async function () {
      helper.settings({ httpNodeMiddleware: require('express').json() });
      await load();
      await request(app).post('/dam/events').send(payload([entry(5, 50)])).expect(200);
      (await messages(1))[0].payload.should.eql(entry(5, 50));
    });

    it('registers no route and says why for an invalid configuration', async function () {
      const node = await load({ subscriptionId: 'a_b' });
      node.error.lastCall.args[0].should.match(/subscriptionId: must be 8 to 40 characters/);
      lastStatus(node).should.containEql({ fill: 'red', shape: 'ring' });
      await request(app).post('/dam/events').send(payload([entry(1, 1)])).expect(404);
      const noPath = await load({ path: '' });
      noPath.error.lastCall.args[0].should.match(/path: is required/);
    });

    it('a path with route pattern characters is refused, and with "manage" also a parameter or wildcard; no route is registered', async function () {
      for (const [props, rule] of [[{ path: '/dam/cb?x' }, /path: must not contain \? # \+/], [{ path: '/dam/a.b+' }, /path: must not contain/], [{ path: '/dam/*' }, /path: must not contain/],
        [{ path: '/dam/:source', manage: true, server: 'none' }, /path: with "manage subscription" it is the callback URL/]]) {
        const node = await load(props);
        node.error.lastCall.args[0].should.match(rule);
        await request(app).post(props.path.replace(/[?+:]/g, '')).send(payload([entry(1, 1)])).expect(404);
      }
      // Without "manage", a parameter takes the callbacks of several subscriptions.
      await load({ path: '/dam/param/:source' });
      await request(app).post('/dam/param/a').send(payload([entry(1, 1)])).expect(200);
    });

    it('a path another node of the flows already routes (a core http in, another asset-event-in): a warning naming it', async function () {
      const flow = [
        { id: 'n1', type: 'asset-event-in', name: 'events', path: 'dam/events', wires: [['h1']] },
        { id: 'off', type: 'tab', disabled: true },
        { id: 'offIn', type: 'asset-event-in', z: 'off', name: 'on a disabled flow', path: '/dam/events', wires: [[]] },
        { id: 'core', type: 'http in', name: 'old hook', url: '/DAM/events/', method: 'post', wires: [[]] },
        { id: 'other', type: 'http in', url: '/dam/events', method: 'get', wires: [[]] },
        { id: 'h1', type: 'helper' }
      ];
      loaded = true;
      await helper.load([eventIn, require('@node-red/nodes/core/network/21-httpin.js')], flow, {});
      const node = helper.getNode('n1');
      const warnings = node.warn.args.map((a) => String(a[0]));
      warnings.should.containEql('POST /dam/events is also the route of http in "old hook" (core): each call goes to one of them only; give one another path');
      warnings.filter((w) => /disabled flow/.test(w)).should.eql([]);
    });
  });
});
