'use strict';
// The router: subscribe routes (4.1, 2.2) field reading and answers, /emulator/ endpoints, the change
// feed being published before an answer, and JSON answers for odd input.
require('should');
const http = require('http');
const { startTestEmulator, request, uploadFile, startReceiver, waitFor } = require('./support');

const SUB = '/review/api/events/assets/subscribe/';

describe('emulator routes', function () {
  let emu;
  let receiver;
  before(async () => {
    emu = await startTestEmulator({ retryDelayMs: 200 });
    receiver = await startReceiver();
  });
  after(async () => { await emu.stop(); await receiver.close(); });

  describe('subscribe (4.1, 2.2)', () => {
    it('POST answers {id, success:true}; GET answers {success, id, subscription}; DELETE answers {id, success}', async () => {
      const id = 'route-test-1';
      const post = await request(emu.url, 'POST', SUB + id, { form: { callback: `${receiver.url}/cb`, watchPath: '* /inbox' } });
      post.status.should.equal(200);
      post.json.should.eql({ id, success: true });
      const get = await request(emu.url, 'GET', SUB + id);
      get.json.success.should.equal(true);
      get.json.id.should.equal(id);
      get.json.subscription.callback.should.equal(`${receiver.url}/cb`);
      get.json.subscription.watchPath.should.eql(['* /inbox']);
      (await request(emu.url, 'DELETE', SUB + id)).json.should.eql({ id, success: true });
      const gone = await request(emu.url, 'GET', SUB + id);
      gone.json.should.eql({ success: false, id, error: `no subscription with id ${id}` });
      const again = await request(emu.url, 'DELETE', SUB + id);
      again.json.success.should.equal(false);
      again.json.id.should.equal(id);
      again.json.error.should.match(/no subscription/);
    });

    it('reads fields from the query string and the body; repeated fields keep their order, query first', async () => {
      const id = 'route-test-2';
      const body = 'watchPath=' + encodeURIComponent('* /b1') + '&header=' + encodeURIComponent('X-B: 1') + '&watchPath=' + encodeURIComponent('* /b2');
      const q = `?callback=${encodeURIComponent(receiver.url + '/q')}&watchPath=${encodeURIComponent('* /q1')}&header=${encodeURIComponent('X-Q: 1')}`;
      const r = await request(emu.url, 'POST', SUB + id + q, { form: body });
      r.json.should.eql({ id, success: true });
      const s = (await request(emu.url, 'GET', SUB + id)).json.subscription;
      s.watchPath.should.eql(['* /q1', '* /b1', '* /b2']);
      s.header.should.eql(['X-Q: 1', 'X-B: 1']);
      s.callback.should.equal(receiver.url + '/q');
      await request(emu.url, 'DELETE', SUB + id);
    });

    it('fields may also come as multipart form data', async () => {
      const id = 'route-test-3';
      const boundary = 'xyz123';
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="callback"\r\n\r\n${receiver.url}/m\r\n--${boundary}--\r\n`;
      const r = await request(emu.url, 'POST', SUB + id, { body, headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
      r.json.should.eql({ id, success: true });
      await request(emu.url, 'DELETE', SUB + id);
    });

    it('the hub\'s validation errors come back as {id, success:false, error}', async () => {
      for (const id of ['short7c', 'a_b-cdefgh', 'x'.repeat(41)]) {
        const r = await request(emu.url, 'POST', SUB + id, { form: { callback: receiver.url } });
        r.status.should.equal(200);
        r.json.id.should.equal(id);
        r.json.success.should.equal(false);
        r.json.error.should.be.a.String();
      }
      const noCallback = await request(emu.url, 'POST', SUB + 'abcdefgh', { form: {} });
      noCallback.json.success.should.equal(false);
      noCallback.json.error.should.match(/callback/);
    });

    it('odd paths answer JSON and never crash: empty id, encoded slash, bad escapes, extra segments', async () => {
      const paths = [
        '/review/api/events/assets/subscribe', SUB, SUB + 'abc%2Fdefgh', SUB + 'abcd/efghij', SUB + '%E0%A4%A',
        SUB + '%00%00%00%00%00%00%00%00', SUB + encodeURIComponent('ünïcødé-id'), SUB + 'a'.repeat(5000), SUB + '..%2F..%2Fetc'
      ];
      for (const p of paths) {
        for (const method of ['POST', 'GET', 'DELETE']) {
          const r = await request(emu.url, method, p, { form: method === 'POST' ? { callback: receiver.url } : undefined });
          r.status.should.equal(200, `${method} ${p}`);
          r.json.success.should.equal(false, `${method} ${p}`);
          r.json.should.have.property('id');
          r.json.error.should.be.a.String();
        }
      }
      (await request(emu.url, 'GET', '/emulator/deliveries')).status.should.equal(200);
    });

    it('a body over 1 MB -> 413 JSON; another content type -> 415 JSON', async () => {
      const big = await request(emu.url, 'POST', SUB + 'abcdefgh', { form: 'callback=' + 'a'.repeat(1024 * 1024 + 10) });
      big.status.should.equal(413);
      big.json.success.should.equal(false);
      const json = await request(emu.url, 'POST', SUB + 'abcdefgh', { body: '{"callback":"x"}', headers: { 'Content-Type': 'application/json' } });
      json.status.should.equal(415);
      json.json.error.should.match(/x-www-form-urlencoded/);
    });
  });

  describe('/emulator/ endpoints and the change feed', () => {
    const id = 'feed-watch-1';
    let fuid;
    before(async () => {
      (await request(emu.url, 'POST', SUB + id, { form: { callback: `${receiver.url}/feed`, method: 'POST', watchPath: '* /watched' } })).json.success.should.equal(true);
    });
    after(() => request(emu.url, 'DELETE', SUB + id));

    const entriesSeen = () => receiver.calls.filter(c => c.url === '/feed').flatMap(c => JSON.parse(c.body).data.entry);

    it('an upload is published before its answer: the delivery exists when the answer arrives', async () => {
      const r = await uploadFile(emu.url, '/watched', 'w.txt', 'w');
      fuid = r.json.data.fuids[0];
      const deliveries = (await request(emu.url, 'GET', `/emulator/deliveries?subscription=${id}`)).json.deliveries;
      deliveries.flatMap(d => d.entries).should.containDeep([{ assetId: fuid, rrn: r.json.data.rrn, path: '/watched/w.txt', owner: 'emulator-user', action: 'added' }]);
      await waitFor(() => entriesSeen().some(e => e.assetId === fuid && e.action === 'added'));
    });

    it('PUT metadata: new rrn, action modified, the stored values', async () => {
      const r = await request(emu.url, 'PUT', `/emulator/assets/${fuid}/metadata`, { body: JSON.stringify({ City: 'SFO', Status: 'approved' }), headers: { 'Content-Type': 'application/json' } });
      r.json.success.should.equal(true);
      r.json.metadata.should.eql({ City: 'SFO', Status: 'approved' });
      await waitFor(() => entriesSeen().some(e => e.assetId === fuid && e.action === 'modified' && e.rrn === r.json.rrn));
      const a = (await request(emu.url, 'GET', `/emulator/assets/${fuid}`)).json.asset;
      a.revisions[a.revisions.length - 1].should.have.properties({ rrn: r.json.rrn, action: 'modified', changedMetadataKeys: ['City', 'Status'] });
      // null removes a key
      const rm = await request(emu.url, 'PUT', `/emulator/assets/${fuid}/metadata`, { body: JSON.stringify({ Status: null }) });
      rm.json.metadata.should.eql({ City: 'SFO' });
    });

    it('PUT metadata with bad JSON or bad values -> 400 JSON; unknown fuid -> success false', async () => {
      for (const body of ['{not json', '[1,2]', '"x"', '{}', '{"n": 5}', '{"": "x"}', '{"a=b": "x"}']) {
        const r = await request(emu.url, 'PUT', `/emulator/assets/${fuid}/metadata`, { body });
        r.status.should.equal(400, body);
        r.json.success.should.equal(false);
      }
      const unknown = await request(emu.url, 'PUT', '/emulator/assets/999999/metadata', { body: '{"a":"b"}' });
      unknown.status.should.equal(200);
      unknown.json.error.should.match(/no asset/);
      const notInt = await request(emu.url, 'PUT', '/emulator/assets/abc/metadata', { body: '{"a":"b"}' });
      notInt.json.error.should.match(/fuid/);
    });

    it('GET /emulator/assets/:fuid gives the record with revisions and metadata; ?path= looks one up', async () => {
      const a = (await request(emu.url, 'GET', `/emulator/assets/${fuid}`)).json.asset;
      a.should.have.properties({ fuid, kind: 'file', name: 'w.txt', path: '/watched/w.txt', deleted: false });
      a.metadata.should.eql({ City: 'SFO' });
      a.revisions.length.should.equal(3);
      (await request(emu.url, 'GET', '/emulator/assets?path=/watched/w.txt')).json.asset.fuid.should.equal(fuid);
      (await request(emu.url, 'GET', '/emulator/assets/999999')).json.success.should.equal(false);
    });

    it('DELETE /emulator/assets/:fuid: action deleted; deleting again -> success false', async () => {
      const r = await request(emu.url, 'DELETE', `/emulator/assets/${fuid}`);
      r.json.success.should.equal(true);
      await waitFor(() => entriesSeen().some(e => e.assetId === fuid && e.action === 'deleted' && e.rrn === r.json.rrn));
      (await request(emu.url, 'DELETE', `/emulator/assets/${fuid}`)).json.success.should.equal(false);
      (await request(emu.url, 'GET', `/emulator/assets/${fuid}`)).json.asset.deleted.should.equal(true);
      // the name is free again: a new upload is a new asset
      const again = await uploadFile(emu.url, '/watched', 'w.txt', 'new');
      again.json.data.fuids[0].should.not.equal(fuid);
    });

    it('deleting a folder deletes what is in it; the root cannot be deleted', async () => {
      const a = (await uploadFile(emu.url, '/watched/sub', 'a.txt', 'a')).json.data.fuids[0];
      const sub = (await request(emu.url, 'GET', '/emulator/assets?path=/watched/sub')).json.asset.fuid;
      const r = await request(emu.url, 'DELETE', `/emulator/assets/${sub}`);
      r.json.success.should.equal(true);
      (await request(emu.url, 'GET', `/emulator/assets/${a}`)).json.asset.deleted.should.equal(true);
      await waitFor(() => entriesSeen().some(e => e.assetId === a && e.action === 'deleted'));
      const root = (await request(emu.url, 'GET', '/emulator/assets?path=/')).json.asset.fuid;
      (await request(emu.url, 'DELETE', `/emulator/assets/${root}`)).json.error.should.match(/root/);
    });

    it('GET /emulator/deliveries lists each delivery with state, attempts and entries', async () => {
      const d = (await request(emu.url, 'GET', `/emulator/deliveries?subscription=${id}`)).json.deliveries;
      d.length.should.be.above(0);
      for (const x of d) {
        x.subscription.should.equal(id);
        ['pending', 'succeeded', 'failed', 'permanently-failed'].should.containEql(x.state);
        x.attempts.should.be.a.Number();
        x.entries.should.be.an.Array();
      }
      (await request(emu.url, 'GET', '/emulator/deliveries?subscription=unknown-sub')).json.deliveries.should.eql([]);
    });
  });

  describe('robustness', () => {
    it('field names that are Object.prototype keys (valueOf, __proto__, constructor) are plain fields, never a 500', async () => {
      for (const name of ['valueOf', '__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
        const sub = await request(emu.url, 'POST', `${SUB}proto-keys-1?${name}=1`, { form: { [name]: 'x', callback: `${receiver.url}/cb` } });
        sub.status.should.equal(200);
        sub.json.should.eql({ id: 'proto-keys-1', success: true });
        const dl = await request(emu.url, 'GET', `/review/api/asset/download?${name}=1`);
        dl.status.should.equal(200);
        dl.json.success.should.equal(false);
      }
    });

    it('a malformed request line or header gets a 400 and the server keeps answering', async () => {
      const url = new URL(emu.url);
      const net = require('net');
      const reply = await new Promise(resolve => {
        const s = net.connect(Number(url.port), url.hostname, () => s.write('GARBAGE \x00\x01 HTTP/1.1\r\n\r\n'));
        let out = '';
        s.on('data', d => { out += d; });
        s.on('end', () => resolve(out));
        s.on('error', () => resolve(out));
      });
      reply.should.match(/^HTTP\/1.1 400/);
      (await request(emu.url, 'GET', '/emulator/deliveries')).status.should.equal(200);
    });

    it('an absolute-form request target and doubled slashes are routed', async () => {
      (await request(emu.url, 'GET', `${emu.url}/emulator/deliveries`)).status.should.equal(200);
      (await request(emu.url, 'GET', '//emulator//deliveries')).status.should.equal(200);
    });

    it('the request log has no query strings (a subscribe query may carry a secret header)', async () => {
      await request(emu.url, 'POST', SUB + 'secret-test-1?header=' + encodeURIComponent('X-Secret: hunter2-secret') + '&callback=' + encodeURIComponent(receiver.url));
      await request(emu.url, 'DELETE', SUB + 'secret-test-1');
      emu.lines.some(l => l.includes('secret-test-1')).should.be.true();
      emu.lines.join('\n').should.not.containEql('hunter2');
    });

    it('a client that goes away while a download streams does not disturb the server', async () => {
      const big = (await uploadFile(emu.url, '/big', 'big.bin', Buffer.alloc(8 * 1024 * 1024, 3))).json.data.fuids[0];
      const url = new URL(emu.url);
      await new Promise(resolve => {
        const req = http.get({ host: url.hostname, port: url.port, path: `/review/api/asset/download?fuid=${big}`, headers: { Cookie: 'JSESSIONID=local-dev' } }, res => {
          res.once('data', () => { req.destroy(); resolve(); });
        });
        req.on('error', resolve);
      });
      const r = await request(emu.url, 'GET', `/review/api/asset/download?fuid=${big}`);
      r.body.length.should.equal(8 * 1024 * 1024);
    });
  });
});
