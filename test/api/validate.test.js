'use strict';
// Client-side validation (spec 2.1, 4.1, 8), with literal cases from the spec, and
// proof that an invalid call never reaches the server.
require('should');
const {
  validateSubscriptionId, validateSubscriptionFields, validateUploadFields, validateFuid, validateRrn
} = require('../../dist/api/validate');
const { AssetClient } = require('../../dist/api/client');
const {
  COOKIES, startTestEmulator, startCountingProxy, expectError, seenErrors, assertNoCookieIn
} = require('./helpers');

function invalid(fn, field) {
  let error;
  try { fn(); } catch (err) { error = err; }
  if (!error) throw new Error(`expected invalid-input on ${field}`);
  seenErrors.push(error);
  error.kind.should.equal('invalid-input');
  error.field.should.equal(field);
  error.message.should.startWith(`${field}: `);
  return error;
}

const callback = 'http://127.0.0.1:1880/hook';

describe('api validation: subscription id (spec 2.1, 8)', () => {
  it('accepts 8 and 40 characters of a-z, A-Z, 0-9 and hyphen', () => {
    validateSubscriptionId('abcdefgh').should.equal('abcdefgh');
    validateSubscriptionId('A'.repeat(20) + '-'.repeat(10) + '0123456789').should.have.length(40);
    validateSubscriptionId('3f2b8c1e-9d4a-4f6b-8a2c-1e5d7b9f0a3c').should.be.ok(); // a GUID
  });
  it('rejects 7 and 41 characters, a_b, other characters and non-strings, naming the rule', () => {
    for (const id of ['abcdefg', 'a'.repeat(41), 'abc_defgh', 'a_b', 'abc defgh', 'abcdefgh/', 'abcdéfgh', '']) {
      const error = invalid(() => validateSubscriptionId(id), 'id');
      error.message.should.match(/8 to 40 characters of a-z, A-Z, 0-9 and hyphen/);
    }
    invalid(() => validateSubscriptionId(12345678), 'id');
    invalid(() => validateSubscriptionId(undefined), 'id');
  });
});

