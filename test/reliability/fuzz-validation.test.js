'use strict';
// Reliability suite 5a: fuzzing the API client's validation of subscription ids and fields
// (src/api/validate.ts) against an independent oracle written here from the spec (2.1, 4.1, 8)
// and public-facts.md, plus the client's documented choices where the spec says nothing (method
// one of GET/POST/PUT/PATCH/DELETE, successCode 100-599, unknown field names
// refused; retryCount is any integer from 0, as the spec sets no maximum). The client must accept exactly what the oracle accepts, send it on the wire as the
// oracle expects (checked at a recording server), refuse the rest before any request with an
// invalid-input error naming a broken field, and never echo a secret-bearing value.
//
// 500 cases per property in short mode; RELIABILITY_LONG=1: 10,000.
require('should');
const http = require('http');
const fc = require('fast-check');
const { validateSubscriptionId, validateSubscriptionFields } = require('../../dist/api/validate');
const { AssetClient } = require('../../dist/api/client');
const { LONG, pick, figure } = require('./lib/support');

const RUNS = pick(500, 10000);
const MARK = 'S3CRET'; // put in secret-bearing values (callback, header, queryParam): must never be echoed

// ------------------------------------------------------------------ the oracle (from the spec)

const ASCII_ALNUM_HYPHEN = (c) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45;
const hasControl = (s) => [...s].some((ch) => { const c = ch.codePointAt(0); return c < 32 || c === 127; });
const hasControlButTab = (s) => [...s].some((ch) => { const c = ch.codePointAt(0); return (c < 32 && c !== 9) || c === 127; });
/** ASCII-only upper case: "post" is POST, but "poſt" (long s) is not. */
const asciiUpper = (s) => s.replace(/[a-z]/g, (c) => c.toUpperCase());
const TOKEN_CHARS = new Set("!#$%&'*+.^_`|~-".split(''));
const isToken = (s) => s.length > 0 && [...s].every((ch) => TOKEN_CHARS.has(ch) || (ch.length === 1 && ASCII_ALNUM_HYPHEN(ch.charCodeAt(0))));

/** Spec 2.1 / 8: 8 to 40 characters, each a-z, A-Z, 0-9 or hyphen. */
function specId(id) {
  if (typeof id !== 'string' || id.length < 8 || id.length > 40) return false;
  for (let i = 0; i < id.length; i++) if (!ASCII_ALNUM_HYPHEN(id.charCodeAt(i))) return false;
  return true;
}

const absent = (v) => v === undefined || v === null || v === '';

/** A whole number in [min, max] given as a number, a bigint or a string of ASCII digits; its canonical text, or null. */
function integerText(v, min, max) {
  let big;
  if (typeof v === 'number') { if (!Number.isSafeInteger(v)) return null; big = BigInt(v); }
  else if (typeof v === 'bigint') big = v;
  else if (typeof v === 'string' && /^-?[0-9]+$/.test(v.trim())) big = BigInt(v.trim());
  else return null;
  return big >= BigInt(min) && (max === undefined || big <= BigInt(max)) ? big.toString() : null;
}

/** A non-empty single-line text field; its trimmed value, or null. */
function text(v) {
  if (typeof v !== 'string' || v.trim() === '' || hasControl(v)) return null;
  return v;
}

/**
 * callback (2.1): required; a URL the server can call: literally http:// or https://, then an
 * authority with a host (RFC 3986: reg-name or IP literal, optional userinfo and digit port),
 * then an optional path/query; no whitespace, controls or backslashes (not URI characters).
 */
function specCallback(v) {
  if (typeof v !== 'string' || v === '' || /[\s\\]/.test(v) || hasControl(v)) return false;
  const m = /^https?:\/\/([^/?#]*)/i.exec(v);
  if (!m) return false;
  const hostPort = m[1].slice(m[1].lastIndexOf('@') + 1);
  return /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=-]+)(:[0-9]*)?$/.test(hostPort);
}

/** header (4.1 rule 2): "Name: value", Name an HTTP token, no CR/LF or other controls (tab is fine). */
function specHeader(v) {
  if (typeof v !== 'string' || v === '' || hasControlButTab(v)) return false;
  const colon = v.indexOf(':');
  return colon > 0 && isToken(v.slice(0, colon).trim());
}

