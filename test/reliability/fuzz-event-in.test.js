'use strict';
// Reliability suite 5b: fuzzing asset-event-in in a real Node-RED (the project's launcher).
// Random and mutated callback bodies, headers, content types, encodings, methods and paths go to
// three endpoints (POST with a secret and an id check; POST without secret, one msg per callback;
// GET), through Node's HTTP client and, for byte-level mutations of whole requests, through raw
// sockets (to a copy of the endpoints under /raw/). Every answer must be 2xx or 4xx (never 5xx),
// in bounded time; Node-RED must keep answering and log no crash; and the messages counted inside
// Node-RED must equal what the 2xx answers said was emitted (nothing emitted for a refused call,
// nothing dropped for an accepted one).
//
// 500 cases in short mode; RELIABILITY_LONG=1: 10,000. (test/nodes/asset-event-in.test.js has 300
// random bodies against the node in the test helper; this runs the node in a real runtime, behind
// Node-RED's own HTTP stack, with headers, methods and raw requests too.)
require('should');
const http = require('http');
const net = require('net');
const zlib = require('zlib');
const fc = require('fast-check');
const { LONG, pick, figure, sleep, launchNodeRed, ids, monitorNodes, monitorStats } = require('./lib/rig');

const RUNS = pick(500, 10000);
const SECRET = 'fuzz-event-in-secret';
const SUBSCRIPTION_ID = 'fuzz-sub-0001';

const entry = fc.oneof(
  fc.record({
    assetId: fc.oneof(fc.nat(), fc.string({ maxLength: 5 }), fc.constant('18446744073709551615'), fc.double()),
    rrn: fc.oneof(fc.nat(), fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String), fc.constant(null)),
    path: fc.string({ maxLength: 20 }),
    owner: fc.string({ maxLength: 5 }),
    action: fc.constantFrom('added', 'modified', 'deleted', 'none', '', 'other')
  }, { requiredKeys: [] }),
  fc.constant({}),
  fc.jsonValue({ maxDepth: 2 })
);
const payload = fc.record({
  success: fc.oneof(fc.boolean(), fc.constantFrom('true', 'false', 'TRUE', 'yes', 1, null)),
  id: fc.oneof(fc.constant(SUBSCRIPTION_ID), fc.string({ maxLength: 12 }), fc.integer(), fc.constant(null)),
  data: fc.oneof(
    fc.record({ entry: fc.oneof(fc.array(entry, { maxLength: 6 }), entry, fc.constant(null)) }, { requiredKeys: [] }),
    fc.jsonValue({ maxDepth: 2 })
  )
}, { requiredKeys: [] });

/** JSON text with a big integer spliced in (rrn beyond 2^53, not representable as a JS number). */
const bigIntJson = fc.tuple(payload, fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n })).map(([p, big]) =>
  JSON.stringify({ ...p, data: { entry: [{ assetId: 1, rrn: 0, action: 'added' }] } }).replace('"rrn":0', `"rrn":${big}`));

/** A body: valid-ish JSON, random text, byte-mutated JSON, deep nesting, odd encodings. */
const body = fc.oneof(
  { weight: 5, arbitrary: payload.map((p) => Buffer.from(JSON.stringify(p))) },
  { weight: 1, arbitrary: bigIntJson.map((t) => Buffer.from(t)) },
  { weight: 2, arbitrary: fc.tuple(payload, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.option(fc.nat()))
    .map(([p, flips, cut]) => {
      let b = Buffer.from(JSON.stringify(p));
      for (const [at, byte] of flips) b[at % b.length] = byte;
      if (cut !== null) b = b.subarray(0, cut % (b.length + 1));
      return b;
    }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.constantFrom('[', '{"a":')).map(([n, open]) =>
    Buffer.from(open.repeat(n) + (open === '[' ? ']' : '1}').repeat(n))) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 5000 }), fc.nat({ max: 3 })).map(([n, more]) =>
    Buffer.from(`{"success":true,"id":"${SUBSCRIPTION_ID}","data":{"entry":[{"assetId":1,"rrn":${n},"deep":${'['.repeat(n)}${']'.repeat(n)}}` +
      ',{"assetId":2,"rrn":1}'.repeat(more) + ']}}')) },
  { weight: 1, arbitrary: payload.map((p) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(p))])) },
  { weight: 1, arbitrary: fc.constantFrom(Buffer.alloc(0), Buffer.from('   '), Buffer.from('null'), Buffer.from('[]'), Buffer.from('{}'), Buffer.from('"x"'),
    Buffer.from('{"data":{"entry":[{"assetId":1}]}}'), Buffer.from('{"data":{"entry":"x"}}'), Buffer.from('{"success":true,"data":{"entry":[]}}'),
    Buffer.from([0xff, 0xfe, 0x7b, 0x00]), Buffer.from('{"__proto__":{"polluted":1},"data":{"entry":[{"constructor":{"prototype":{"x":1}}}]}}')) }
);