describe('api validation: subscription fields (spec 2.1, 4.1)', () => {
  it('requires an absolute http(s) callback', () => {
    invalid(() => validateSubscriptionFields({}), 'callback').message.should.match(/required/);
    for (const bad of ['ftp://x/y', '/relative', 'not a url', 'http://', 'javascript:alert(1)', 'http://a b/']) {
      invalid(() => validateSubscriptionFields({ callback: bad }), 'callback');
    }
    validateSubscriptionFields({ callback: 'https://example.com:8443/a?b=c' }).should.eql([['callback', 'https://example.com:8443/a?b=c']]);
  });
  it('never echoes a callback, header or queryParam value in a message (they may hold secrets)', () => {
    invalid(() => validateSubscriptionFields({ callback: 'ftp://user:topsecret@x/' }), 'callback').message.should.not.match(/topsecret/);
    invalid(() => validateSubscriptionFields({ callback, header: 'X-Token topsecret' }), 'header').message.should.not.match(/topsecret/);
    invalid(() => validateSubscriptionFields({ callback, queryParam: 'token=top\nsecret' }), 'queryParam').message.should.not.match(/top/);
  });
  it('accepts methods case-insensitively, sends them upper-case, rejects others', () => {
    for (const m of ['get', 'Post', 'PUT', 'patch', 'DELETE']) {
      validateSubscriptionFields({ callback, method: m }).should.containEql(['method', m.toUpperCase()]);
    }
    for (const m of ['HEAD', 'OPTIONS', 'CONNECT', 'FETCH', 'G ET']) invalid(() => validateSubscriptionFields({ callback, method: m }), 'method');
  });
  it('successCode: integer 100..599', () => {
    validateSubscriptionFields({ callback, successCode: 204 }).should.containEql(['successCode', '204']);
    validateSubscriptionFields({ callback, successCode: '202' }).should.containEql(['successCode', '202']);
    for (const c of [99, 600, 200.5, '2e2', 'abc', -200, true]) invalid(() => validateSubscriptionFields({ callback, successCode: c }), 'successCode');
  });
  it('retryCount: any integer from 0 (the spec sets no maximum)', () => {
    validateSubscriptionFields({ callback, retryCount: 0 }).should.containEql(['retryCount', '0']);
    validateSubscriptionFields({ callback, retryCount: '101' }).should.containEql(['retryCount', '101']);
    validateSubscriptionFields({ callback, retryCount: 100000 }).should.containEql(['retryCount', '100000']);
    for (const c of [-1, 1.5, 'three']) invalid(() => validateSubscriptionFields({ callback, retryCount: c }), 'retryCount');
  });
  it('logicalOperand: AND or OR, case-insensitive; requestType: non-empty', () => {
    validateSubscriptionFields({ callback, logicalOperand: 'and' }).should.containEql(['logicalOperand', 'AND']);
    validateSubscriptionFields({ callback, logicalOperand: 'Or' }).should.containEql(['logicalOperand', 'OR']);
    for (const o of ['XOR', 'NOT', '&&']) invalid(() => validateSubscriptionFields({ callback, logicalOperand: o }), 'logicalOperand');
    validateSubscriptionFields({ callback, requestType: 'auto' }).should.containEql(['requestType', 'auto']);
    invalid(() => validateSubscriptionFields({ callback, requestType: '   ' }), 'requestType');
    invalid(() => validateSubscriptionFields({ callback, requestType: 'a\nb' }), 'requestType');
  });
  it('header: each "Name: value" with a token name and no CR/LF', () => {
    validateSubscriptionFields({ callback, header: 'Content-Type: application/json' })
      .should.containEql(['header', 'Content-Type: application/json']);
    validateSubscriptionFields({ callback, header: ['X-A: 1', 'X-B:2', 'X-Empty:'] }).filter(([n]) => n === 'header').should.have.length(3);
    for (const h of ['NoColon', ': value', 'Bad Name: v', 'X-A: a\r\nX-Injected: 1', 'X-A: line\nbreak', 'Ünïcode: v']) {
      invalid(() => validateSubscriptionFields({ callback, header: h }), 'header');
    }
    invalid(() => validateSubscriptionFields({ callback, header: ['X-A: 1', ''] }), 'header').message.should.match(/value 2/);
    invalid(() => validateSubscriptionFields({ callback, header: ['X-A: 1', 5] }), 'header');
  });
  it('queryParam: each "name=value" or "name", no CR/LF', () => {
    validateSubscriptionFields({ callback, queryParam: ['a=1', 'flag', 'b=x=y'] }).slice(1)
      .should.eql([['queryParam', 'a=1'], ['queryParam', 'flag'], ['queryParam', 'b=x=y']]);
    for (const q of ['=1', 'a=1\r\n', ' =x']) invalid(() => validateSubscriptionFields({ callback, queryParam: q }), 'queryParam');
  });
  it('watchPath: "* /dir", "+ /dir", "- /dir" or a bare absolute path (spec 4.1 rule 9)', () => {
    const ok = ['* /inbox', '+ /inbox/sub', '- /archive', '/inbox/a.jpg', '/', '* /'];
    validateSubscriptionFields({ callback, watchPath: ok }).slice(1).should.eql(ok.map((v) => ['watchPath', v]));
    for (const p of ['inbox', '*/inbox', '*  /inbox', '# /inbox', '* inbox', '** /x', ' /x', '/a\nb', '+/x']) {
      invalid(() => validateSubscriptionFields({ callback, watchPath: p }), 'watchPath');
    }
  });
  it('watchMetadata: Key=Value, Key==Value, Key==*, Key=*, *==* (spec 4.1 rule 8, City==SFO)', () => {
    const ok = ['MetadataKey=Value', 'City==SFO', 'MetadataKey==*', 'MetadataKey=*', '*==*', 'Formula=a=b', 'Copyright Notice==ACME'];
    validateSubscriptionFields({ callback, watchMetadata: ok }).slice(1).should.eql(ok.map((v) => ['watchMetadata', v]));
    for (const m of ['City', '=SFO', '==SFO', 'City=', 'City==', '*=*', '*==SFO', 'City===SFO', 'Ci\nty=x', ' =x']) {
      invalid(() => validateSubscriptionFields({ callback, watchMetadata: m }), 'watchMetadata');
    }
  });
  it('keeps the order of repeated values and sends every field once per value', () => {
    const form = validateSubscriptionFields({
      callback, watchPath: ['/b', '/a', '/c'], header: ['Z: 1', 'A: 2'], method: 'post'
    });
    form.should.eql([
      ['callback', callback], ['method', 'POST'], ['header', 'Z: 1'], ['header', 'A: 2'],
      ['watchPath', '/b'], ['watchPath', '/a'], ['watchPath', '/c']
    ]);
  });
  it('treats empty optional fields as absent and refuses unknown fields (no silent drop)', () => {
    validateSubscriptionFields({ callback, method: '', retryCount: undefined, header: [], watchPath: null })
      .should.eql([['callback', callback]]);
    invalid(() => validateSubscriptionFields({ callback, watchpath: '/x' }), 'watchpath').message.should.match(/not a subscription field/);
    invalid(() => validateSubscriptionFields(null), 'fields');
  });
});

