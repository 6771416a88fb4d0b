'use strict';
// Callback delivery of the emulator's subscription hub over real HTTP (spec section 3, 4.1 rules 2-7
// and 12, section 6): a local receiver on 127.0.0.1:0 plays the subscriber.
require('should');
const fs = require('fs');
const path = require('path');
const { openSubscriptionHub } = require('../../dist/emulator/subscriptions');
const { startReceiver, sleep, eventually } = require('./delivery-receiver');
const { tmpDir, rmDir } = require('./support');

const RETRY_DELAY = 300;

let fuid = 0;
function change(p = '/inbox/a.jpg', extra = {}) {
  fuid += 1;
  return { rrn: 1000 + fuid, fuid, path: p, owner: 'alice', action: 'added', metadata: {}, changedMetadataKeys: [], ...extra };
}
const entryOf = c => ({ assetId: c.fuid, rrn: c.rrn, path: c.path, owner: c.owner, action: c.action });

describe('emulator subscription hub: callback delivery', function () {
  this.timeout(20000);
  let dir;
  let hub;
  let receiver;
  let logs;

  async function open(extra = {}) {
    hub = await openSubscriptionHub({ dataDir: dir, retryDelayMs: RETRY_DELAY, log: line => logs.push(line), ...extra });
    return hub;
  }

  beforeEach(async function () {
    dir = tmpDir();
    logs = [];
    receiver = await startReceiver();
    await open();
  });
  afterEach(async function () {
    await hub.close();
    await receiver.close();
    rmDir(dir);
  });

  const subscribe = (id, fields = {}) => hub.register(id, { callback: [`${receiver.url}/hook`], ...fields }).then(r => {
    r.should.eql({ ok: true });
  });

  describe('the request (rule 12, section 6.3)', function () {
    it('GET: calls the URL with query params and headers, and sends no body', async function () {
      await subscribe('get-sub-1', {
        callback: [`${receiver.url}/hook?existing=1`],
        queryParam: ['token=a b&c', 'flag', 'sub=get-sub-1'],
        header: ['X-Api-Key: k1', 'X-Multi: one', 'x-multi: two']
      });
      await hub.publish(change());
      const [call] = await receiver.waitFor(1);
      call.method.should.equal('GET');
      call.url.should.equal('/hook?existing=1&token=a%20b%26c&flag&sub=get-sub-1');
      call.headers['x-api-key'].should.equal('k1');
      call.headers['x-multi'].should.equal('one, two');
      call.body.should.equal('');
      (call.headers['content-length'] === undefined || call.headers['content-length'] === '0').should.be.true();
      call.headers.should.not.have.property('content-type');
      call.headers.should.not.have.property('transfer-encoding');
    });

    it('POST: carries the 2.3 payload as JSON with the subscription id', async function () {
      await subscribe('post-sub-1', { method: ['POST'], watchPath: ['* /inbox'] });
      const c = change('/inbox/photo.jpg', { action: 'modified' });
      await hub.publish(c);
      const [call] = await receiver.waitFor(1);
      call.method.should.equal('POST');
      call.url.should.equal('/hook');
      call.headers['content-type'].should.equal('application/json');
      JSON.parse(call.body).should.eql({ success: true, data: { entry: [entryOf(c)] }, id: 'post-sub-1' });
      Number(call.headers['content-length']).should.equal(Buffer.byteLength(call.body));
    });

    it('POST: a Content-Type header of the subscription overrides the default (rule 6)', async function () {
      await subscribe('post-sub-2', { method: ['POST'], header: ['content-type: application/vnd.hook+json'] });
      await hub.publish(change());
      const [call] = await receiver.waitFor(1);
      call.headers['content-type'].should.equal('application/vnd.hook+json');
      JSON.parse(call.body).id.should.equal('post-sub-2');
    });

    it('PUT and PATCH carry the payload; DELETE sends no body', async function () {
      await subscribe('put-sub-01', { method: ['PUT'], queryParam: ['m=put'] });
      await subscribe('patch-sub-1', { method: ['PATCH'], queryParam: ['m=patch'] });
      await subscribe('delete-sub1', { method: ['DELETE'], queryParam: ['m=delete'] });
      await hub.publish(change());
      const calls = await receiver.waitFor(3);
      const by = m => calls.find(c => c.method === m);
      JSON.parse(by('PUT').body).id.should.equal('put-sub-01');
      JSON.parse(by('PATCH').body).id.should.equal('patch-sub-1');
      by('DELETE').body.should.equal('');
    });

    it('only matching subscriptions are called; a metadata watch fires on a metadata change only', async function () {
      await subscribe('inbox-only', { watchPath: ['* /inbox'], queryParam: ['s=inbox'] });
      await subscribe('city-watch', { watchMetadata: ['City==SFO'], queryParam: ['s=city'] });
      await hub.publish(change('/outbox/x.jpg'));
      await hub.publish(change('/inbox/y.jpg'));
      await hub.publish(change('/outbox/z.jpg', { action: 'modified', metadata: { City: 'SFO' }, changedMetadataKeys: ['City'] }));
      await receiver.waitFor(2);
      await sleep(200);
      receiver.calls.map(c => c.url).sort().should.eql(['/hook?s=city', '/hook?s=inbox']);
    });

    it('succeeds on the subscription\'s successCode only (rule 4)', async function () {
      receiver.respond = () => 201;
      await subscribe('code-sub-1', { successCode: ['201'], queryParam: ['s=201'] });
      await subscribe('code-sub-2', { retryCount: ['0'], queryParam: ['s=200'] });
      await hub.publish(change());
      await receiver.waitFor(2);
      await eventually(() => hub.deliveries().every(d => d.state !== 'pending'));
      hub.deliveries('code-sub-1')[0].should.match({ state: 'succeeded', attempts: 1, lastResult: 201 });
      hub.deliveries('code-sub-2')[0].should.match({ state: 'permanently-failed', attempts: 1, lastResult: 201 });
    });

    it('never logs header values or the callback URL', async function () {
      receiver.respond = () => 500;
      await subscribe('log-sub-01', { header: ['Authorization: Bearer hunter2'], queryParam: ['secret=swordfish'], retryCount: ['0'] });
      await hub.publish(change());
      await receiver.waitFor(1);
      await eventually(() => hub.deliveries('log-sub-01')[0]?.state === 'permanently-failed');
      const text = logs.join('\n');
      text.should.match(/log-sub-01/);
      text.should.match(/attempt 1 -> 500/);
      text.should.not.match(/hunter2|swordfish|Bearer|127\.0\.0\.1/);
    });
  });

  describe('state machine (section 3)', function () {
    it('a failing receiver gets exactly 1 + retryCount attempts spaced by the retry delay, then permanently failed', async function () {
      receiver.respond = () => 503;
      await subscribe('fail-sub-01', { method: ['POST'], retryCount: ['3'] });
      const c = change();
      await hub.publish(c);
      await receiver.waitFor(1);
      await eventually(() => hub.deliveries('fail-sub-01')[0]?.state === 'failed');
      const failed = hub.deliveries('fail-sub-01')[0];
      failed.should.match({ state: 'failed', attempts: 1, lastResult: 503 });
      failed.should.have.property('nextAttemptAt');
      const calls = await receiver.waitFor(4);
      await eventually(() => hub.deliveries('fail-sub-01')[0].state === 'permanently-failed');
      await sleep(RETRY_DELAY * 2); // no fifth attempt
      receiver.calls.length.should.equal(4);
      for (let i = 1; i < calls.length; i++) {
        const gap = calls[i].at - calls[i - 1].at;
        gap.should.be.within(RETRY_DELAY - 20, RETRY_DELAY + 600);
      }
      for (const call of calls) JSON.parse(call.body).data.entry.should.eql([entryOf(c)]);
      const [d] = hub.deliveries('fail-sub-01');
      d.should.match({ state: 'permanently-failed', attempts: 4, lastResult: 503, entries: [entryOf(c)] });
      d.should.not.have.property('nextAttemptAt');
      // the entries are not sent again with the next change
      const c2 = change();
      await hub.publish(c2);
      await receiver.waitFor(5);
      JSON.parse(receiver.calls[4].body).data.entry.should.eql([entryOf(c2)]);
    });

    it('retryCount 0: one attempt, then permanently failed', async function () {
      receiver.respond = () => 500;
      await subscribe('zero-retry', { retryCount: ['0'] });
      await hub.publish(change());
      await receiver.waitFor(1);
      await eventually(() => hub.deliveries('zero-retry')[0]?.state === 'permanently-failed');
      await sleep(RETRY_DELAY * 2);
      receiver.calls.length.should.equal(1);
    });

    it('a network error is a failed attempt and is retried', async function () {
      const dead = await startReceiver();
      const deadUrl = dead.url;
      await dead.close();
      await subscribe('dead-sub-01', { callback: [`${deadUrl}/hook`], retryCount: ['1'] });
      await hub.publish(change());
      await eventually(() => hub.deliveries('dead-sub-01')[0]?.state === 'permanently-failed', 5000);
      hub.deliveries('dead-sub-01')[0].should.match({ attempts: 2, lastResult: 'ECONNREFUSED' });
    });

    it('a receiver that does not answer within callbackTimeoutMs fails the attempt', async function () {
      await hub.close();
      await open({ callbackTimeoutMs: 200 });
      receiver.respond = () => 'hang';
      await subscribe('slow-sub-01', { retryCount: ['0'] });
      await hub.publish(change());
      await eventually(() => hub.deliveries('slow-sub-01')[0]?.state === 'permanently-failed', 3000);
      hub.deliveries('slow-sub-01')[0].lastResult.should.equal('ETIMEDOUT');
    });

    it('entries are not lost when the receiver comes back before the retries run out; later entries follow in order', async function () {
      let n = 0;
      receiver.respond = () => (++n <= 2 ? 500 : 200);
      await subscribe('back-sub-01', { method: ['POST'], retryCount: ['3'] });
      const first = change();
      await hub.publish(first);
      await receiver.waitFor(1);
      // arrives while the first delivery is retrying: waits for the next delivery
      const second = change();
      await hub.publish(second);
      const calls = await receiver.waitFor(4);
      calls.slice(0, 3).map(c => JSON.parse(c.body).data.entry).should.eql([[entryOf(first)], [entryOf(first)], [entryOf(first)]]);
      JSON.parse(calls[3].body).data.entry.should.eql([entryOf(second)]);
      await eventually(() => hub.deliveries('back-sub-01').length === 2 && hub.deliveries('back-sub-01').every(d => d.state === 'succeeded'));
      hub.deliveries('back-sub-01').map(d => d.attempts).should.eql([3, 1]);
    });

    it('keeps order per subscription with at most one call in flight', async function () {
      let inFlight = 0;
      let maxInFlight = 0;
      const received = [];
      await receiver.close();
      const http = require('http');
      const server = http.createServer((req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        let body = '';
        req.on('data', d => { body += d; });
        req.on('end', () => setTimeout(() => {
          received.push(...JSON.parse(body).data.entry.map(e => e.assetId));
          inFlight--;
          res.end();
        }, 30));
      });
      await new Promise(r => server.listen(0, '127.0.0.1', r));
      receiver = { close: () => new Promise(r => { server.closeAllConnections(); server.close(r); }) };
      await hub.register('order-sub1', { callback: [`http://127.0.0.1:${server.address().port}/`], method: ['POST'] });
      const changes = [];
      for (let i = 0; i < 30; i++) {
        const c = change();
        changes.push(c);
        await hub.publish(c);
        if (i % 7 === 0) await sleep(15);
      }
      await eventually(() => received.length >= 30, 8000, 'all entries received');
      received.should.eql(changes.map(c => c.fuid));
      maxInFlight.should.equal(1);
      hub.deliveries('order-sub1').length.should.be.below(30); // entries were batched while a call was in flight
    });

    it('a failing subscription does not hold up another one', async function () {
      receiver.respond = call => (call.url.includes('s=bad') ? 500 : 200);
      await subscribe('bad-sub-01', { queryParam: ['s=bad'], retryCount: ['5'] });
      await subscribe('good-sub-1', { queryParam: ['s=good'] });
      await hub.publish(change());
      await receiver.waitFor(2);
      await hub.publish(change());
      await eventually(() => receiver.calls.filter(c => c.url.includes('s=good')).length === 2, RETRY_DELAY - 50, 'second good delivery before the bad retry');
    });

    it('fan-out: 100 subscriptions matching one change all succeed well under 2 s', async function () {
      for (let i = 0; i < 100; i++) await subscribe(`fan-out-${String(i).padStart(3, '0')}`, { method: ['POST'] });
      const started = Date.now();
      await hub.publish(change());
      await receiver.waitFor(100, 2000);
      await eventually(() => hub.deliveries().length === 100 && hub.deliveries().every(d => d.state === 'succeeded'), 2000);
      const elapsed = Date.now() - started;
      elapsed.should.be.below(2000);
      new Set(receiver.calls.map(c => JSON.parse(c.body).id)).size.should.equal(100);
    });

    it('deleting a subscription stops its retries and drops its entries', async function () {
      receiver.respond = () => 500;
      await subscribe('del-sub-01', { retryCount: ['5'] });
      await hub.publish(change());
      await receiver.waitFor(1);
      (await hub.remove('del-sub-01')).should.be.true();
      await hub.publish(change());
      await sleep(RETRY_DELAY * 2.5);
      receiver.calls.length.should.equal(1);
      hub.deliveries('del-sub-01').should.eql([]);
      // a new registration under the id starts afresh
      receiver.respond = () => 200;
      await subscribe('del-sub-01', { method: ['POST'] });
      const c = change();
      await hub.publish(c);
      const calls = await receiver.waitFor(2);
      JSON.parse(calls[1].body).data.entry.should.eql([entryOf(c)]);
    });

    it('re-registering an id keeps its waiting entries and delivers them with the new fields', async function () {
      receiver.respond = () => 500;
      await subscribe('rereg-sub1', { retryCount: ['1'], queryParam: ['v=1'] });
      const c = change();
      await hub.publish(c);
      await receiver.waitFor(1);
      receiver.respond = () => 200;
      await subscribe('rereg-sub1', { method: ['POST'], queryParam: ['v=2'] });
      const calls = await receiver.waitFor(2);
      calls[1].url.should.equal('/hook?v=2');
      JSON.parse(calls[1].body).data.entry.should.eql([entryOf(c)]);
    });

    it('keeps a bounded history of finished deliveries', async function () {
      await hub.close();
      await open({ deliveryHistory: 3 });
      await subscribe('hist-sub-1');
      for (let i = 0; i < 6; i++) {
        await hub.publish(change());
        await receiver.waitFor(i + 1);
        await eventually(() => hub.deliveries('hist-sub-1').every(d => d.state === 'succeeded'));
      }
      const ids = hub.deliveries('hist-sub-1').map(d => d.id);
      ids.length.should.equal(3);
      await hub.close();
      await open({ deliveryHistory: 3 });
      hub.deliveries('hist-sub-1').map(d => d.id).should.eql(ids);
    });
  });

  describe('durability and restart', function () {
    it('resumes undelivered entries after close and reopen', async function () {
      receiver.respond = () => 500;
      await subscribe('restart-s1', { method: ['POST'], retryCount: ['10'] });
      const c1 = change();
      await hub.publish(c1);
      await eventually(() => hub.deliveries('restart-s1')[0]?.state === 'failed');
      await hub.close();
      const c2 = change(); // published to a reopened hub later; c1 must come first
      receiver.respond = () => 200;
      await open();
      await hub.publish(c2);
      const calls = await receiver.waitFor(3);
      JSON.parse(calls[1].body).data.entry.should.eql([entryOf(c1)]);
      JSON.parse(calls[2].body).data.entry.should.eql([entryOf(c2)]);
      await eventually(() => hub.deliveries('restart-s1').every(d => d.state === 'succeeded'));
      hub.deliveries('restart-s1')[0].attempts.should.equal(2);
    });

    it('resumes a failed delivery with the remaining retries and keeps its due time', async function () {
      receiver.respond = () => 500;
      await subscribe('restart-s2', { retryCount: ['2'] });
      await hub.publish(change());
      await receiver.waitFor(2, 3000); // first attempt and one retry used
      await eventually(() => hub.deliveries('restart-s2')[0].attempts === 2);
      const due = Date.parse(hub.deliveries('restart-s2')[0].nextAttemptAt);
      await hub.close();
      await open();
      await receiver.waitFor(3, 3000);
      receiver.calls[2].at.should.be.aboveOrEqual(due - 20);
      await eventually(() => hub.deliveries('restart-s2')[0].state === 'permanently-failed');
      await sleep(RETRY_DELAY * 2);
      receiver.calls.length.should.equal(3); // 1 + retryCount over both runs
    });

    it('a call cut off by close is made again on the next open', async function () {
      receiver.respond = () => 'hang';
      await subscribe('restart-s3', { method: ['POST'] });
      const c = change();
      await hub.publish(c);
      await receiver.waitFor(1);
      await hub.close(); // aborts the call in flight
      hub.deliveries('restart-s3')[0].state.should.equal('pending');
      receiver.respond = () => 200;
      await open();
      const calls = await receiver.waitFor(2);
      JSON.parse(calls[1].body).data.entry.should.eql([entryOf(c)]);
      await eventually(() => hub.deliveries('restart-s3')[0]?.state === 'succeeded');
      hub.deliveries('restart-s3')[0].attempts.should.equal(1);
    });

    it('compacts the journal on a long run and reads the same state back', async function () {
      await subscribe('compact-s1', { method: ['POST'], watchPath: ['* /inbox'] });
      await subscribe('compact-s2', { watchPath: ['* /never'] });
      const changes = [];
      for (let batch = 0; batch < 12; batch++) {
        const group = Array.from({ length: 100 }, () => change('/inbox/f.jpg'));
        changes.push(...group);
        await Promise.all(group.map(c => hub.publish(c)));
      }
      await eventually(() => {
        const got = receiver.calls.flatMap(c => JSON.parse(c.body).data.entry.map(e => e.assetId));
        return got.length === changes.length && hub.deliveries('compact-s1').every(d => d.state === 'succeeded');
      }, 15000, 'all entries delivered');
      const got = receiver.calls.flatMap(c => JSON.parse(c.body).data.entry.map(e => e.assetId));
      got.should.eql(changes.map(c => c.fuid));
      const lines = fs.readFileSync(path.join(dir, 'subscriptions.jsonl'), 'utf8').split('\n').filter(Boolean).length;
      lines.should.be.below(changes.length); // 1200 pub records alone would be more
      const before = { s1: hub.get('compact-s1'), s2: hub.get('compact-s2'), d: hub.deliveries(), rrn: hub.lastPublishedRrn() };
      await hub.close();
      await open();
      hub.get('compact-s1').should.eql(before.s1);
      hub.get('compact-s2').should.eql(before.s2);
      hub.deliveries().should.eql(before.d);
      hub.lastPublishedRrn().should.equal(before.rrn);
      const c = change('/inbox/after.jpg');
      await hub.publish(c);
      await eventually(() => receiver.calls.some(call => JSON.parse(call.body).data.entry.some(e => e.assetId === c.fuid)));
      hub.deliveries().map(d => d.id).at(-1).should.be.above(before.d.at(-1).id);
    });
  });
});
