'use strict';
// The emulator's subscription hub, rule by rule (spec 2.1, 4.1 rules 1-12, section 8), with literal
// cases from the spec. Delivery over real HTTP is in delivery.test.js.
require('should');
const fs = require('fs');
const path = require('path');
const { openSubscriptionHub, MAX_RETRY_COUNT } = require('../../dist/emulator/subscriptions');
const { tmpDir, rmDir } = require('./support');

const CALLBACK = 'http://127.0.0.1:9/cb';

describe('emulator subscription hub: registration rules', function () {
  let dir;
  let hub;
  const logs = [];

  beforeEach(async function () {
    dir = tmpDir();
    logs.length = 0;
    hub = await openSubscriptionHub({ dataDir: dir, retryDelayMs: 200, log: line => logs.push(line) });
  });
  afterEach(async function () {
    await hub.close();
    rmDir(dir);
  });

  const register = (id, fields) => hub.register(id, { callback: [CALLBACK], ...fields });

  async function rejected(id, fields, pattern) {
    const r = await register(id, fields);
    r.ok.should.be.false();
    r.error.should.match(pattern);
    return r;
  }

  describe('id (2.1, section 8): 8 to 40 characters of a-z, A-Z, 0-9 and hyphen', function () {
    it('rejects 7 characters', () => rejected('abcdefg', {}, /^id must be 8 to 40 characters long \(got 7\)/));
    it('accepts 8 characters', async () => (await register('abcdefgh', {})).should.eql({ ok: true }));
    it('accepts 40 characters', async () => (await register('a'.repeat(40), {})).should.eql({ ok: true }));
    it('rejects 41 characters', () => rejected('a'.repeat(41), {}, /^id must be 8 to 40 characters long \(got 41\)/));
    it('rejects a_b... (underscore)', () => rejected('a_bcdefgh', {}, /^id may contain only the characters a-z, A-Z, 0-9 and hyphen/));
    it('rejects other characters: dot, space, slash, percent, non-ASCII', async function () {
      for (const id of ['abc.defgh', 'abc defgh', 'abc/defgh', 'abc%20def', 'abcdéfghi']) await rejected(id, {}, /^id may contain only/);
    });
    it('accepts a GUID (the suggested form) and mixed case with hyphens', async function () {
      (await register('3f2504e0-4f89-11d3-9a0c-0305e82c3301', {})).ok.should.be.true();
      (await register('My-Sub-ID-2', {})).ok.should.be.true();
    });
    it('rejects the empty id', () => rejected('', {}, /^id must be 8 to 40/));
  });

  describe('callback (rule 1): required, an absolute http or https URL', function () {
    it('is required', async function () {
      const r = await hub.register('abcdefgh', {});
      r.should.eql({ ok: false, error: 'callback is required' });
      (await hub.register('abcdefgh', { callback: [''] })).error.should.equal('callback is required');
    });
    it('accepts http and https', async function () {
      (await hub.register('abcdefgh', { callback: ['http://example.com/hook'] })).ok.should.be.true();
      (await hub.register('abcdefgh', { callback: ['https://example.com:8443/hook?x=1'] })).ok.should.be.true();
    });
    it('rejects relative, other schemes and garbage, naming the field', async function () {
      for (const cb of ['/hook', 'example.com/hook', 'ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'http://', 'not a url', 'http://exa mple.com/']) {
        const r = await hub.register('abcdefgh', { callback: [cb] });
        r.ok.should.be.false(cb);
        r.error.should.startWith('callback must be an absolute http or https URL');
      }
    });
  });

  describe('defaults (2.1, rules 3-6, 11, section 8)', function () {
    it('stores GET, 200, 3, auto, OR, watchPath / and empty lists', async function () {
      await register('abcdefgh', {});
      hub.get('abcdefgh').should.eql({
        callback: CALLBACK, header: [], method: 'GET', successCode: 200, retryCount: 3, requestType: 'auto',
        queryParam: [], watchMetadata: [], watchPath: ['/'], logicalOperand: 'OR'
      });
    });
    it('treats empty values as not given', async function () {
      await register('abcdefgh', { method: [''], successCode: [''], retryCount: [''], requestType: [''], logicalOperand: [''], watchPath: [''], header: [''] });
      const s = hub.get('abcdefgh');
      s.method.should.equal('GET');
      s.successCode.should.equal(200);
      s.retryCount.should.equal(3);
      s.watchPath.should.eql(['/']);
      s.header.should.eql([]);
    });
    it('ignores unknown fields', async function () {
      (await register('abcdefgh', { colour: ['blue'], id: ['other'] })).ok.should.be.true();
      hub.get('abcdefgh').should.not.have.property('colour');
    });
  });

  describe('method (rule 3)', function () {
    it('accepts GET POST PUT PATCH DELETE in any case and stores upper case', async function () {
      for (const m of ['get', 'Post', 'PUT', 'patch', 'delete']) {
        await register('abcdefgh', { method: [m] });
        hub.get('abcdefgh').method.should.equal(m.toUpperCase());
      }
    });
    it('rejects other methods, naming the field and the allowed values', async function () {
      for (const m of ['HEAD', 'OPTIONS', 'FETCH', 'G E T']) {
        await rejected('abcdefgh', { method: [m] }, /^method must be one of GET, POST, PUT, PATCH, DELETE/);
      }
    });
  });

  describe('successCode (rule 4)', function () {
    it('accepts integers 100 to 599', async function () {
      for (const c of ['100', '201', '204', '599']) {
        await register('abcdefgh', { successCode: [c] });
        hub.get('abcdefgh').successCode.should.equal(Number(c));
      }
    });
    it('rejects non-integers and out-of-range values', async function () {
      for (const c of ['99', '600', 'abc', '200.5', '-200', '2e2', '0x10']) {
        await rejected('abcdefgh', { successCode: [c] }, /^successCode must be a whole number from 100 to 599/);
      }
    });
  });

  describe('retryCount (rule 5, section 8)', function () {
    it(`accepts 0 to ${MAX_RETRY_COUNT}`, async function () {
      for (const c of ['0', '1', '3', String(MAX_RETRY_COUNT)]) {
        await register('abcdefgh', { retryCount: [c] });
        hub.get('abcdefgh').retryCount.should.equal(Number(c));
      }
    });
    it('rejects negatives, fractions, text and values above the cap', async function () {
      for (const c of ['-1', '1.5', 'three', String(MAX_RETRY_COUNT + 1)]) {
        await rejected('abcdefgh', { retryCount: [c] }, /^retryCount must be a whole number from 0 to/);
      }
    });
  });

  describe('requestType (rule 6)', function () {
    it('defaults to auto and keeps another single word as given', async function () {
      await register('abcdefgh', { requestType: ['json'] });
      hub.get('abcdefgh').requestType.should.equal('json');
    });
    it('rejects a value with spaces or line breaks', async function () {
      await rejected('abcdefgh', { requestType: ['a b'] }, /^requestType must be a single word/);
    });
  });

  describe('header (rule 2)', function () {
    it('may repeat; each Name: value is kept in order', async function () {
      await register('abcdefgh', { header: ['Content-Type: application/json', 'X-Secret:  s3cr3t ', 'X-Empty:'] });
      hub.get('abcdefgh').header.should.eql(['Content-Type: application/json', 'X-Secret: s3cr3t', 'X-Empty: ']);
    });
    it('rejects a value without a colon, a bad name, or a line break', async function () {
      await rejected('abcdefgh', { header: ['NoColon'] }, /^header must be written "Name: value"/);
      await rejected('abcdefgh', { header: ['Bad Name: x'] }, /^header must be written "Name: value"/);
      await rejected('abcdefgh', { header: [': x'] }, /^header must be written "Name: value"/);
      await rejected('abcdefgh', { header: ['X-A: a\r\nX-Injected: b'] }, /^header X-A must not contain line breaks/);
      await rejected('abcdefgh', { header: ['X-Price: 5 \u20ac'] }, /^header X-Price must hold only printable ASCII or Latin-1 characters/);
      (await register('abcdefgh', { header: ['X-Name: caf\u00e9'] })).ok.should.be.true();
    });
    it('rejects headers the server writes itself', async function () {
      await rejected('abcdefgh', { header: ['Content-Length: 5'] }, /^header Content-Length is set by the server itself/);
      await rejected('abcdefgh', { header: ['transfer-encoding: chunked'] }, /^header transfer-encoding is set by the server itself/);
    });
  });

  describe('queryParam (rule 7)', function () {
    it('may repeat; name=value and bare names are kept in order', async function () {
      await register('abcdefgh', { queryParam: ['a=1', 'flag', 'b=x y'] });
      hub.get('abcdefgh').queryParam.should.eql(['a=1', 'flag', 'b=x y']);
    });
    it('rejects a value with an empty name', () => rejected('abcdefgh', { queryParam: ['=1'] }, /^queryParam "=1" must be written name=value or name/));
  });

  describe('watchMetadata (rule 8)', function () {
    it('accepts MetadataKey=Value, MetadataKey==*, *==*, MetadataKey=* and City==SFO, several of them', async function () {
      const conds = ['MetadataKey=Value', 'MetadataKey==*', '*==*', 'MetadataKey=*', 'City==SFO'];
      await register('abcdefgh', { watchMetadata: conds });
      hub.get('abcdefgh').watchMetadata.should.eql(conds);
    });
    it('rejects a condition without "=" or without a key', async function () {
      await rejected('abcdefgh', { watchMetadata: ['City'] }, /^watchMetadata "City" must be written Key=Value/);
      await rejected('abcdefgh', { watchMetadata: ['=SFO'] }, /^watchMetadata "=SFO" must be written/);
    });
  });

  describe('watchPath (rules 9, 10)', function () {
    it('accepts the prefixed forms and bare paths, several of them', async function () {
      const paths = ['* /inbox', '+ /inbox/new', '- /inbox/tmp', '/inbox/a.jpg', '/'];
      await register('abcdefgh', { watchPath: paths });
      hub.get('abcdefgh').watchPath.should.eql(paths);
    });
    it('rejects a relative path or an unknown prefix, naming the field', async function () {
      await rejected('abcdefgh', { watchPath: ['inbox'] }, /^watchPath "inbox" must be a path starting with "\/"/);
      await rejected('abcdefgh', { watchPath: ['# /inbox'] }, /^watchPath "# \/inbox" must be a path/);
      await rejected('abcdefgh', { watchPath: ['/a/../b'] }, /^watchPath "\/a\/..\/b" must not contain/);
    });
  });

  describe('logicalOperand (rule 11)', function () {
    it('accepts AND and OR in any case', async function () {
      for (const v of ['and', 'AND', 'or', 'Or']) {
        await register('abcdefgh', { logicalOperand: [v] });
        hub.get('abcdefgh').logicalOperand.should.equal(v.toUpperCase());
      }
    });
    it('rejects other values', () => rejected('abcdefgh', { logicalOperand: ['XOR'] }, /^logicalOperand must be AND or OR \(got "XOR"\)/));
  });

  describe('single-valued fields given twice', function () {
    it('tolerates the same value twice (e.g. once in the query, once in the body)', async function () {
      (await register('abcdefgh', { method: ['POST', 'POST'] })).ok.should.be.true();
      hub.get('abcdefgh').method.should.equal('POST');
    });
    it('rejects two different values', async function () {
      await rejected('abcdefgh', { method: ['GET', 'POST'] }, /^method may be given only once \(got 2 different values\)/);
      const r = await hub.register('abcdefgh', { callback: ['http://a.example/', 'http://b.example/'] });
      r.error.should.match(/^callback may be given only once/);
    });
  });

  describe('register, replace, get, remove (section 3, 6.2)', function () {
    it('replaces a registration under the same id with the last one', async function () {
      await register('abcdefgh', { method: ['POST'], watchPath: ['* /a'] });
      await hub.register('abcdefgh', { callback: ['https://example.com/new'] });
      const s = hub.get('abcdefgh');
      s.callback.should.equal('https://example.com/new');
      s.method.should.equal('GET');
      s.watchPath.should.eql(['/']);
    });
    it('a rejected registration leaves the previous one in place', async function () {
      await register('abcdefgh', { method: ['POST'] });
      (await register('abcdefgh', { method: ['BREW'] })).ok.should.be.false();
      hub.get('abcdefgh').method.should.equal('POST');
    });
    it('get of an unknown id is undefined; remove of an unknown id is false', async function () {
      (hub.get('unknown-id') === undefined).should.be.true();
      (await hub.remove('unknown-id')).should.be.false();
    });
    it('remove deletes the registration', async function () {
      await register('abcdefgh', {});
      (await hub.remove('abcdefgh')).should.be.true();
      (hub.get('abcdefgh') === undefined).should.be.true();
      (await hub.remove('abcdefgh')).should.be.false();
    });
    it('get returns a copy the caller cannot use to change the stored subscription', async function () {
      await register('abcdefgh', {});
      hub.get('abcdefgh').watchPath.push('/x');
      hub.get('abcdefgh').watchPath.should.eql(['/']);
    });
    it('never logs header values', async function () {
      await register('abcdefgh', { header: ['X-Secret: hunter2-secret'] });
      logs.join('\n').should.not.match(/hunter2/);
    });
  });

  describe('durability', function () {
    it('keeps registrations and removals across a close and reopen', async function () {
      await register('keep-me-1', { method: ['POST'], header: ['X-A: 1'], watchPath: ['* /inbox'] });
      await register('drop-me-1', {});
      await hub.remove('drop-me-1');
      await register('keep-me-1', { method: ['PUT'], header: ['X-A: 2'], watchPath: ['* /inbox'] });
      const before = hub.get('keep-me-1');
      await hub.close();
      hub = await openSubscriptionHub({ dataDir: dir, retryDelayMs: 200, log: () => {} });
      hub.get('keep-me-1').should.eql(before);
      (hub.get('drop-me-1') === undefined).should.be.true();
    });

    it('is on disk before register resolves (journal read back directly)', async function () {
      await register('on-disk-1', {});
      const text = fs.readFileSync(path.join(dir, 'subscriptions.jsonl'), 'utf8');
      text.should.match(/"id":"on-disk-1"/);
    });

    it('reports the last published rrn and skips re-published changes after a restart', async function () {
      hub.lastPublishedRrn().should.equal(0);
      await register('abcdefgh', { watchPath: ['* /inbox'] });
      const change = (rrn, fuid) => ({ rrn, fuid, path: `/inbox/${fuid}.jpg`, owner: 'u', action: 'added', metadata: {}, changedMetadataKeys: [] });
      // a zip upload: two files at one rrn; the callback cannot be reached (port 9), so entries stay in the delivery
      await hub.register('abcdefgh', { callback: ['http://127.0.0.1:9/cb'], retryCount: ['0'], watchPath: ['* /inbox'] });
      await hub.publish(change(7, 1));
      await hub.publish(change(7, 2));
      hub.lastPublishedRrn().should.equal(7);
      await hub.close();
      hub = await openSubscriptionHub({ dataDir: dir, retryDelayMs: 200, log: () => {} });
      hub.lastPublishedRrn().should.equal(7);
      // the repository re-publishes from its last rrn: those already durable are not queued twice
      await hub.publish(change(7, 1));
      await hub.publish(change(7, 2));
      await hub.publish(change(8, 3));
      hub.lastPublishedRrn().should.equal(8);
      const queued = JSON.parse(JSON.stringify(hub.deliveries('abcdefgh'))).flatMap(d => d.entries.map(e => e.assetId));
      const onDisk = fs.readFileSync(path.join(dir, 'subscriptions.jsonl'), 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l))
        .filter(r => r.t === 'pub').map(r => r.entry.assetId);
      onDisk.should.eql([1, 2, 3]);
      queued.every(id => [1, 2, 3].includes(id)).should.be.true();
    });
  });
});
