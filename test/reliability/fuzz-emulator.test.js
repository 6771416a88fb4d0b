'use strict';
// Reliability suite 5c: fuzzing the emulator's routes, with the emulator as a child process (the
// dam-emulator CLI), so that a crash shows as an exit.
// - Random requests on every route: subscribe (POST/GET/DELETE, random ids and form fields as
//   URL-encoded or multipart bodies, odd content types), export, download, and the /emulator/
//   endpoints (metadata JSON bodies, lookups, deliveries, jobs), random methods and cookies.
// - Multipart upload streams: mutated bodies sent in random chunks with small pauses, some cut off
//   part-way by the client.
// Every answer is JSON with a boolean `success` (except a download's bytes and an XML export),
// never 5xx; the emulator keeps answering, stays up, and leaves no temporary upload file.
//
// 500 cases per target in short mode; RELIABILITY_LONG=1: 10,000. (test/emulator/fuzz.test.js has
// 300 in-process runs of mutated uploads and random forms; this covers more routes, streams and
// cut-off uploads, against the CLI.)
require('should');
const fs = require('fs');
const http = require('http');
const path = require('path');
const fc = require('fast-check');
const { spawnCli, multipart, makeZip } = require('../emulator/support');
const { startReceiver } = require('../emulator/delivery-receiver');
const { LONG, pick, figure, tempDir, rmDir, sleep, waitFor } = require('./lib/support');

const RUNS = pick(500, 10000);
const COOKIE = 'JSESSIONID=local-dev';