/** queryParam (4.1 rule 7): "name=value" or "name", name not blank, no controls. */
function specQueryParam(v) {
  if (typeof v !== 'string' || v === '' || hasControl(v)) return false;
  const eq = v.indexOf('=');
  return (eq < 0 ? v : v.slice(0, eq)).trim() !== '';
}

/** watchPath (4.1 rule 9): optional prefix * + or - then one space, then an absolute path; or a bare absolute path. */
function specWatchPath(v) {
  if (typeof v !== 'string' || hasControl(v)) return false;
  const rest = '*+-'.includes(v[0]) && v[1] === ' ' && v.length > 1 ? v.slice(2) : v;
  return rest.startsWith('/');
}

/** watchMetadata (4.1 rule 8, public facts): *==*, or Key=Value / Key==Value (Value may be *); Key not * nor blank. */
function specWatchMetadata(v) {
  if (typeof v !== 'string' || hasControl(v)) return false;
  if (v === '*==*') return true;
  const m = /^([^=]+)==?([^=][\s\S]*)$/.exec(v);
  return !!m && m[1].trim() !== '' && m[1] !== '*';
}

const SCALAR_RULES = {
  callback: null, // handled first: required
  method: (v) => { const t = text(v); return t !== null && ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(asciiUpper(t.trim())) ? asciiUpper(t.trim()) : null; },
  successCode: (v) => integerText(v, 100, 599),
  retryCount: (v) => integerText(v, 0, undefined),
  requestType: (v) => { const t = text(v); return t === null ? null : t.trim(); },
  logicalOperand: (v) => { const t = text(v); return t !== null && ['AND', 'OR'].includes(asciiUpper(t.trim())) ? asciiUpper(t.trim()) : null; }
};
const LIST_RULES = { header: specHeader, queryParam: specQueryParam, watchPath: specWatchPath, watchMetadata: specWatchMetadata };
const FIELD_ORDER = ['callback', 'method', 'successCode', 'retryCount', 'requestType', 'logicalOperand', 'header', 'queryParam', 'watchPath', 'watchMetadata'];

/** The oracle: { invalid: [field...], form: [[name, value]...] } for a fields value. */
function specFields(fields) {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return { invalid: ['fields'], form: null };
  const invalid = Object.keys(fields).filter((k) => !FIELD_ORDER.includes(k));
  const form = [];
  if (specCallback(fields.callback)) form.push(['callback', fields.callback]); else invalid.push('callback');
  for (const name of FIELD_ORDER.slice(1, 6)) {
    if (absent(fields[name])) continue;
    const value = SCALAR_RULES[name](fields[name]);
    if (value === null) invalid.push(name); else form.push([name, value]);
  }
  for (const name of FIELD_ORDER.slice(6)) {
    const v = fields[name];
    if (absent(v) || (Array.isArray(v) && v.length === 0)) continue;
    const items = Array.isArray(v) ? v : [v];
    if (items.every(LIST_RULES[name])) items.forEach((item) => form.push([name, item])); else invalid.push(name);
  }
  return { invalid, form: invalid.length ? null : form };
}

// ------------------------------------------------------------------ generators

// Each generator mixes values the spec allows (mostly) with near misses and wild values, so that
// whole objects are often valid and an invalid one usually breaks one rule only.
const mostly = (valid, wild) => fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: wild });

const validIdChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-');
const nastyChar = fc.constantFrom('_', ' ', '/', '.', '%', '+', '~', ':', '?', '#', 'é', 'ß', 'İ', 'ı', 'ſ', '\n', '\t', '\u0000', '\u200b',
  '\uff21' /* fullwidth A */, '\u0663' /* Arabic-Indic 3 */, '\ud83d\ude00', '\ud800' /* lone surrogate */);
const insertAt = ([s, c, at]) => s.slice(0, at % (s.length + 1)) + c + s.slice(at % (s.length + 1));
const idArb = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: validIdChar, minLength: 8, maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: validIdChar, minLength: 0, maxLength: 48 }) },
  { weight: 2, arbitrary: fc.tuple(fc.string({ unit: validIdChar, minLength: 6, maxLength: 42 }), nastyChar, fc.nat()).map(insertAt) },
  { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 45 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.constant(null), fc.constant(undefined), fc.boolean(), fc.array(fc.string(), { maxLength: 2 }), fc.object({ maxDepth: 1 })) }
);

