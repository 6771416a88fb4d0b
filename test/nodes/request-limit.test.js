'use strict';
// Bounded work: a node runs at most "Parallel requests" messages at once, queues the rest in
// arrival order with the queue in its status, and on close aborts what runs and fails every
// queued message with done(err).
require('should');
const http = require('http');
const { PassThrough } = require('stream');
const s = require('./nodes-support');
const { helper } = s;

/** Resolves when the node under test shows a status with exactly `text`. */
function statusShown(node, text, ms = 10000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`status "${text}" not shown within ${ms} ms`)), ms);
    const onStatus = call => {
      if (call.args[0] && call.args[0].text === text) { clearTimeout(timer); node.removeListener('call:status', onStatus); resolve(); }
    };
    node.on('call:status', onStatus);
  });
}

describe('request limit and queue (asset-upload)', function () {
  let emulator;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  const base = { destination: '/queue', destinationType: 'str', wait: 'true', waitType: 'bool' };

  it('runs two at once by default, queues the rest in arrival order and shows "2 running, 3 queued"', async function () {
    await s.load(s.flow('asset-upload', base, { baseUrl: emulator.url }));
    const n1 = helper.getNode('n1');
    const streams = Array.from({ length: 5 }, () => new PassThrough());
    const queued = statusShown(n1, '2 running, 3 queued');
    streams.forEach((payload, i) => n1.receive({ payload, name: `q${i}.txt`, seq: i }));
    await queued;
    // The queued messages' payloads are not touched until their turn.
    streams.slice(2).forEach(st => (st.readableFlowing === null).should.be.true());

    const order = [];
    const out = helper.getNode('out');
    const allDone = new Promise(resolve => out.on('input', msg => { order.push(msg.seq); if (order.length === 5) resolve(); }));
    const next = statusShown(n1, '2 running, 2 queued');
    streams[0].end('zero');
    await next;
    // Then the rest, one after another: each starts when a running one ends.
    for (let i = 1; i < 5; i++) streams[i].end(`number ${i}`);
    await allDone;
    order.slice(0, 1).should.eql([0]);
    order.slice().sort().should.eql([0, 1, 2, 3, 4]);
  });

  it('honours the editor setting (Parallel 1): one at a time', async function () {
    await s.load(s.flow('asset-upload', { ...base, maxInFlight: '1' }, { baseUrl: emulator.url }));
    const n1 = helper.getNode('n1');
    const streams = [new PassThrough(), new PassThrough()];
    const queued = statusShown(n1, '1 running, 1 queued');
    streams.forEach((payload, i) => n1.receive({ payload, name: `one${i}.txt` }));
    await queued;
    (streams[1].readableFlowing === null).should.be.true();
    streams.forEach(st => st.end('x'));
  });

  it('on close: aborts the running ones and fails every message, queued or running, with done(err) naming it', async function () {
    await s.load(s.flow('asset-upload', base, { baseUrl: emulator.url }));
    const n1 = helper.getNode('n1');
    const streams = Array.from({ length: 5 }, () => new PassThrough());
    const queued = statusShown(n1, '2 running, 3 queued');
    streams.forEach((payload, i) => n1.receive({ payload, name: `closing${i}.txt`, seq: i }));
    await queued;
    // The helper stops spying on logs before it closes the nodes: record here. done(err) calls node.error(err, msg).
    const errors = [];
    const warnings = [];
    n1.error = (err, msg) => errors.push({ err, msg });
    n1.warn = text => warnings.push(text);
    let outputs = 0;
    helper.getNode('out').on('input', () => { outputs++; });

    const started = Date.now();
    await helper.unload();
    (Date.now() - started).should.be.below(5000);
    outputs.should.equal(0);
    // The queued ones at once, the running ones once their abort settled: every one in
    // done(err) naming it (issue 23 #2), so that a Catch node that still runs can send it again.
    errors.map(e => e.msg.seq).should.eql([2, 3, 4, 0, 1]);
    for (const { err, msg } of errors) {
      err.should.be.a.String(); // the whole message, as core nodes report errors
      err.should.startWith(`msg.name "closing${msg.seq}.txt": `);
      err.should.match(msg.seq >= 2 ? /dropped: the node closed before this message's turn/ : /aborted: the node closed .* send it again/);
      msg.assetError.kind.should.equal('aborted');
    }
    warnings.should.eql([
      'dropped 3 queued message(s) on close: msg.name "closing2.txt", msg.name "closing3.txt", msg.name "closing4.txt"',
      'aborted 2 request(s) in flight on close: msg.name "closing0.txt", msg.name "closing1.txt"'
    ]);
  });

  it('refuses a bad editor value with a warning and uses the default', async function () {
    await s.load(s.flow('asset-upload', { ...base, maxInFlight: '0' }, { baseUrl: emulator.url }));
    const warned = helper.log().args.map(a => JSON.stringify(a)).join('\n');
    warned.should.match(/Parallel requests must be a whole number from 1 to 32; using 2/);
  });

  describe('asset-upload with both destination and destinationFuid', function () {

    it('says once that the server uses destination (spec 4.2), and the file lands there', async function () {
      await s.load(s.flow('asset-upload', {
        destination: '/both-dest', destinationType: 'str', destinationFuid: '1', destinationFuidType: 'num', wait: 'true', waitType: 'bool'
      }, { baseUrl: emulator.url }));
      const n1 = helper.getNode('n1');
      const warnings = [];
      n1.on('call:warn', call => warnings.push(call.args[0]));
      const msg = await s.run({ payload: 'x', name: 'both.txt' });
      await s.run({ payload: 'y', name: 'both2.txt' });
      warnings.length.should.equal(1);
      warnings[0].should.match(/server uses Destination/);
      const record = await s.emulatorGet(`${emulator.url}/emulator/assets/${msg.fuid}`);
      JSON.stringify(record.body).should.containEql('/both-dest/both.txt');
    });
  });
});

describe('a failure that settles during the close (asset-session log in now)', function () {
  this.timeout(20000);
  const sessionNode = require('../../nodes/asset-session.js');
  let server;
  let held; // the login request the server holds: { res }
  let arrived;

  before(async function () {
    await helper.startServer();
    let arrive;
    arrived = new Promise(resolve => { arrive = resolve; });
    // A DAM server whose login hangs until the test answers it.
    server = http.createServer((req, res) => { held = { res }; arrive(); });
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  });
  after(async function () {
    server.closeAllConnections();
    await new Promise(resolve => server.close(resolve));
    await helper.stopServer();
  });

  it('an answer that is not the close\'s abort (here: the login refused with HTTP 500) still ends in done(err)', async function () {
    const url = `http://127.0.0.1:${server.address().port}`;
    await helper.load([...Object.values(s.nodes), sessionNode], s.flow('asset-session', { action: 'login' },
      { baseUrl: url, loginEnabled: true, loginPreset: 'custom', loginUrl: '/login', loginMethod: 'POST', loginFieldsIn: 'form',
        loginFields: 'user={{username}}\npass={{password}}', sessionFrom: 'set-cookie', sessionName: 'JSESSIONID', cookieName: 'JSESSIONID' }),
    { server: { username: 'robot', password: 'Close-Pass-41c2' } });
    const n1 = helper.getNode('n1');
    n1.receive({ payload: 'log in', seq: 7 });
    await arrived;
    // The helper stops spying on logs before it closes the nodes: record here.
    const errors = [];
    let closeBegan;
    const began = new Promise(resolve => { closeBegan = resolve; });
    n1.error = (err, msg) => errors.push({ err, msg });
    n1.warn = text => { if (/aborted 1 request/.test(text)) closeBegan(); };
    const unloaded = helper.unload();
    await began; // the close has begun and aborted what runs; the login does not take an abort
    held.res.writeHead(500, { 'Content-Type': 'text/plain' }).end('login service down');
    await unloaded;
    errors.length.should.equal(1, 'the failure reached done(err)');
    errors[0].msg.seq.should.equal(7);
    errors[0].err.should.match(/login failed/);
    errors[0].msg.assetError.kind.should.equal('auth');
  });
});
