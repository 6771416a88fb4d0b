'use strict';
// Issue 22 item 1: the cap on entries per callback, counted on the JSON text before parsing.
require('should');
const { entriesInText, tooManyEntries, readJsonBody, parseCallbackPayload } = require('../../dist/events');
const { containerCap, overValueCaps, tooManyContainers, tooManyValues, valueCap } = require('../../dist/events/entry-count');
const { Readable } = require('stream');

function body(entries, extra = '') {
  return `{"success":true,"id":"sub-test-0001"${extra},"data":{"entry":[${entries.join(',')}]}}`;
}
function request(text) {
  const req = Readable.from([Buffer.from(text)]);
  req.headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
  return req;
}

describe('events: entries per callback (issue 22)', function () {
  it('counts the objects in data.entry, not the objects inside them nor elsewhere', function () {
    entriesInText(body(['{"a":1}', '{"b":{"c":{}}}', '{}']), 100).should.equal(3);
    entriesInText(body(['{"a":1}'], ',"vendor":{"x":[{},{},{}]},"more":[[{}]]'), 100).should.equal(1);
    entriesInText('{"data":{"entry":{"assetId":1}}}', 100).should.equal(1); // a lone entry
    entriesInText('{"data":{"other":[{},{}],"entry":[]}}', 100).should.equal(0);
    entriesInText('{"nested":{"data":{"entry":[{},{}]}}}', 100).should.equal(0);
    entriesInText('[{"data":{"entry":[{},{}]}}]', 100).should.equal(0);
  });

  it('reads keys written with escapes, and strings holding brackets or quotes', function () {
    entriesInText('{"d\\u0061ta":{"\\u0065ntry":[{},{}]}}', 100).should.equal(2);
    entriesInText('{"s":"{[\\"data\\":","data":{"entry":[{"p":"}]{{"},{}]}}', 100).should.equal(2);
  });

  // Every element of data.entry costs the parser memory, whatever its type: 16 million `[]`
  // (48 MB, under the default body limit) take more than a 256 MB heap to parse.
  it('counts every element of data.entry, not only objects (arrays, numbers, strings, null)', function () {
    entriesInText(body(['[]', '[]', '[]']), 100).should.equal(3);
    entriesInText(body(['0', ' 1 ', '"x"', 'null', 'true', '[{}]', '{}']), 100).should.equal(7);
    entriesInText(body(Array(1000).fill('[]')), 10).should.equal(11);
    entriesInText(body([]), 100).should.equal(0);
    entriesInText('{"data":{"entry":[ ]}}', 100).should.equal(0);
    entriesInText('{"data":{"entry":[\n[],\n[]\n]}}', 100).should.equal(2);
  });

  it('stops counting just past the limit', function () {
    entriesInText(body(Array(1000).fill('{"a":1}')), 10).should.equal(11);
  });

  it('a body with more entries than the cap is refused with 413 naming the setting, before parsing', async function () {
    const outcome = await readJsonBody(request(body(Array(11).fill('{"a":1}'))), 1e6, 10);
    outcome.should.eql({ ok: false, status: 413, reason: tooManyEntries(10) });
    outcome.reason.should.match(/Max entries/).and.match(/maxEntries/).and.match(/more than 10 entries/);
    (await readJsonBody(request(body(Array(10).fill('{"a":1}'))), 1e6, 10)).ok.should.be.true();
  });

  // Arrays and objects anywhere in the body cost the parser memory: 16 million `[]` under any key
  // take more than a 256 MB heap; the cap on entries alone does not see them.
  it('counts the arrays and objects, and the values, of the whole body (not in strings)', function () {
    // Max entries 1: at most 100,000 containers and 1,000,000 values.
    (overValueCaps('{"a":[[],{}],"s":"[{[{,,,"}', 1) === undefined).should.be.true();
    overValueCaps(`{"junk":[${Array(100001).fill('[]').join('')}]}`, 1).should.equal(tooManyContainers(1));
    overValueCaps(`{"junk":[${Array(1000000).fill('1').join(',')}]}`, 1).should.equal(tooManyValues(1));
    (overValueCaps(`{"junk":[${Array(999998).fill('1').join(',')}]}`, 1) === undefined).should.be.true();
  });

  it('a body of more plain values than 30 per entry of Max entries (1,000,000 at least) is refused with 413, before parsing', async function () {
    // Before: numbers and strings were not counted, so 14 million of them in a 49 MB body were
    // parsed into about 280 MB of heap (a Node-RED with a 256 MB heap died: hardening-memory).
    valueCap(10).should.equal(1000000);
    valueCap(100000).should.equal(3000000);
    const junk = (n) => `,"junk":[${Array(n).fill('1.5,""').join(',')}]`;
    const outcome = await readJsonBody(request(body(['{"a":1}'], junk(500000))), 1e8, 10);
    outcome.should.eql({ ok: false, status: 413, reason: tooManyValues(10) });
    outcome.reason.should.match(/Max entries/).and.match(/maxEntries/);
    (await readJsonBody(request(body(['{"a":1}'], junk(499990))), 1e8, 10)).ok.should.be.true();
  });

  it('a body with more arrays and objects than 20 per entry of Max entries (100,000 at least) is refused with 413, before parsing', async function () {
    containerCap(10).should.equal(100000);
    containerCap(100000).should.equal(2000000);
    const cap = containerCap(10);
    const junk = (n) => `,"junk":[${Array(n).fill('[]').join(',')}]`;
    const outcome = await readJsonBody(request(body(['{"a":1}'], junk(cap))), 1e6, 10);
    outcome.should.eql({ ok: false, status: 413, reason: tooManyContainers(10) });
    outcome.reason.should.match(/Max entries/).and.match(/maxEntries/);
    (await readJsonBody(request(body(['{"a":1}'], junk(cap - 5))), 1e6, 10)).ok.should.be.true();
  });

  it('an already parsed body is checked by the payload reader', function () {
    const parsed = parseCallbackPayload({ success: true, data: { entry: Array(11).fill({ a: 1 }) } }, 10);
    parsed.should.eql({ ok: false, status: 413, reason: tooManyEntries(10) });
    parseCallbackPayload({ success: true, data: { entry: Array(10).fill({ a: 1 }) } }, 10).ok.should.be.true();
  });
});
