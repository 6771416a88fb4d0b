'use strict';
// The dam-emulator CLI: options, the listening line, printed cookies, clean shutdown.
require('should');
const fs = require('fs');
const path = require('path');
const { tmpDir, rmDir, spawnCli, runCli, request, uploadFile } = require('./support');
const { parseDuration, parseSession, parseCli } = require('../../dist/emulator/cli');

describe('dam-emulator CLI', function () {
  let dir;
  beforeEach(() => { dir = tmpDir(); });
  afterEach(() => rmDir(dir));

  describe('option parsing', () => {
    it('--retry-delay takes ms, s or m', () => {
      parseDuration('250ms').should.equal(250);
      parseDuration('60s').should.equal(60000);
      parseDuration('1.5s').should.equal(1500);
      parseDuration('2m').should.equal(120000);
      for (const bad of ['60', '1h', 's', '-1s', '1 s x', '']) (() => parseDuration(bad)).should.throw(/ms, s or m/);
    });

    it('--session VALUE:PERMS[:USER]', () => {
      parseSession('local-dev:events,add').should.eql({ value: 'local-dev', permissions: ['events', 'add'] });
      parseSession('viewer:').should.eql({ value: 'viewer', permissions: [] });
      parseSession('ev:events').should.eql({ value: 'ev', permissions: ['events'] });
      parseSession('u:add:alice').should.eql({ value: 'u', permissions: ['add'], user: 'alice' });
      (() => parseSession('nocolon')).should.throw(/VALUE:PERMS/);
      (() => parseSession('x:admin')).should.throw(/unknown permission "admin"/);
      (() => parseSession(':events')).should.throw(/cookie value/);
      (() => parseSession('a;b:events')).should.throw(/cookie value/);
    });

    it('defaults: 127.0.0.1, port 8873, ./.dam-emulator, 60 s, session local-dev with events and add', () => {
      const o = parseCli([]);
      o.should.have.properties({ host: '127.0.0.1', port: 8873, retryDelayMs: 60000, dataDir: path.resolve('.dam-emulator') });
      o.sessions.should.eql([{ value: 'local-dev', permissions: ['events', 'add'] }]);
      parseCli(['--session', 'a:events', '--session', 'b:']).sessions.map(s => s.value).should.eql(['a', 'b']);
      (() => parseCli(['--port', '70000'])).should.throw(/--port/);
      (() => parseCli(['--port', 'abc'])).should.throw(/--port/);
      (() => parseCli(['--bogus'])).should.throw();
      o.ingestDelayMs.should.equal(0);
      parseCli(['--ingest-delay', '2s']).ingestDelayMs.should.equal(2000);
      (() => parseCli(['--ingest-delay', '2'])).should.throw(/--ingest-delay must be a number followed by ms, s or m/);
    });

    it('a bad option exits with code 2 and a usage message', async () => {
      for (const args of [['--retry-delay', '10'], ['--session', 'x:root'], ['--port', '-1'], ['--nope']]) {
        const r = await runCli(args);
        r.code.should.equal(2, args.join(' '));
        r.stderr.should.match(/usage: dam-emulator/);
      }
    });

    it('--help prints the usage and exits 0', async () => {
      const r = await runCli(['--help']);
      r.code.should.equal(0);
      r.stdout.should.match(/--retry-delay/);
    });
  });

  describe('running', () => {
    it('a start refused for a bad option leaves nothing listening', async () => {
      const net = require('net');
      const { startEmulator } = require('../../dist/emulator');
      const probe = net.createServer();
      await new Promise(resolve => probe.listen(0, '127.0.0.1', resolve));
      const port = probe.address().port;
      await new Promise(resolve => probe.close(resolve));
      await startEmulator({ port, dataDir: dir, maxZipRatio: -1 }).should.be.rejected();
      const refused = await new Promise(resolve => {
        const socket = net.connect(port, '127.0.0.1', () => { socket.destroy(); resolve(false); });
        socket.on('error', (e) => resolve(e.code === 'ECONNREFUSED'));
      });
      refused.should.be.true('something still listens on the port');
    });

    it('a second emulator on a port in use says so, naming --port, and touches no data (it failed after re-publishing the running one\'s changes)', async () => {
      const first = await spawnCli(['--port', '0', '--data', dir]);
      try {
        const port = new URL(first.url).port;
        const untouched = path.join(dir, 'second');
        const r = await runCli(['--port', port, '--data', untouched]);
        r.code.should.equal(1);
        r.stderr.should.match(new RegExp(`port ${port} .*in use`));
        r.stderr.should.match(/--port/);
        r.stdout.should.not.match(/re-published/);
        fs.existsSync(untouched).should.be.false();
      } finally {
        first.child.kill('SIGTERM');
        await first.exited;
      }
    });

    it('prints the listening line and the cookies, serves the sessions given, and exits 0 on SIGTERM', async () => {
      const cli = await spawnCli(['--port', '0', '--data', dir, '--retry-delay', '5s', '--session', 'local-dev:events,add', '--session', 'viewer:']);
      try {
        const lines = cli.stdout().split('\n');
        lines[0].should.match(/^dam-emulator listening on http:\/\/127\.0\.0\.1:\d+$/);
        cli.stdout().should.containEql('JSESSIONID=local-dev (permissions: events, add)');
        cli.stdout().should.containEql('JSESSIONID=viewer (permissions: none)');
        (await uploadFile(cli.url, '/cli', 'a.txt', 'x')).json.success.should.equal(true);
        (await uploadFile(cli.url, '/cli', 'b.txt', 'x', {}, { cookie: 'JSESSIONID=viewer' })).json.error.should.equal('permission denied for adding files');
        (await request(cli.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=other' })).status.should.equal(401);
      } finally {
        cli.child.kill('SIGTERM');
      }
      const { code } = await cli.exited;
      code.should.equal(0);
      fs.existsSync(path.join(dir, 'repository.jsonl')).should.be.true();
      // cookie values appear only in the start-up lines, never in the request log
      cli.stdout().split('\n').filter(l => /JSESSIONID|local-dev|viewer/.test(l)).every(l => l.startsWith('cookie: ')).should.be.true();
    });

    it('SIGINT shuts down cleanly too, and a restart on the same --data keeps the assets', async () => {
      let cli = await spawnCli(['--port', '0', '--data', dir]);
      const fuid = (await uploadFile(cli.url, '/keep', 'k.txt', 'kept')).json.data.fuids[0];
      cli.child.kill('SIGINT');
      (await cli.exited).code.should.equal(0);
      cli = await spawnCli(['--port', '0', '--data', dir, '--quiet']);
      try {
        (await request(cli.url, 'GET', `/review/api/asset/download?fuid=${fuid}`)).text.should.equal('kept');
        cli.stdout().should.not.match(/GET \/review/);
      } finally {
        cli.child.kill('SIGTERM');
        await cli.exited;
      }
    });
  });
});
