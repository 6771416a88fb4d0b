'use strict';
// The one-pass scan of a callback's text (src/events/text-scan.ts) against the passes it replaced,
// kept here as the oracle (textDeeperThan, entriesInText, overValueCaps as they were, and the
// /\d{16}/ test of withExactIntegers): the same answers on random JSON and JSON-like text,
// escapes, unterminated strings and long integers included.
require('should');
const fc = require('fast-check');
const { scanJsonText } = require('../../dist/events/text-scan');
const { quoteUnsafeIntegers, withExactIntegers } = require('../../dist/api/json');

// ---- the passes as they were (commit 360c751), for the comparison ----
function oldDeeperThan(text, max) {
  let depth = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < n; i++) { const s = text.charCodeAt(i); if (s === 0x5c) i++; else if (s === 0x22) break; }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

function oldCaps(text, maxContainers, maxValues) {
  let containers = 0;
  let values = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < n; i++) { const s = text.charCodeAt(i); if (s === 0x5c) i++; else if (s === 0x22) break; }
    } else if (c === 0x7b || c === 0x5b) {
      if (++containers > maxContainers) return 'containers';
      if (++values > maxValues) return 'values';
    } else if (c === 0x2c && ++values > maxValues) {
      return 'values';
    }
  }
  return undefined;
}

function oldEntries(text, limit) {
  const SPACE = 0x20, TAB = 0x09, LF = 0x0a, CR = 0x0d;
  let count = 0;
  let depth = 0;
  let expectKey = false;
  const isObject = [];
  const nameOf = [];
  const lastKey = [];
  let entryExpected = false;
  const isEntryArray = () => !!isObject[1] && !!isObject[2] && nameOf[2] === 'data' && !isObject[3] && nameOf[3] === 'entry';
  const inEntryList = (d) => {
    if (!isObject[1] || !isObject[2] || nameOf[2] !== 'data') return false;
    if (d === 3) return nameOf[3] === 'entry';
    return d === 4 && !isObject[3] && nameOf[3] === 'entry';
  };
  const readKey = (start, end, escaped) => {
    const raw = text.slice(start, end + 1);
    if (!escaped) return raw.slice(1, -1);
    try { return JSON.parse(raw); } catch { return undefined; }
  };
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (entryExpected && c !== SPACE && c !== TAB && c !== LF && c !== CR) {
      entryExpected = false;
      if (c !== 0x5d && ++count > limit) return count;
    }
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < n; i++) { const s = text.charCodeAt(i); if (s === 0x5c) { escaped = true; i++; } else if (s === 0x22) break; }
      if (expectKey) { expectKey = false; if (depth <= 2) lastKey[depth] = readKey(start, i, escaped); }
    } else if (c === 0x7b || c === 0x5b) {
      const parent = depth++;
      const object = c === 0x7b;
      if (depth <= 3) {
        isObject[depth] = object;
        nameOf[depth] = parent >= 1 && isObject[parent] ? lastKey[parent] : undefined;
        lastKey[depth] = undefined;
      }
      if (object && depth === 3 && inEntryList(depth) && ++count > limit) return count;
      if (!object && depth === 3 && isEntryArray()) entryExpected = true;
      expectKey = object;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      expectKey = false;
    } else if (c === 0x2c) {
      expectKey = depth >= 1 && depth <= 3 && isObject[depth];
      if (depth === 3 && isEntryArray()) entryExpected = true;
    }
  }
  return count;
}
// ---- end of the old passes ----

const TOKENS = ['{', '}', '[', ']', '"', '\\', '\\\\', '\\"', ',', ':', ' ', '\n', '"data"', '"entry"', '"d\\u0061ta"', '"\\u0065ntry"',
  '"data":{"entry":[', '{"data":{"entry":', '1', '0', '-', '.5', '123456789012345', '12345678901234567', '-9007199254740993', 'a', 'null', '"x"'];
const jsonLike = fc.string({ unit: fc.constantFrom(...TOKENS), maxLength: 60 });
const callbackLike = fc.tuple(fc.array(fc.json(), { maxLength: 6 }), fc.json(), fc.boolean()).map(([entries, other, lone]) =>
  lone ? `{"data":{"entry":${entries[0] ?? '{}'}},"x":${other}}` : `{"x":${other},"data":{"entry":[${entries.join(',')}]}}`);
const text = fc.oneof(jsonLike, callbackLike, fc.json());

describe('events: one pass over the callback text (text-scan.ts) answers as the passes it replaced', function () {
  it('depth, entries, caps and long integers agree on random text', function () {
    fc.assert(fc.property(text, fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }),
      (t, maxDepth, maxEntries, maxContainers, maxValues) => {
        const deep = oldDeeperThan(t, maxDepth);
        const scan = scanJsonText(t, { maxDepth, maxEntries, maxContainers, maxValues });
        scan.tooDeep.should.equal(deep);
        // Without the depth check (the scan stops at the depth), every other figure is the old one.
        const full = scanJsonText(t, { maxDepth: Infinity, maxEntries, maxContainers, maxValues });
        full.entries.should.equal(oldEntries(t, maxEntries));
        String(full.overCap).should.equal(String(oldCaps(t, maxContainers, maxValues)));
        (full.longDigits ? quoteUnsafeIntegers(t) : t).should.equal(withExactIntegers(t));
      }), { numRuns: 3000 });
  });

  it('skips strings with escaped quotes and backslashes, and an unterminated one', function () {
    const limits = { maxDepth: 2, maxEntries: 10, maxContainers: Infinity, maxValues: Infinity };
    scanJsonText('["\\"[[[[", "\\\\", [1]]', limits).tooDeep.should.be.false();
    scanJsonText('["\\\\"[[[[', limits).tooDeep.should.be.true();
    scanJsonText('["[[[[', limits).tooDeep.should.be.false();
    scanJsonText('{"data":{"entry":[{"a":"\\\\\\""},{}]}}', { ...limits, maxDepth: 64 }).entries.should.equal(2);
    scanJsonText('{"s":"12345678901234567"}', limits).longDigits.should.be.false();
    scanJsonText('{"rrn":12345678901234567}', limits).longDigits.should.be.true();
  });
});