const urlTailChar = fc.constantFrom(...'abcXYZ0129/_.~-=&?%:@'.split(''));
const callbackArb = mostly(
  fc.tuple(fc.constantFrom('http://127.0.0.1:1880/hook', 'https://example.com', 'http://node-red.local:1880/dam/events?x=1', 'HTTPS://EXAMPLE.COM/a',
    'http://[::1]:8080/x', `http://user:${MARK}@host/p`, `https://h.example/cb?token=${MARK}`, 'http://h:/', 'http://@h/'),
  fc.string({ unit: urlTailChar, maxLength: 12 })).map(([base, tail]) => `${base}/${tail}`),
  fc.oneof(
    fc.constantFrom('ftp://x/', 'javascript:alert(1)', 'file:///etc/passwd', `mailto:${MARK}@b`, '/hook', 'hook', 'http://', 'http:///x', 'http:// h/',
      `http:${MARK}`, `http:/${MARK}`, `https:\\\\${MARK}/y`, `http://h\\${MARK}`, 'http://h:port/', 'http://u@/', 'http://h%20/',
      `http://a b/${MARK}`, `http://h/${MARK} x`, `http://h/\n${MARK}`, `http://h/\t${MARK}`, '', '   ', `http://h/\u00a0${MARK}`),
    fc.string({ maxLength: 20 }),
    fc.constantFrom(undefined, null, 42, [], {})
  )
);
const methodArb = mostly(
  fc.constantFrom('GET', 'get', ' Post ', 'PUT', 'patch', 'DELETE', 'delete', 'pAtCh'),
  fc.oneof(fc.constantFrom('HEAD', 'OPTIONS', 'CONNECT', 'G ET', 'GET\n', '\tGET', '   ', 'POSTS', 'poſt', 'poﬆ', 'dELETE\u0000'),
    fc.string({ maxLength: 8 }), fc.constantFrom(1, true))
);
const integerArb = (lo, hi) => mostly(
  fc.oneof(fc.integer({ min: lo, max: hi }), fc.tuple(fc.integer({ min: lo, max: hi }), fc.constantFrom('', ' ', '00')).map(([n, pad]) => (pad === '00' ? `00${n}` : `${pad}${n}${pad}`)),
    fc.bigInt({ min: BigInt(lo), max: BigInt(hi) }), fc.constantFrom(lo, hi, `${lo}`, `${hi}`, -0)),
  fc.oneof(fc.integer({ min: lo - 20, max: hi + 20 }), fc.constantFrom(lo - 1, hi + 1, 200.5, NaN, Infinity, true, '  ', '2e2', 'abc', '+5', '１２３', '٢٠٠', '1_0', '9'.repeat(30), `${lo}\n`),
    fc.string({ unit: fc.constantFrom(...'0123456789-+ .e'.split('')), maxLength: 5 }))
);
const requestTypeArb = mostly(fc.constantFrom('auto', 'json', 'application/json', ' x '), fc.oneof(fc.constantFrom('  ', 'a\nb', '\u0085', 5), fc.string({ maxLength: 10 })));
const operandArb = mostly(fc.constantFrom('AND', 'and', 'Or', ' or ', 'ANd'), fc.oneof(fc.constantFrom('XOR', '  ', 'AND\n', 'ORR', 'oʀ', '&&'), fc.string({ maxLength: 4 })));

