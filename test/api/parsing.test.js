'use strict';
// Precise JSON (rrn is a 64-bit long) and Content-Disposition file names.
const should = require('should');
const { parseJsonKeepingBigInts } = require('../../dist/api/json');
const { filenameFromContentDisposition, sanitizeFilename } = require('../../dist/api/filename');

describe('api parsing: JSON with 64-bit integers', () => {
  it('keeps integers beyond 2^53 exact, as strings, with either sign', () => {
    parseJsonKeepingBigInts('{"rrn":9223372036854775807,"neg":-9223372036854775808,"ok":9007199254740991}')
      .should.eql({ rrn: '9223372036854775807', neg: '-9223372036854775808', ok: 9007199254740991 });
    parseJsonKeepingBigInts('[9007199254740993, 1, 2.5, 1e300, -0]').should.eql(['9007199254740993', 1, 2.5, 1e300, -0]);
    parseJsonKeepingBigInts('{"data":{"fuids":[1,2],"rrn":12345678901234567890}}').data.rrn.should.equal('12345678901234567890');
  });
  it('leaves digits inside strings alone, including escaped quotes', () => {
    parseJsonKeepingBigInts('{"a":"x\\"9223372036854775807\\"","b":"\\\\","c":9223372036854775807}')
      .should.eql({ a: 'x"9223372036854775807"', b: '\\', c: '9223372036854775807' });
  });
  it('agrees with JSON.parse on ordinary documents and rejects invalid JSON', () => {
    const doc = { success: true, data: { bid: 1, fuids: [3, 4], rrn: 1000 }, length: 11, s: 'a-1 2', n: null, f: false, d: -12.5e-3 };
    parseJsonKeepingBigInts(JSON.stringify(doc)).should.eql(doc);
    (() => parseJsonKeepingBigInts('{"a":')).should.throw(SyntaxError);
    (() => parseJsonKeepingBigInts('not json')).should.throw(SyntaxError);
  });
});

describe('api parsing: download file names', () => {
  it('reads filename and prefers filename* (RFC 8187)', () => {
    filenameFromContentDisposition('attachment; filename="report.pdf"').should.equal('report.pdf');
    filenameFromContentDisposition('attachment; filename=plain.txt').should.equal('plain.txt');
    filenameFromContentDisposition("attachment; filename=\"euro.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt").should.equal('€ rates.txt');
    filenameFromContentDisposition("attachment; filename*=iso-8859-1'en'%E9t%E9.txt").should.equal('été.txt');
    filenameFromContentDisposition('attachment; filename="semi;colon \\"q\\".txt"').should.equal('semi;colon _q_.txt');
    should(filenameFromContentDisposition('attachment')).be.undefined();
    should(filenameFromContentDisposition(undefined)).be.undefined();
  });
  it('sanitizes: base name only, no .., no control characters, no leading dots', () => {
    sanitizeFilename('../../etc/passwd').should.equal('passwd');
    sanitizeFilename('C:\\Windows\\system32\\cmd.exe').should.equal('cmd.exe');
    sanitizeFilename('a\u0000b\nc\u007f.txt').should.equal('abc.txt');
    sanitizeFilename('x..y').should.equal('x.y');
    sanitizeFilename('.hidden').should.equal('hidden');
    sanitizeFilename('what?<>.txt').should.equal('what___.txt');
    should(sanitizeFilename('..')).be.undefined();
    should(sanitizeFilename('/')).be.undefined();
    should(sanitizeFilename(' . ')).be.undefined();
    Buffer.byteLength(sanitizeFilename('é'.repeat(300))).should.be.belowOrEqual(255);
    sanitizeFilename('😀'.repeat(100)).should.equal('😀'.repeat(63)); // whole characters: 252 bytes, no half of a pair
    sanitizeFilename('n'.repeat(300) + '.pdf').should.equal('n'.repeat(251) + '.pdf'); // the extension kept
    // A very long name is cut in one pass (it was one join per character dropped: this call did not end).
    sanitizeFilename('n'.repeat(1e6)).should.equal('n'.repeat(255));
  });
});