describe(`reliability 5c: fuzzing the emulator's routes (${LONG ? 'long' : 'short'} mode, ${RUNS} cases per target)`, function () {
  this.timeout(pick(59000, 1200000));
  let cli;
  let dataDir;
  let receiver;
  let exited = null;
  const statuses = new Map();
  const tally = (route, status) => { const k = `${route} ${status}`; statuses.set(k, (statuses.get(k) || 0) + 1); };
  let cutOff = 0;
  // Keep-alive, one connection, as the API client does: an answer given before the whole body was
  // read (401, a form error) is then read while the rest is discarded. (With Connection: close the
  // server closes right after answering, and a client still sending may get a reset instead.)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  before(async function () {
    dataDir = tempDir('dam-fuzz-emu-');
    receiver = await startReceiver(() => 200); // the only callback target the fuzzer may register
    cli = await spawnCli(['--port', '0', '--data', dataDir, '--quiet', '--retry-delay', '200ms']);
    cli.exited.then((e) => { exited = e; });
  });

  after(async function () {
    const byRoute = {};
    for (const [k, n] of statuses) { const [route, status] = k.split(' '); (byRoute[route] ??= []).push(`${status}x${n}`); }
    figure(`suite 5c (${LONG ? 'long' : 'short'}): ${Object.entries(byRoute).map(([r, s]) => `${r}: ${s.sort().join(' ')}`).join('; ')}; ${cutOff} uploads cut off by the client`);
    agent.destroy();
    if (cli && exited === null) { cli.child.kill('SIGTERM'); await cli.exited; }
    if (receiver) await receiver.close();
    rmDir(dataDir);
  });

  afterEach(function () {
    if (exited !== null) throw new Error(`the emulator exited (${JSON.stringify(exited)}): ${cli.stdout()}${cli.stderr()}`);
  });

  /** One request; resolves { status, headers, body } (body a Buffer). `chunks` splits the body, with pauses. */
  function send({ method, urlPath, headers = {}, body, split = [], pauseMs = 0, cutAt }) {
    return new Promise((resolve, reject) => {
      const url = new URL(cli.url);
      const h = { ...headers };
      if (body !== undefined && cutAt === undefined) h['Content-Length'] = body.length;
      if (body !== undefined && cutAt !== undefined) h['Content-Length'] = body.length; // promised, then not delivered
      const req = http.request({ host: url.hostname, port: url.port, method, path: urlPath, headers: h, agent });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within 15 s: ${method} ${urlPath}`)), 15000);
      req.on('response', (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => { clearTimeout(timer); resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }); });
        res.on('error', (e) => { clearTimeout(timer); reject(e); });
      });
      req.on('error', (e) => {
        clearTimeout(timer);
        if (cutAt !== undefined) resolve({ status: 'cut' }); else reject(e);
      });
      (async () => {
        if (body === undefined) { req.end(); return; }
        const limit = cutAt === undefined ? body.length : Math.min(cutAt, body.length);
        let at = 0;
        for (const n of split) {
          const end = Math.min(limit, at + n);
          if (end > at) req.write(body.subarray(at, end));
          at = end;
          if (pauseMs) await sleep(pauseMs);
        }
        if (at < limit) req.write(body.subarray(at, limit));
        if (cutAt === undefined) req.end();
        else { await sleep(20); req.destroy(); resolve({ status: 'cut' }); }
      })().catch(reject);
    });
  }

  /** The answer rules: no 5xx; JSON with a boolean success, except download bytes and XML export. */
  function check(route, r, what) {
    tally(route, r.status);
    if (r.status >= 500) throw new Error(`${r.status} for ${what}: ${r.body.toString('utf8').slice(0, 300)}`);
    const type = r.headers['content-type'] || '';
    if (route === 'download' && r.status === 200 && r.headers['x-asset-fuid']) return;
    if (route === 'export' && r.status === 200 && /^application\/xml/.test(type)) return;
    if (!/^application\/json/.test(type)) throw new Error(`not JSON (${type || 'no content type'}, ${r.status}) for ${what}: ${r.body.toString('latin1').slice(0, 200)}`);
    let json;
    try { json = JSON.parse(r.body.toString('utf8')); } catch (e) { throw new Error(`invalid JSON for ${what}: ${e.message}`); }
    if (typeof json.success !== 'boolean') throw new Error(`no boolean success for ${what}: ${r.body.toString('utf8').slice(0, 200)}`);
  }

  // ---------------------------------------------------------------- generators

  const idPool = ['fuzz-sub-0001', 'fuzz-sub-0002', 'fuzz-sub-0003', 'abcdefgh', 'A'.repeat(40)];
  const idArb = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...idPool) },
    { weight: 2, arbitrary: fc.constantFrom('', 'short', 'a'.repeat(41), 'a_b_c_d_e', 'abc%2Fdefgh', 'abc%zzdefgh', '%E0%A4%A', 'abcdefgh/extra', 'é'.repeat(10), '..%2F..%2Fetc') },
    { weight: 1, arbitrary: fc.string({ maxLength: 45 }).map((s) => encodeURIComponent(s)) }
  );
  const fieldValue = {
    callback: () => fc.constantFrom(`${receiver.url}/cb`, `${receiver.url}/cb?x=1`, 'http://127.0.0.1:1/refused', 'ftp://x/', 'not a url', '', 'http://', `${receiver.url}/cb#frag`),
    method: () => fc.constantFrom('GET', 'post', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'x', ''),
    successCode: () => fc.oneof(fc.integer({ min: 0, max: 700 }).map(String), fc.constantFrom('2e2', '-1', 'abc', '')),
    retryCount: () => fc.oneof(fc.integer({ min: -2, max: 120 }).map(String), fc.constantFrom('1.5', 'x', '')),
    requestType: () => fc.constantFrom('auto', 'json', 'a b', '', 'x/y'),
    header: () => fc.constantFrom('X-A: 1', 'Content-Type: application/json', 'NoColon', 'Bad Name: x', 'X-A: a\r\nX-B: 1', 'Content-Length: 5', 'Connection: close', 'X-Latin: \u00e9', 'X-Uni: \u2603', ''),
    queryParam: () => fc.constantFrom('a=1', 'flag', '=x', 'b=%zz', 'c=\u2603', ''),
    watchPath: () => fc.constantFrom('/', '* /fuzz', '+ /fuzz', '- /fuzz/private', '/fuzz/a.txt', 'fuzz', '* fuzz', '/a/../b', '**  /x', ''),
    watchMetadata: () => fc.constantFrom('City=SFO', 'City==*', '*==*', 'k=', '=x', '*', 'Note=a=b', ''),
    logicalOperand: () => fc.constantFrom('AND', 'or', 'XOR', '')
  };
  const formPairs = () => fc.array(fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...Object.keys(fieldValue)).chain((name) => fieldValue[name]().map((v) => [name, v])) },
    { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 20 })) }
  ), { maxLength: 10 });

  /** A request body for form routes: URL-encoded pairs, multipart fields, raw text, JSON, or bytes. */
  const formBody = () => fc.oneof(
    { weight: 4, arbitrary: formPairs().map((pairs) => ({ type: 'application/x-www-form-urlencoded', body: Buffer.from(new URLSearchParams(pairs).toString()) })) },
    { weight: 2, arbitrary: formPairs().map((pairs) => { const m = multipart(pairs.map(([name, value]) => ({ name: name.replace(/["\r\n]/g, '') || 'x', value }))); return { type: m.contentType, body: m.body }; }) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; boundary=', 'application/json', 'text/plain', undefined, 'x'),
      fc.string({ maxLength: 200 })).map(([type, text]) => ({ type, body: Buffer.from(text) })) },
    { weight: 1, arbitrary: fc.tuple(formPairs(), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 5 })).map(([pairs, flips]) => {
      const m = multipart(pairs.map(([name, value]) => ({ name: name.replace(/["\r\n]/g, '') || 'x', value })));
      for (const [at, byte] of flips) m.body[at % m.body.length] = byte;
      return { type: m.contentType, body: m.body };
    }) },
    { weight: 1, arbitrary: fc.constant({ type: undefined, body: undefined }) }
  );

  const queryArb = fc.array(fc.tuple(fc.constantFrom('fuid', 'rrn', 'type', 'collectionId', 'path', 'subscription', 'x'),
    fc.oneof(fc.constantFrom('1', '2', '3', '-1', '0', '999999', '1.5', 'abc', '', '%zz', 'json', 'xml', 'XML', 'pdf', '/fuzz/a.txt', '/', 'fuzz-sub-0001', '9'.repeat(25)), fc.string({ maxLength: 6 }))),
  { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v === '%zz' ? v : encodeURIComponent(v)}`).join('&'));

  const routeArb = () => fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom('POST', 'POST', 'GET', 'DELETE', 'PUT'), idArb, formBody(), fc.option(queryArb, { nil: '' }))
      .map(([method, id, b, q]) => ({ route: 'subscribe', method, urlPath: `/review/api/events/assets/subscribe/${id}${q ? `?${q}` : ''}`, ...b })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE'), queryArb, formBody())
      .map(([method, q, b]) => ({ route: 'export', method, urlPath: `/review/api/asset/export/metadata?${q}`, ...(method === 'POST' ? b : {}) })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('GET', 'GET', 'HEAD', 'POST'), queryArb)
      .map(([method, q]) => ({ route: 'download', method, urlPath: `/review/api/asset/download?${q}` })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('1', '2', '3', '4', '0', 'x', '%zz', '99999999999999999999', ''),
      fc.oneof(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 8 }), fc.constant(null))).map((d) => JSON.stringify(d)),
        fc.string({ maxLength: 50 })))
      .map(([fuid, text]) => ({ route: 'metadata', method: 'PUT', urlPath: `/emulator/assets/${fuid}/metadata`, type: 'application/json', body: Buffer.from(text) })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('GET', 'DELETE', 'POST'), fc.constantFrom('/emulator/assets/', '/emulator/assets', '/emulator/deliveries', '/emulator/jobs/', '/emulator/nope'),
      fc.constantFrom('', '1', '2', '5', 'job-1', 'job-999', '%zz', 'x/y'), queryArb)
      .map(([method, base, tail, q]) => ({ route: 'emulator', method: base === '/emulator/assets/' && tail === '1' && method === 'DELETE' ? 'GET' : method, urlPath: `${base}${tail}?${q}` })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'POST', 'OPTIONS', 'TRACE', 'PATCH'), fc.constantFrom('/', '/review', '/review/api/asset/', '/review/api/events/assets/subscribe', '//review//api//asset//upload', '/%', '/review/api/asset/upload/x'))
      .map(([method, urlPath]) => ({ route: 'other', method, urlPath })) }
  );
  const cookieArb = fc.oneof({ weight: 9, arbitrary: fc.constant(COOKIE) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, 'JSESSIONID=nope', 'local-dev', 'JSESSIONID="local-dev"', 'a=b; JSESSIONID=local-dev', ';;;', 'JSESSIONID=') });

  // ---------------------------------------------------------------- the properties

  it('random requests on every route: JSON answers, never 5xx, the emulator stays up', async function () {
    // Some assets to point at: a few uploads.
    for (let i = 0; i < 3; i++) {
      const m = multipart([{ name: 'destination', value: '/fuzz' }, { name: 'wait', value: 'true' }, { name: 'file', filename: `a${i}.txt`, data: `file ${i}` }]);
      const r = await send({ method: 'POST', urlPath: '/review/api/asset/upload', headers: { Cookie: COOKIE, 'Content-Type': m.contentType }, body: m.body });
      r.status.should.equal(200);
    }
    await fc.assert(fc.asyncProperty(routeArb(), cookieArb, async (req, cookie) => {
      const headers = {};
      if (cookie) headers.Cookie = cookie;
      if (req.type) headers['Content-Type'] = req.type;
      const r = await send({ method: req.method, urlPath: req.urlPath, headers, body: req.body });
      if (req.method === 'HEAD') { tally(req.route, r.status); r.status.should.be.below(500); return; }
      check(req.route, r, `${req.method} ${req.urlPath} ${req.type || ''} ${req.body ? JSON.stringify(req.body.toString('latin1').slice(0, 200)) : ''}`);
    }), { numRuns: RUNS });
  });

  it('multipart upload streams, mutated, split, paused and cut off: JSON answers, never 5xx, nothing left half-stored', async function () {
    const zip = await makeZip({ 'a.txt': 'A', 'd/b.txt': 'B' });
    const bases = [
      multipart([{ name: 'destination', value: '/fuzz/up' }, { name: 'wait', value: 'true' }, { name: 'file', filename: 'z.zip', data: zip }]),
      multipart([{ name: 'file', filename: 'p.txt', data: 'plain text body '.repeat(50) }, { name: 'destination', value: '/fuzz/up' }, { name: 'wait', value: 'false' }]),
      multipart([{ name: 'destinationFuid', value: '2' }, { name: 'name', value: 'n.bin' }, { name: 'collectionId', value: '3' }, { name: 'expandZip', value: 'false' },
        { name: 'file', filename: 'n.bin', data: Buffer.alloc(20000, 7) }, { name: 'waitInMinutes', value: '1' }, { name: 'wait', value: 'true' }])
    ];
    const uploadArb = fc.record({
      which: fc.nat({ max: bases.length - 1 }),
      mutations: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
      truncate: fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
      split: fc.array(fc.integer({ min: 1, max: 4096 }), { maxLength: 6 }),
      pauseMs: fc.constantFrom(0, 0, 0, 1, 5),
      cutAt: fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
      boundary: fc.constantFrom('keep', 'keep', 'keep', 'drop', 'other', 'quoted'),
      cookie: cookieArb
    });
    await fc.assert(fc.asyncProperty(uploadArb, async (u) => {
      const base = bases[u.which];
      let body = Buffer.from(base.body);
      for (const [at, byte] of u.mutations) body[at % body.length] = byte;
      if (u.truncate !== null) body = body.subarray(0, u.truncate % (body.length + 1));
      const boundary = base.contentType.split('boundary=')[1];
      const type = { keep: base.contentType, drop: 'multipart/form-data', other: 'multipart/form-data; boundary=nope', quoted: `multipart/form-data; boundary="${boundary}"` }[u.boundary];
      const headers = { 'Content-Type': type };
      if (u.cookie) headers.Cookie = u.cookie;
      const cutAt = u.cutAt === null ? undefined : u.cutAt % (body.length + 1);
      const r = await send({ method: 'POST', urlPath: '/review/api/asset/upload', headers, body, split: u.split, pauseMs: u.pauseMs, cutAt });
      if (r.status === 'cut') { cutOff++; tally('upload', 'cut'); return; }
      check('upload', r, `upload ${JSON.stringify({ ...u, mutations: u.mutations.length })}`);
    }), { numRuns: RUNS });

    // Background jobs and cut-off uploads settle; then no temporary file is left and uploads work.
    await waitFor('the upload temp folder to empty', () => fs.readdirSync(path.join(dataDir, 'tmp')).length === 0, 30000, 100)
      .catch((err) => { throw new Error(`${err.message}: ${fs.readdirSync(path.join(dataDir, 'tmp')).map((f) => `${f} (${fs.statSync(path.join(dataDir, 'tmp', f)).size} bytes)`).join(', ')}`); });
    const m = multipart([{ name: 'destination', value: '/fuzz' }, { name: 'wait', value: 'true' }, { name: 'file', filename: 'after.txt', data: 'still works' }]);
    const r = await send({ method: 'POST', urlPath: '/review/api/asset/upload', headers: { Cookie: COOKIE, 'Content-Type': m.contentType }, body: m.body });
    r.status.should.equal(200);
    JSON.parse(r.body.toString()).success.should.equal(true);
  });
});