const tokenChar = fc.constantFrom(...'abcxyzABC019-_.!#$%&\'*+^`|~'.split(''));
const headerValueChar = fc.constantFrom(...' abcXYZ019-_.,;=/:"()<>@[]{}?\t'.split(''));
const request = fc.record({
  path: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('/dam/guarded', '/dam/plain', '/dam/get') },
    { weight: 1, arbitrary: fc.constantFrom('/dam/plain/', '/DAM/PLAIN', '//dam/plain', '/dam/plain?x=%zz&y', '/dam/plain%', '/dam/%E0%A4%A',
      '/dam/plain/..', '/dam/nope', '/dam/guarded?id=1#frag', '/dam/get?a=1&a=2&b=%00') }),
  // (No CONNECT: Node's HTTP server closes such a connection unless something handles 'connect'.)
  method: fc.oneof({ weight: 6, arbitrary: fc.constant('POST') }, { weight: 3, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH') },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('')), minLength: 1, maxLength: 8 }) }),
  contentType: fc.oneof(fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'text/plain', 'text/json', 'application/vnd.dam+json',
    'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', '', ';', 'application/json; charset=latin1', 'APPLICATION/JSON'),
  fc.string({ unit: headerValueChar, maxLength: 30 })),
  secret: fc.constantFrom('right', 'right', 'missing', 'wrong', 'empty', 'twice'),
  encoding: fc.constantFrom(undefined, undefined, undefined, 'gzip', 'identity', 'br', 'x-random'),
  chunked: fc.boolean(),
  extraHeaders: fc.array(fc.tuple(fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 }), fc.string({ unit: headerValueChar, maxLength: 40 })), { maxLength: 4 }),
  body
});

/** A well-formed callback to the right endpoint and method with the secret, and a (mostly) valid body. */
const goodEntry = fc.record({ assetId: fc.nat({ max: 1000 }), rrn: fc.nat({ max: 100000 }), path: fc.string({ maxLength: 10 }), owner: fc.constant('alice'),
  action: fc.constantFrom('added', 'modified', 'deleted') });
const properRequest = fc.record({
  target: fc.constantFrom(['/dam/guarded', 'POST'], ['/dam/plain', 'POST'], ['/dam/get', 'GET']),
  contentType: fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'text/plain'),
  chunked: fc.boolean(),
  body: fc.oneof({ weight: 3, arbitrary: fc.record({ success: fc.boolean(), id: fc.constant(SUBSCRIPTION_ID), data: fc.record({ entry: fc.array(goodEntry, { maxLength: 5 }) }) })
    .map((p) => Buffer.from(JSON.stringify(p))) }, { weight: 1, arbitrary: body })
}).map(({ target, ...rest }) => ({ ...rest, path: target[0], method: target[1], secret: 'right', encoding: undefined, extraHeaders: [] }));

