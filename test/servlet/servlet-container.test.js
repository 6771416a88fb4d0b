'use strict';
// The API client against a real servlet container: Debian's Tomcat 10 (embedded, default
// settings, context path /review) running DamServletServer.java, whose servlets answer with
// what the CONTAINER parsed: request.getParameterValues, request.getParts, its own sessions.
// The real asset server is a servlet application, so this is how it reads our requests.
require('should');
const crypto = require('crypto');
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
const { AssetClient } = require('../../dist/api/client');
const { startTomcat, login, logout } = require('./tomcat');

const BIG_RRN = '9007199254740993'; // 2^53 + 1: a double would make it ...992

async function failureOf(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

describe('API client against a real servlet container (Tomcat 10)', function () {
  this.timeout(60000);
  let tomcat;
  let cookie;
  let client;
  let work;

  before(async function () {
    this.timeout(240000);
    tomcat = await startTomcat();
    cookie = await login(tomcat.url);
    client = new AssetClient({ baseUrl: tomcat.url, cookie });
    work = await fsp.mkdtemp(path.join(os.tmpdir(), 'dam-servlet-test-'));
  });

  after(async function () {
    this.timeout(30000);
    client?.close();
    if (tomcat) await tomcat.stop();
    if (work) await fsp.rm(work, { recursive: true, force: true });
  });

  it('subscribe: the container reads every field as sent, UTF-8 included, repeated fields in order', async () => {
    const fields = {
      callback: 'http://127.0.0.1:1880/dam/Überweisungen?ort=São-Paulo',
      method: 'POST',
      successCode: 202,
      retryCount: 5,
      requestType: 'auto',
      logicalOperand: 'AND',
      header: ['X-Ort: Zürich', 'X-Kunde: Müller & Söhne', 'X-Ort: Genève'],
      queryParam: ['stadt=São Paulo', 'q=a+b&c', 'leer'],
      watchPath: ['* /inbox/Überweisungen', '/archiv/Zürich/Bericht 2026.pdf', '+ /Ünïcödé/日本'],
      watchMetadata: ['City==São Paulo', 'Kunde=Müller', '*==*']
    };
    const answer = await client.registerSubscription('servlet-utf8-0001', fields);
    answer.characterEncoding.should.equal('UTF-8');
    answer.received.should.eql({
      callback: [fields.callback],
      method: ['POST'],
      successCode: ['202'],
      retryCount: ['5'],
      requestType: ['auto'],
      logicalOperand: ['AND'],
      header: fields.header,
      queryParam: fields.queryParam,
      watchPath: fields.watchPath,
      watchMetadata: fields.watchMetadata
    });
  });

  it('upload: the container reads the text fields and the file name as sent, UTF-8 included', async () => {
    const content = Buffer.from('Grüße aus Zürich\n');
    const name = 'Bericht "Zürich" São Paulo.txt';
    const outcome = await client.upload({
      file: { buffer: content },
      name,
      destination: '/inbox/Überweisungen',
      collectionId: 7,
      wait: true,
      waitInMinutes: 1.5,
      expandZip: false
    });
    const answer = outcome.result;
    answer.characterEncoding.should.equal('UTF-8');
    answer.received.should.eql({
      name: [name],
      destination: ['/inbox/Überweisungen'],
      collectionId: ['7'],
      wait: ['true'],
      waitInMinutes: ['1.5'],
      expandZip: ['false']
    });
    answer.files.should.have.length(1);
    answer.files[0].should.containEql({
      field: 'file', filename: name, length: content.length,
      sha256: crypto.createHash('sha256').update(content).digest('hex')
    });
  });

  it('upload from disk: the container gets the file\'s own UTF-8 name', async () => {
    const file = path.join(work, 'Überweisung São Paulo.txt');
    await fsp.writeFile(file, 'Zürich');
    const outcome = await client.upload({ file: { path: file }, destinationFuid: 0 });
    outcome.result.files[0].filename.should.equal('Überweisung São Paulo.txt');
    outcome.result.received.should.eql({ destinationFuid: ['0'] });
  });

  it('upload of a stream of unknown length (sent chunked): the container reads it whole', async () => {
    const { Readable } = require('stream');
    const parts = [Buffer.from('Grüße '), Buffer.alloc(300 * 1024, 0x61), Buffer.from(' aus Zürich')];
    const outcome = await client.upload({ file: { stream: Readable.from(parts) }, name: 'Grüße.txt', destination: '/inbox/Zürich' });
    const whole = Buffer.concat(parts);
    outcome.result.received.should.eql({ name: ['Grüße.txt'], destination: ['/inbox/Zürich'] });
    outcome.result.files[0].should.containEql({
      filename: 'Grüße.txt', length: whole.length, sha256: crypto.createHash('sha256').update(whole).digest('hex')
    });
  });

  it('keeps an rrn above 2^53 exact: in the upload answer, sent as a parameter and read back', async () => {
    const outcome = await client.upload({ file: { buffer: Buffer.from('x') }, name: 'x.txt', destination: '/inbox' });
    outcome.rrn.should.equal(BIG_RRN);
    const exported = await client.exportMetadata({ fuid: 4711, rrn: BIG_RRN });
    exported.data.rrn.should.equal(BIG_RRN); // the container parsed the parameter; its JSON echo is a number
    exported.data.revision.should.equal(BIG_RRN);
    // type is the spec's "requirement unknown" field: sent only when given
    exported.data.parameterNames.should.eql(['fuid', 'rrn']);
    (await client.exportMetadata({ fuid: 4711, rrn: -1, type: 'xml' })).data.type.should.equal('xml');
  });

  it('download: the UTF-8 file name of filename* wins over the ASCII fallback', async () => {
    const got = await client.downloadToBuffer({ fuid: 4711, rrn: BIG_RRN });
    got.filename.should.equal('Überweisungen São Paulo.txt');
    got.data.toString('utf8').should.equal(`fuid=4711 rrn=${BIG_RRN} Zürich\n`);
  });

  it('streams a 64 MiB upload; the container receives every byte (sha256 computed on the server)', async function () {
    this.timeout(180000);
    const size = 64 * 1024 * 1024;
    const file = path.join(work, 'big.bin');
    const hash = crypto.createHash('sha256');
    const out = fs.createWriteStream(file);
    const block = crypto.randomBytes(1024 * 1024);
    for (let i = 0; i < size / block.length; i++) {
      block[0] = i; // no two blocks alike
      hash.update(block);
      if (!out.write(block)) await new Promise((resolve) => out.once('drain', resolve));
    }
    await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
    const progress = [];
    const outcome = await client.upload({ file: { path: file }, destination: '/big', onProgress: (p) => progress.push(p.bytes) });
    outcome.result.files[0].should.containEql({ filename: 'big.bin', length: size, sha256: hash.digest('hex') });
    outcome.result.length.should.equal(size);
    progress[progress.length - 1].should.equal(size);
    progress.filter((bytes) => bytes < size).length.should.be.above(0, 'progress while the file was on its way');
  });

  it('uses the container\'s session: works while it lives, an auth error once it is invalidated', async () => {
    const own = await login(tomcat.url, 'second-user');
    const session = new AssetClient({ baseUrl: tomcat.url, cookie: own });
    // the bare value works too (sent as JSESSIONID=value)
    const bare = new AssetClient({ baseUrl: tomcat.url, cookie: own.slice('JSESSIONID='.length) });
    try {
      (await session.getSubscription('servlet-session-1')).success.should.be.true();
      (await bare.getSubscription('servlet-session-1')).success.should.be.true();
      (await logout(tomcat.url, own)).invalidated.should.be.true();
      const err = await failureOf(session.getSubscription('servlet-session-1'));
      err.should.have.properties({ kind: 'auth', status: 401 });
      err.message.should.not.containEql(own.slice('JSESSIONID='.length));
      (await failureOf(bare.upload({ file: { buffer: Buffer.from('x') }, name: 'x.txt', destination: '/inbox' }))).kind.should.equal('auth');
      // the other session is untouched
      (await client.getSubscription('servlet-session-1')).success.should.be.true();
    } finally {
      session.close();
      bare.close();
    }
  });
});