const tokenChar = fc.constantFrom(...'abcXYZ09-_.!#$%&\'*+^`|~'.split(''));
const headerItem = mostly(
  fc.oneof(fc.constantFrom(`X-Token: ${MARK}-abc`, 'Content-Type: application/json', 'X-Empty:', `X-Tab:\t${MARK}`, ` X-Spaced : ${MARK}`),
    fc.tuple(fc.string({ unit: tokenChar, minLength: 1, maxLength: 8 }), fc.constantFrom(':', ': '), fc.string({ unit: urlTailChar, maxLength: 8 }))
      .map(([name, sep, value]) => `${name}${sep}${MARK}${value}`)),
  fc.oneof(fc.constantFrom('NoColon', `: ${MARK}`, `Bad Name: ${MARK}`, `X-A: ${MARK}\r\nX-B: 1`, `Ünï: ${MARK}`, `X-A: ${MARK}\u0000`, '', `(x): ${MARK}`, 5, null),
    fc.tuple(fc.string({ unit: tokenChar, maxLength: 8 }), fc.constantFrom(':', ': ', ' : ', ''), fc.string({ maxLength: 8 })).map(([n, sep, v]) => `${n}${sep}${MARK}${v}`))
);
const queryItem = mostly(
  fc.oneof(fc.constantFrom(`token=${MARK}`, 'flag', `b=x=${MARK}`, `sp ace=${MARK}`),
    fc.tuple(fc.string({ unit: tokenChar, minLength: 1, maxLength: 6 }), fc.string({ unit: urlTailChar, maxLength: 6 })).map(([n, v]) => `${n}=${MARK}${v}`)),
  fc.oneof(fc.constantFrom(`=${MARK}`, ` =${MARK}`, `a=${MARK}\n`, `a=${MARK}\u007f`, '', 7, null),
    fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 })).map(([n, v]) => `${n}=${MARK}${v}`))
);
const pathChar = fc.constantFrom('/', 'a', 'b', '.', ' ', '-', 'é', '*');
const watchPathItem = mostly(
  fc.oneof(fc.constantFrom('* /inbox', '+ /a/b', '- /archive', '/a.jpg', '/', '* /', '/a/../b'),
    fc.tuple(fc.constantFrom('', '* ', '+ ', '- '), fc.string({ unit: pathChar, maxLength: 10 })).map(([p, s]) => `${p}/${s}`)),
  fc.oneof(fc.constantFrom('inbox', '*/inbox', '*  /inbox', '# /x', '* inbox', '** /x', ' /x', '/a\nb', '+/x', '-', '* ', '', 3, null),
    fc.tuple(fc.constantFrom('', '* ', '+ ', '- ', '*', ' ', '# ', '*  '), fc.string({ unit: fc.constantFrom('/', 'a', ' ', '\n', '*'), maxLength: 10 })).map(([p, s]) => p + s))
);
const watchMetadataItem = mostly(
  fc.oneof(fc.constantFrom('MetadataKey=Value', 'City==SFO', 'Key==*', 'Key=*', '*==*', 'Formula=a=b', 'Copyright Notice==ACME'),
    fc.tuple(fc.constantFrom('City', 'Copyright Notice', 'ключ', 'k\t'), fc.constantFrom('=', '=='), fc.constantFrom('SFO', '*', 'a=b', ' '))
      .map(([k, sep, v]) => k + sep + v)),
  fc.oneof(fc.constantFrom('City', '=SFO', '==SFO', 'City=', 'City==', '*=*', '*==SFO', 'City===SFO', 'Ci\nty=x', ' =x', '*==* ', '', 9),
    fc.tuple(fc.constantFrom('City', '*', '', ' ', 'k='), fc.constantFrom('=', '==', '===', ''), fc.constantFrom('SFO', '*', '', '=x', 'x\n'))
      .map(([k, sep, v]) => k + sep + v))
);
const listOf = (item) => fc.oneof(item, fc.array(item, { minLength: 1, maxLength: 4 }), fc.constantFrom(undefined, null, '', []));

const fieldsArb = fc.oneof(
  { weight: 40, arbitrary: fc.tuple(
    // Every field but callback is left out about half the time.
    fc.record({
      callback: callbackArb,
      method: methodArb, successCode: integerArb(100, 599), retryCount: integerArb(0, 1000),
      requestType: requestTypeArb, logicalOperand: operandArb,
      header: listOf(headerItem), queryParam: listOf(queryItem), watchPath: listOf(watchPathItem), watchMetadata: listOf(watchMetadataItem)
    }, { requiredKeys: ['callback'] }),
    fc.oneof({ weight: 15, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom('watchpath', 'Callback', 'secret', 'id', 'constructor', 'toString', '__proto__'), fc.string({ maxLength: 5 })) })
  ).map(([fields, extra]) => {
    // An own property even for __proto__ (an assignment would set the prototype instead).
    if (extra) Object.defineProperty(fields, extra[0], { value: extra[1], enumerable: true, configurable: true, writable: true });
    return fields;
  }) },
  { weight: 1, arbitrary: fc.constantFrom(null, [], 'callback=http://x', 42) }
);

// ------------------------------------------------------------------ the properties

function rejection(fn) {
  try { fn(); } catch (err) { return err; }
  return undefined;
}