describe('api validation: upload, download and export fields', () => {
  it('upload: destination or destinationFuid required; typed fields', () => {
    invalid(() => validateUploadFields({}), 'destination');
    validateUploadFields({ destination: '/inbox', name: 'a.jpg', collectionId: 3, wait: true, waitInMinutes: 5, expandZip: false })
      .should.eql([['name', 'a.jpg'], ['destination', '/inbox'], ['collectionId', '3'], ['wait', 'true'], ['waitInMinutes', '5'], ['expandZip', 'false']]);
    validateUploadFields({ destinationFuid: '12' }).should.eql([['destinationFuid', '12']]);
    invalid(() => validateUploadFields({ destination: '/x', name: '../a' }), 'name');
    // 0 is the spec's default of destinationFuid; the number is sent as given
    validateUploadFields({ destinationFuid: 0 }).should.eql([['destinationFuid', '0']]);
    invalid(() => validateUploadFields({ destinationFuid: -1 }), 'destinationFuid');
    invalid(() => validateUploadFields({ destination: '/x', wait: 'yes' }), 'wait');
    // waitInMinutes is a number in the spec: fractions and 0 are sent as given
    validateUploadFields({ destination: '/x', waitInMinutes: 1.5 }).should.containEql(['waitInMinutes', '1.5']);
    validateUploadFields({ destination: '/x', waitInMinutes: '0.25' }).should.containEql(['waitInMinutes', '0.25']);
    validateUploadFields({ destination: '/x', waitInMinutes: 0 }).should.containEql(['waitInMinutes', '0']);
    for (const m of [-1, 'soon', NaN, Infinity]) invalid(() => validateUploadFields({ destination: '/x', waitInMinutes: m }), 'waitInMinutes');
    invalid(() => validateUploadFields({ destination: '/x', collectionId: -1 }), 'collectionId');
  });
  it('fuid and rrn: integers, rrn default -1 and exact beyond 2^53', () => {
    validateFuid(42).should.equal('42');
    validateFuid('0042').should.equal('42');
    invalid(() => validateFuid(undefined), 'fuid');
    invalid(() => validateFuid('1; drop'), 'fuid');
    validateRrn(undefined).should.equal('-1');
    validateRrn('9223372036854775807').should.equal('9223372036854775807');
    invalid(() => validateRrn(-2), 'rrn');
    invalid(() => validateRrn(1.5), 'rrn');
  });
});

describe('api client: invalid input is refused before any request (emulator behind a counting proxy)', () => {
  let emu;
  let proxy;
  let client;
  before(async () => {
    emu = await startTestEmulator();
    proxy = await startCountingProxy(emu.url);
    client = new AssetClient({ baseUrl: proxy.url, cookie: COOKIES.editor });
  });
  after(async () => {
    client.close();
    await proxy.close();
    await emu.close();
  });

  it('ids of 7 and 41 characters and a_b: invalid-input, zero requests', async () => {
    for (const id of ['abcdefg', 'a'.repeat(41), 'a_b', 'abcd_efgh']) {
      (await expectError(client.registerSubscription(id, { callback }), 'invalid-input')).field.should.equal('id');
      (await expectError(client.getSubscription(id), 'invalid-input')).field.should.equal('id');
      (await expectError(client.deleteSubscription(id), 'invalid-input')).field.should.equal('id');
    }
    proxy.seen.should.eql([]);
  });
  it('bad fields, upload, download and export input: invalid-input, zero requests', async () => {
    (await expectError(client.registerSubscription('abcdefgh', { callback: 'ftp://x' }), 'invalid-input')).field.should.equal('callback');
    (await expectError(client.registerSubscription('abcdefgh', { callback, watchPath: 'inbox' }), 'invalid-input')).field.should.equal('watchPath');
    (await expectError(client.upload({ file: { buffer: Buffer.from('x') } }), 'invalid-input')).field.should.equal('destination');
    (await expectError(client.upload({ file: { path: '/no/such/file' }, destination: '/x' }), 'invalid-input')).field.should.equal('file');
    (await expectError(client.downloadToBuffer({ fuid: 'abc' }), 'invalid-input')).field.should.equal('fuid');
    (await expectError(client.exportMetadata({ fuid: 1, rrn: 'latest' }), 'invalid-input')).field.should.equal('rrn');
    proxy.seen.should.eql([]);
  });
  it('a valid id of 8 and of 40 characters does reach the server (the counter works)', async () => {
    await client.registerSubscription('abcdefgh', { callback });
    await client.registerSubscription('a'.repeat(40), { callback });
    proxy.seen.should.have.length(2);
    proxy.seen[0].should.equal('POST /review/api/events/assets/subscribe/abcdefgh');
  });
});

describe('api validation: no cookie in any error of this file', () => {
  it('serialises every error seen so far and finds no cookie value', () => {
    seenErrors.length.should.be.above(50);
    assertNoCookieIn(seenErrors);
  });
});
