'use strict';
const should = require('should');
const { parseCallbackPayload, isEmptyEntry, entryKey, readBooleanFlag } = require('../../dist/events');
const { parseJsonKeepingBigInts: parseJsonKeepingBigIntegers, quoteUnsafeIntegers } = require('../../dist/api/json');

describe('events: JSON with big integers', function () {
  it('parses ordinary JSON exactly like JSON.parse', function () {
    const text = '{"a":1,"b":[1.5,-2,3e5,"x\\"y"],"c":null,"d":9007199254740991}';
    parseJsonKeepingBigIntegers(text).should.eql(JSON.parse(text));
  });

  it('keeps an rrn beyond 2^53 as the exact decimal string', function () {
    const v = parseJsonKeepingBigIntegers('{"rrn": 9007199254740993, "assetId": -12345678901234567890}');
    v.rrn.should.equal('9007199254740993');
    v.assetId.should.equal('-12345678901234567890');
  });

  it('leaves digits inside strings alone, including after escaped quotes', function () {
    const text = '{"path":"/a\\"9007199254740993\\\\","rrn":9007199254740993}';
    const v = parseJsonKeepingBigIntegers(text);
    v.path.should.equal('/a"9007199254740993\\');
    v.rrn.should.equal('9007199254740993');
  });

  it('does not touch large floats or safe 16-digit integers', function () {
    quoteUnsafeIntegers('[1234567890123456, 12345678901234567.5, 1e400]').should.equal('[1234567890123456, 12345678901234567.5, 1e400]');
  });

  it('still rejects text that is not JSON', function () {
    (() => parseJsonKeepingBigIntegers('{"rrn": 12345678901234567890,')).should.throw();
    (() => parseJsonKeepingBigIntegers('nope')).should.throw();
  });
});

describe('events: callback payload (spec 2.3)', function () {
  const entry = { assetId: 17, rrn: 42, path: '/inbox/a.txt', owner: 'alice', action: 'added' };

  it('reads the spec shape', function () {
    const r = parseCallbackPayload({ success: true, data: { entry: [entry, {}] }, id: 'sub-00001' });
    r.should.eql({ ok: true, id: 'sub-00001', success: true, entries: [entry, {}] });
  });

  it('accepts success as "true"/"false" strings and reads it as a boolean', function () {
    parseCallbackPayload({ success: 'true', data: { entry: [] } }).success.should.equal(true);
    parseCallbackPayload({ success: 'FALSE', data: { entry: [] } }).success.should.equal(false);
    parseCallbackPayload({ data: { entry: [] } }).should.not.have.property('success');
    parseCallbackPayload({ success: 'yes', data: { entry: [] } }).should.eql({ ok: false, reason: 'success: must be true or false' });
    (readBooleanFlag(1) === null).should.be.true();
  });

  it('turns numeric strings into numbers, keeps unsafe ones as strings and odd values as sent', function () {
    const r = parseCallbackPayload({ data: { entry: [
      { assetId: '17', rrn: ' 42 ', action: 'modified' },
      { assetId: 5, rrn: '18446744073709551615' },
      { assetId: 'abc', rrn: 1.5, extra: { x: 1 } }
    ] } });
    r.ok.should.be.true();
    r.entries[0].should.eql({ assetId: 17, rrn: 42, action: 'modified' });
    r.entries[1].should.eql({ assetId: 5, rrn: '18446744073709551615' });
    r.entries[2].should.eql({ assetId: 'abc', rrn: 1.5, extra: { x: 1 } });
  });

  it('reads a missing or null entry list as no entries and a lone object as one entry', function () {
    parseCallbackPayload({ success: true, data: {} }).entries.should.eql([]);
    parseCallbackPayload({ success: true, data: { entry: null } }).entries.should.eql([]);
    parseCallbackPayload({ success: true, data: { entry: entry } }).entries.should.eql([entry]);
  });

  it('takes a numeric id as a string', function () {
    parseCallbackPayload({ id: 12345678, data: { entry: [] } }).id.should.equal('12345678');
  });

  it('rejects what is not the 2.3 shape, naming the field', function () {
    parseCallbackPayload([entry]).should.eql({ ok: false, reason: 'body: must be a JSON object (spec 2.3)' });
    parseCallbackPayload(null).ok.should.be.false();
    parseCallbackPayload({ success: true }).reason.should.match(/^data:/);
    parseCallbackPayload({ data: [entry] }).reason.should.match(/^data:/);
    parseCallbackPayload({ data: { entry: 'x' } }).reason.should.equal('data.entry: must be an array of objects');
    parseCallbackPayload({ data: { entry: [entry, 3] } }).reason.should.equal('data.entry[1]: must be an object');
    parseCallbackPayload({ data: { entry: [] }, id: { a: 1 } }).reason.should.equal('id: must be a string');
  });

  it('tells empty entries apart', function () {
    isEmptyEntry({}).should.be.true();
    isEmptyEntry(entry).should.be.false();
  });

  it('builds duplicate keys from the subscription id and every field of the entry', function () {
    const key = entryKey('s1', entry);
    key.should.equal(entryKey('s1', { ...entry }));
    for (const other of [{ path: '/elsewhere' }, { owner: 'bob' }, { rrn: 43 }, { action: 'modified' }, { assetId: 8 }, { extra: 'x' }, { path: undefined }]) {
      key.should.not.equal(entryKey('s1', { ...entry, ...other }), JSON.stringify(other));
    }
    key.should.not.equal(entryKey('s2', entry));
    entryKey(undefined, { rrn: 5, path: '/inbox/a.txt', action: 'added' }).should.not.equal(entryKey(undefined, { rrn: 5, path: '/inbox/b.txt', action: 'added' }));
    entryKey(undefined, { assetId: 1, rrn: '18446744073709551615' }).should.not.equal(entryKey(undefined, { assetId: 1, rrn: '18446744073709551616' }));
    // Values cannot run into each other: every value is self-delimiting.
    entryKey('s1', { rrn: 1, path: 'a', owner: 'bc' }).should.not.equal(entryKey('s1', { rrn: 1, path: 'ab', owner: 'c' }));
    entryKey('s1', { rrn: 1, path: '1' }).should.not.equal(entryKey('s1', { rrn: '1', path: 1 }));
    entryKey('s1', { rrn: 1, x: 'y' }).should.not.equal(entryKey('s1', { rrn: 1, xy: undefined }));
    // Objects from hostile JSON may have no usable toString: keyed by their JSON, never a throw.
    entryKey('s1', { rrn: 1, assetId: { toString: null }, action: 'added' }).should.not.equal(entryKey('s1', { rrn: 1, assetId: { valueOf: null }, action: 'added' }));
  });

  it('gives no key to an entry without rrn (never treated as a duplicate)', function () {
    should(entryKey('s1', { path: '/inbox/a.txt', action: 'added' })).be.undefined();
    should(entryKey('s1', { assetId: 1, rrn: null })).be.undefined();
    should(entryKey('s1', {})).be.undefined();
  });
});