/** Raw request bytes, then byte-level mutations of the whole thing (request line and headers too). */
const rawRequest = fc.tuple(payload, fc.constantFrom('/raw/plain', '/raw/guarded', '/raw/get'),
  fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'delete')), { minLength: 1, maxLength: 5 }))
  .map(([p, path, mutations]) => {
    const text = JSON.stringify(p);
    let bytes = Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-DAM-Secret: ${SECRET}\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
    for (const [at, byte, how] of mutations) {
      const i = at % bytes.length;
      if (how === 'set') bytes[i] = byte;
      else if (how === 'insert') bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
      else bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
    }
    return bytes;
  });

/** How many messages a 2xx answer says went out: `emitted`, or 1 for a GET callback's {success:true}. */
function emittedBy(status, text) {
  if (status < 200 || status > 299 || !text) return 0;
  let json;
  try { json = JSON.parse(text); } catch { return 0; }
  if (typeof json.emitted === 'number') return json.emitted;
  return json && json.success === true && Object.keys(json).length === 1 ? 1 : 0;
}

describe(`reliability 5b: fuzzing asset-event-in in a real Node-RED (${LONG ? 'long' : 'short'} mode, ${RUNS} cases)`, function () {
  this.timeout(pick(59000, 900000));
  let rig;
  const statuses = new Map();
  let emitted = 0;
  let cases = 0;
  let raw = 0;
  let resets = 0;

  before(async function () {
    rig = await launchNodeRed();
    const next = ids('b5');
    const tab = { id: next(), type: 'tab', label: 'fuzz event-in' };
    const monitor = monitorNodes(tab.id, next);
    const nodes = [
      { id: next(), type: 'asset-event-in', z: tab.id, name: 'guarded', method: 'post', path: '/dam/guarded', subscriptionId: SUBSCRIPTION_ID,
        dedup: true, credentials: { secret: SECRET }, wires: [[monitor.counter]] },
      { id: next(), type: 'asset-event-in', z: tab.id, name: 'plain', method: 'post', path: '/dam/plain', output: 'callback', emitEmpty: true,
        dedup: true, maxBodyMB: '1', wires: [[monitor.counter]] },
      { id: next(), type: 'asset-event-in', z: tab.id, name: 'get', method: 'get', path: '/dam/get', credentials: { secret: SECRET }, wires: [[monitor.counter]] }
    ];
    // The same three endpoints under /raw/, wired to nothing: raw requests are half-closed at once, so
    // an answer can be lost after the node emitted; their messages stay out of the count.
    const rawNodes = nodes.map((n) => ({ ...n, id: next(), path: n.path.replace('/dam/', '/raw/'), wires: [[]] }));
    await rig.deploy([tab, ...nodes, ...rawNodes, ...monitor.nodes]);
  });

  after(async function () {
    figure(`suite 5b (${LONG ? 'long' : 'short'}): ${cases} requests (${raw} raw mutated, ${resets} closed without an answer), ` +
      `statuses ${[...statuses].sort().map(([s, n]) => `${s}x${n}`).join(' ')}; ${emitted} messages emitted and counted`);
    if (process.env.RELIABILITY_DEBUG && rig) console.log(rig.lines.join('\n'));
    if (rig) await rig.close();
  });

  function tally(status) { statuses.set(status, (statuses.get(status) || 0) + 1); }

  function send(r) {
    return new Promise((resolve, reject) => {
      let bodyBytes = r.body;
      const headers = {};
      if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
      if (r.encoding) {
        headers['Content-Encoding'] = r.encoding;
        if (r.encoding === 'gzip') bodyBytes = zlib.gzipSync(bodyBytes);
      }
      if (r.secret === 'right') headers['X-DAM-Secret'] = SECRET;
      else if (r.secret === 'wrong') headers['X-DAM-Secret'] = 'nope';
      else if (r.secret === 'empty') headers['X-DAM-Secret'] = '';
      else if (r.secret === 'twice') headers['X-DAM-Secret'] = [SECRET, SECRET];
      for (const [name, value] of r.extraHeaders) {
        if (!/^(content-length|transfer-encoding|host|connection|content-type|content-encoding|x-dam-secret|expect|upgrade|te|trailer|keep-alive)$/i.test(name)) headers[name] = value;
      }
      const withBody = !['GET', 'HEAD'].includes(r.method) || bodyBytes.length > 0;
      // Node's client frames a GET/HEAD/DELETE/OPTIONS body only when told: unframed, the body would
      // be read as a second, garbage request on the same connection.
      if (withBody) headers[r.chunked ? 'Transfer-Encoding' : 'Content-Length'] = r.chunked ? 'chunked' : bodyBytes.length;
      // A connection per request: one call cannot leave a socket in a state that fails the next.
      const req = http.request(rig.url + r.path, { method: r.method, headers, agent: false });
      const timer = setTimeout(() => req.destroy(new Error('no answer within 10 s')), 10000);
      req.on('response', (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => { clearTimeout(timer); resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }); });
        res.on('error', (e) => { clearTimeout(timer); reject(e); });
      });
      req.on('error', (e) => { clearTimeout(timer); reject(e); });
      if (withBody) {
        if (r.chunked && bodyBytes.length > 1) { req.write(bodyBytes.subarray(0, bodyBytes.length >> 1)); req.end(bodyBytes.subarray(bodyBytes.length >> 1)); } else req.end(bodyBytes);
      } else req.end();
    });
  }

  /** Sends raw bytes, closes the sending side, and reads whatever comes back (resolves { status } or { status: null }). */
  function sendRaw(bytes) {
    return new Promise((resolve) => {
      const socket = net.connect(rig.port, '127.0.0.1');
      const chunks = [];
      const timer = setTimeout(() => { socket.destroy(); resolve({ status: 'timeout' }); }, 10000);
      socket.on('data', (c) => chunks.push(c));
      const done = () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('latin1');
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
        const bodyAt = text.indexOf('\r\n\r\n');
        resolve({ status: m ? Number(m[1]) : null, text: bodyAt >= 0 ? text.slice(bodyAt + 4) : '' });
      };
      socket.on('close', done);
      socket.on('error', () => undefined); // a reset ends in close
      socket.end(bytes);
    });
  }

  it('answers every request 2xx or 4xx in bounded time, emits exactly what it accepted, and keeps Node-RED up', async function () {
    const caseArb = fc.oneof(
      { weight: 3, arbitrary: properRequest.map((r) => ({ kind: 'http', r })) },
      { weight: 4, arbitrary: request.map((r) => ({ kind: 'http', r })) },
      { weight: 2, arbitrary: rawRequest.map((bytes) => ({ kind: 'raw', bytes })) }
    );
    await fc.assert(fc.asyncProperty(caseArb, async (c) => {
      cases++;
      let result;
      if (c.kind === 'raw') {
        raw++;
        result = await sendRaw(c.bytes);
        if (result.status === 'timeout') throw new Error(`no answer and no close within 10 s for raw ${JSON.stringify(c.bytes.toString('latin1'))}`);
        if (result.status === null) { resets++; tally('closed'); return; }
      } else {
        result = await send(c.r);
      }
      tally(result.status);
      if (result.status >= 500 || result.status < 200) {
        throw new Error(`answered ${result.status} ${result.text.slice(0, 200)} for ${c.kind === 'raw' ? JSON.stringify(c.bytes.toString('latin1')) : JSON.stringify({ ...c.r, body: c.r.body.toString('latin1') })}`);
      }
      if (c.kind === 'http') emitted += emittedBy(result.status, result.text);
      if (cases % 250 === 0) (await rig.answers()).should.equal(true, 'Node-RED answers');
    }), { numRuns: RUNS });

    await sleep(300);
    (await rig.answers()).should.equal(true, 'Node-RED answers after the run');
    rig.running.should.equal(true);
    rig.crashLines().should.eql([]);
    const stats = await monitorStats(rig);
    stats.count.total.should.equal(emitted, 'messages counted in Node-RED = emitted per the 2xx answers');
  });
});
