'use strict';
// Subscriptions through the emulator's real routes (spec 4.1, 2.1, 2.2, section 6): register, read,
// delete over HTTP, then real repository changes (upload, new revision, metadata, delete) reaching
// a local callback receiver.
require('should');
const { startEmulator } = require('../../dist/emulator');
const { startReceiver, sleep, eventually } = require('./delivery-receiver');
const { tmpDir, rmDir, request, uploadFile } = require('./support');

const SUBSCRIBE = '/review/api/events/assets/subscribe/';

describe('emulator subscriptions over HTTP', function () {
  this.timeout(20000);
  let dir;
  let emu;
  let receiver;

  const start = () => startEmulator({
    port: 0, dataDir: dir, retryDelayMs: 200,
    sessions: [{ value: 'local-dev', permissions: ['events', 'add'] }, { value: 'viewer', permissions: [] }]
  }).then(e => { emu = e; });

  beforeEach(async function () {
    dir = tmpDir();
    receiver = await startReceiver();
    await start();
  });
  afterEach(async function () {
    await emu.close();
    await receiver.close();
    rmDir(dir);
  });

  /** One request to the emulator; answers { status, body (parsed JSON) }. */
  const call = (method, p, options = {}) => request(emu.url, method, p, options).then(r => ({ status: r.status, body: r.json }));
  const subscribe = (id, form, query) => call('POST', SUBSCRIBE + id + (query ? `?${new URLSearchParams(query)}` : ''), { form });
  const deliveriesOf = id => call('GET', `/emulator/deliveries?subscription=${id}`).then(r => r.body);
  const setMetadata = (fuid, metadata) => call('PUT', `/emulator/assets/${fuid}/metadata`, { body: JSON.stringify(metadata), headers: { 'Content-Type': 'application/json' } });
  const callbackOf = (suffix = '') => `${receiver.url}/hook${suffix}`;

  async function upload(destination, name, content) {
    const r = await uploadFile(emu.url, destination, name, content);
    r.json.success.should.be.true(r.text);
    return r.json;
  }

  describe('register, read, delete (4.1, 2.2)', function () {
    it('POST answers the 2.2 result; GET returns the stored details with defaults; DELETE removes', async function () {
      const r = await subscribe('http-sub-01', [['callback', callbackOf()]]);
      r.status.should.equal(200);
      r.body.should.eql({ id: 'http-sub-01', success: true });
      const g = await call('GET', SUBSCRIBE + 'http-sub-01');
      g.body.should.eql({
        success: true, id: 'http-sub-01',
        subscription: {
          callback: callbackOf(), header: [], method: 'GET', successCode: 200, retryCount: 3, requestType: 'auto',
          queryParam: [], watchMetadata: [], watchPath: ['/'], logicalOperand: 'OR'
        }
      });
      const d = await call('DELETE', SUBSCRIBE + 'http-sub-01');
      d.status.should.equal(200);
      d.body.should.match({ id: 'http-sub-01', success: true });
      const gone = await call('GET', SUBSCRIBE + 'http-sub-01');
      gone.body.should.match({ success: false, id: 'http-sub-01' });
      gone.body.error.should.be.a.String();
    });

    it('DELETE of an unknown id gives success false with an error', async function () {
      const d = await call('DELETE', SUBSCRIBE + 'never-registered');
      d.status.should.equal(200);
      d.body.should.match({ success: false, id: 'never-registered' });
      d.body.error.should.match(/never-registered/);
    });

    it('enforces the id rule with literal cases: 7 rejected, 8 and 40 accepted, 41 and a_b rejected', async function () {
      const cases = [['abcdefg', false], ['abcdefgh', true], ['a'.repeat(40), true], ['a'.repeat(41), false], ['a_bcdefgh', false]];
      for (const [id, ok] of cases) {
        const r = await subscribe(id, [['callback', callbackOf()]]);
        r.status.should.equal(200);
        r.body.success.should.equal(ok, id);
        r.body.id.should.equal(id);
        if (!ok) r.body.error.should.match(/^id /);
      }
    });

    it('reports a bad field with a clear error naming it', async function () {
      const cases = [
        [[], /^callback is required/],
        [[['callback', 'ftp://x.example/']], /^callback must be an absolute http or https URL/],
        [[['callback', callbackOf()], ['method', 'HEAD']], /^method must be one of/],
        [[['callback', callbackOf()], ['successCode', '99']], /^successCode must be a whole number from 100 to 599/],
        [[['callback', callbackOf()], ['retryCount', '-1']], /^retryCount must be a whole number/],
        [[['callback', callbackOf()], ['logicalOperand', 'NOT']], /^logicalOperand must be AND or OR/],
        [[['callback', callbackOf()], ['watchPath', 'inbox']], /^watchPath "inbox"/],
        [[['callback', callbackOf()], ['watchMetadata', 'City']], /^watchMetadata "City"/],
        [[['callback', callbackOf()], ['header', 'broken']], /^header must be written "Name: value"/]
      ];
      for (const [form, pattern] of cases) {
        const r = await subscribe('bad-fields1', form);
        r.status.should.equal(200);
        r.body.success.should.be.false();
        r.body.error.should.match(pattern);
      }
      (await call('GET', SUBSCRIBE + 'bad-fields1')).body.success.should.be.false();
    });

    it('reads fields from the body and the query string, repeated ones in order', async function () {
      const r = await subscribe('mixed-src1',
        [['watchPath', '* /b'], ['watchPath', '+ /c'], ['header', 'X-B: 2']],
        [['callback', callbackOf()], ['watchPath', '* /a'], ['header', 'X-A: 1'], ['method', 'post']]);
      r.body.success.should.be.true(JSON.stringify(r.body));
      const s = (await call('GET', SUBSCRIBE + 'mixed-src1')).body.subscription;
      s.method.should.equal('POST');
      s.watchPath.should.have.length(3);
      s.watchPath.filter(p => p !== '* /a').should.eql(['* /b', '+ /c']); // body values keep their order
      s.watchPath.should.containEql('* /a');
      s.header.slice().sort().should.eql(['X-A: 1', 'X-B: 2']);
    });

    it('the same id replaces the previous registration', async function () {
      await subscribe('replace-01', [['callback', callbackOf('/1')], ['method', 'POST'], ['watchPath', '* /x']]);
      await subscribe('replace-01', [['callback', callbackOf('/2')]]);
      const s = (await call('GET', SUBSCRIBE + 'replace-01')).body.subscription;
      s.callback.should.equal(callbackOf('/2'));
      s.method.should.equal('GET');
      s.watchPath.should.eql(['/']);
    });

    it('needs a valid cookie (401) and the events permission', async function () {
      (await call('POST', SUBSCRIBE + 'auth-sub-01', { form: [['callback', callbackOf()]], cookie: null })).status.should.equal(401);
      (await call('GET', SUBSCRIBE + 'auth-sub-01', { cookie: 'JSESSIONID=nope' })).status.should.equal(401);
      const r = await call('POST', SUBSCRIBE + 'auth-sub-01', { form: [['callback', callbackOf()]], cookie: 'JSESSIONID=viewer' });
      r.status.should.equal(200);
      r.body.success.should.be.false();
      r.body.error.should.match(/permission denied for events/);
      (await call('GET', SUBSCRIBE + 'auth-sub-01')).body.success.should.be.false();
    });
  });

  describe('changes reach the callback (section 6)', function () {
    it('upload to /inbox, a new revision, a metadata change and a delete each reach a POST callback', async function () {
      await subscribe('inbox-post1', [['callback', callbackOf()], ['method', 'POST'], ['watchPath', '* /inbox']]);
      const up = await upload('/inbox', 'photo.jpg', 'first');
      const fuid = up.data.fuids[0];
      let [c] = await receiver.waitFor(1);
      c.method.should.equal('POST');
      c.headers['content-type'].should.equal('application/json');
      let body = JSON.parse(c.body);
      body.should.match({ success: true, id: 'inbox-post1' });
      body.data.entry.should.have.length(1);
      body.data.entry[0].should.match({ assetId: fuid, rrn: up.data.rrn, path: '/inbox/photo.jpg', action: 'added' });
      body.data.entry[0].owner.should.be.a.String();

      const again = await upload('/inbox', 'photo.jpg', 'second');
      again.data.fuids.should.eql([fuid]);
      c = (await receiver.waitFor(2))[1];
      JSON.parse(c.body).data.entry[0].should.match({ assetId: fuid, rrn: again.data.rrn, action: 'modified' });

      const meta = await setMetadata(fuid, { City: 'SFO' });
      meta.body.success.should.be.true(JSON.stringify(meta.body));
      c = (await receiver.waitFor(3))[2];
      JSON.parse(c.body).data.entry[0].should.match({ assetId: fuid, action: 'modified', path: '/inbox/photo.jpg' });

      const del = await call('DELETE', `/emulator/assets/${fuid}`);
      del.body.success.should.be.true(JSON.stringify(del.body));
      c = (await receiver.waitFor(4))[3];
      JSON.parse(c.body).data.entry[0].should.match({ assetId: fuid, action: 'deleted', path: '/inbox/photo.jpg' });

      const list = await deliveriesOf('inbox-post1');
      list.success.should.be.true();
      list.deliveries.map(d => d.state).should.eql(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      list.deliveries.map(d => d.entries[0].action).should.eql(['added', 'modified', 'modified', 'deleted']);
    });

    it('a GET callback is called with its query params and headers and no body; watchPath and watchMetadata filter', async function () {
      await subscribe('inbox-get-1', [['callback', callbackOf('?from=dam')], ['watchPath', '* /inbox'], ['queryParam', 'sub=inbox-get-1'], ['header', 'X-Hook-Key: k-123']]);
      await subscribe('city-sfo-1', [['callback', callbackOf()], ['method', 'POST'], ['watchMetadata', 'City==SFO'], ['watchPath', '* /inbox'], ['queryParam', 'sub=city']]);
      await upload('/outbox', 'elsewhere.jpg', 'x'); // matches neither
      const up = await upload('/inbox', 'a.jpg', 'x'); // inbox-get-1 only (no metadata set)
      const [c] = await receiver.waitFor(1);
      c.method.should.equal('GET');
      c.url.should.equal('/hook?from=dam&sub=inbox-get-1');
      c.headers['x-hook-key'].should.equal('k-123');
      c.body.should.equal('');
      await setMetadata(up.data.fuids[0], { City: 'NYC' }); // inbox-get-1 only
      await setMetadata(up.data.fuids[0], { City: 'SFO' }); // both
      await receiver.waitFor(4);
      await sleep(200);
      const urls = receiver.calls.map(x => x.url);
      urls.filter(u => u.includes('sub=city')).should.have.length(1);
      urls.filter(u => u.includes('sub=inbox-get-1')).should.have.length(3);
      const cityCall = receiver.calls.find(x => x.url.includes('sub=city'));
      JSON.parse(cityCall.body).data.entry[0].should.match({ assetId: up.data.fuids[0], action: 'modified' });
    });

    it('a failing receiver gets 1 + retryCount calls, then the delivery is permanently failed', async function () {
      receiver.respond = () => 500;
      await subscribe('fail-http-1', [['callback', callbackOf()], ['retryCount', '2'], ['watchPath', '* /inbox']]);
      await upload('/inbox', 'b.jpg', 'x');
      const calls = await receiver.waitFor(3, 5000);
      for (let i = 1; i < calls.length; i++) (calls[i].at - calls[i - 1].at).should.be.within(180, 800);
      let list;
      for (let i = 0; i < 50; i++) {
        list = (await deliveriesOf('fail-http-1')).deliveries;
        if (list[0]?.state === 'permanently-failed') break;
        await sleep(50);
      }
      list[0].should.match({ state: 'permanently-failed', attempts: 3, lastResult: 500 });
      await sleep(500);
      receiver.calls.length.should.equal(3);
    });

    it('a subscription and its undelivered entries survive a restart', async function () {
      receiver.respond = () => 503;
      await subscribe('survive-01', [['callback', callbackOf()], ['method', 'POST'], ['retryCount', '50']]);
      const up = await upload('/inbox', 'c.jpg', 'x');
      await receiver.waitFor(1);
      await emu.close();
      receiver.respond = () => 200;
      await start();
      (await call('GET', SUBSCRIBE + 'survive-01')).body.subscription.method.should.equal('POST');
      await eventually(() => receiver.calls.some(x => x.status === 200), 5000, 'a successful call after the restart');
      const ok = receiver.calls.find(x => x.status === 200);
      JSON.parse(ok.body).data.entry.map(e => e.assetId).should.eql(up.data.fuids);
    });
  });
});