describe(`reliability 5a: fuzzing the client's validation of subscription ids and fields (${LONG ? 'long' : 'short'} mode, ${RUNS} cases each)`, function () {
  this.timeout(pick(55000, 600000));
  const tally = { idOk: 0, idBad: 0, fieldsOk: 0, fieldsBad: 0, wireOk: 0, wireBad: 0 };
  after(() => figure(`suite 5a: ids ${tally.idOk} accepted / ${tally.idBad} refused; fields ${tally.fieldsOk} / ${tally.fieldsBad}; ` +
    `through the client to a recording server ${tally.wireOk} sent / ${tally.wireBad} refused with no request`));

  it('subscription id: accepts exactly 8 to 40 of a-z, A-Z, 0-9 and hyphen', function () {
    fc.assert(fc.property(idArb, (id) => {
      const expected = specId(id);
      const err = rejection(() => validateSubscriptionId(id));
      if (expected) {
        if (err) throw new Error(`refused a valid id ${JSON.stringify(id)}: ${err.message}`);
        validateSubscriptionId(id).should.equal(id);
        tally.idOk++;
      } else {
        if (!err) throw new Error(`accepted an invalid id ${JSON.stringify(id)}`);
        err.kind.should.equal('invalid-input');
        err.field.should.equal('id');
        err.message.should.startWith('id: must be 8 to 40 characters of a-z, A-Z, 0-9 and hyphen');
        tally.idBad++;
      }
    }), { numRuns: RUNS });
  });

  it('subscription fields: accepts exactly the spec\'s rules, sends them normalised, names a broken field, echoes no secret', function () {
    fc.assert(fc.property(fieldsArb, (fields) => {
      const spec = specFields(fields);
      let form;
      const err = rejection(() => { form = validateSubscriptionFields(fields); });
      if (spec.form) {
        if (err) throw new Error(`refused valid fields ${show(fields)}: ${err.message}`);
        form.should.eql(spec.form);
        tally.fieldsOk++;
      } else {
        if (!err) throw new Error(`accepted invalid fields ${show(fields)} (invalid per spec: ${spec.invalid.join(', ')})`);
        err.kind.should.equal('invalid-input');
        if (!spec.invalid.includes(err.field)) throw new Error(`error names ${err.field}, but the broken fields are ${spec.invalid.join(', ')}: ${err.message}`);
        err.message.should.startWith(`${err.field}: `);
        if (err.message.includes(MARK)) throw new Error(`the message echoes a secret-bearing value: ${err.message}`);
        tally.fieldsBad++;
      }
    }), { numRuns: RUNS });
  });

  describe('through the client, to a recording server', function () {
    let server;
    let client;
    const seen = [];
    before(async function () {
      server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
          seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
          const id = decodeURIComponent(req.url.split('/').pop());
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ id, success: true }));
        });
      });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      client = new AssetClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, cookie: 'fuzz-cookie' });
    });
    after(async function () {
      if (client) client.close();
      if (server) { server.closeAllConnections(); await new Promise((r) => server.close(r)); }
    });

    it('sends what the oracle accepts exactly as form fields; refuses the rest before any request', async function () {
      await fc.assert(fc.asyncProperty(idArb, fieldsArb, async (id, fields) => {
        seen.length = 0;
        const spec = specFields(fields);
        const valid = specId(id) && spec.form !== null;
        let err;
        try { await client.registerSubscription(id, fields); } catch (e) { err = e; }
        if (valid) {
          if (err) throw new Error(`refused ${JSON.stringify(id)} ${show(fields)}: ${err.message}`);
          seen.should.have.length(1);
          seen[0].method.should.equal('POST');
          seen[0].url.should.equal(`/review/api/events/assets/subscribe/${encodeURIComponent(id)}`);
          seen[0].type.should.match(/^application\/x-www-form-urlencoded/);
          [...new URLSearchParams(seen[0].body)].should.eql(spec.form);
          tally.wireOk++;
        } else {
          if (!err) throw new Error(`sent invalid input ${JSON.stringify(id)} ${show(fields)}`);
          err.kind.should.equal('invalid-input');
          seen.should.have.length(0);
          tally.wireBad++;
        }
      }), { numRuns: RUNS });
    });
  });
});

function show(v) {
  try { return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x)); } catch { return String(v); }
}
