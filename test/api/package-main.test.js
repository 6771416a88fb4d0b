'use strict';
// The package main (dist/index.js) gives the client without loading the emulator: its modules and
// parsers (busboy, yauzl) are loaded by the first startEmulator() call. Checked in a fresh Node
// process, as this one has loaded them already.
require('should');
const { execFile } = require('child_process');
const path = require('path');
const { promisify } = require('util');

const MAIN = path.resolve(__dirname, '..', '..', 'dist', 'index.js');

const SCRIPT = `
const os = require('os');
const path = require('path');
const fs = require('fs');
const loaded = () => Object.keys(require.cache).filter((file) => /[\\\\/](busboy|yauzl)[\\\\/]|[\\\\/]dist[\\\\/]emulator[\\\\/]/.test(file));
const main = require(process.argv[1]);
const report = { client: typeof main.AssetClient, afterRequire: loaded() };
(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-main-test-'));
  const emulator = await main.startEmulator({ port: 0, dataDir });
  report.afterStart = loaded();
  await emulator.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(report));
})().catch((err) => { console.error(err); process.exit(1); });
`;

describe('package main', () => {
  it('requiring it gives the client without loading the emulator\'s modules (busboy, yauzl); startEmulator loads them', async function () {
    this.timeout(30000);
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', SCRIPT, MAIN]);
    const report = JSON.parse(stdout);
    report.client.should.equal('function');
    report.afterRequire.should.eql([]);
    report.afterStart.some((file) => /[\\/]busboy[\\/]/.test(file)).should.be.true();
    report.afterStart.some((file) => /[\\/]yauzl[\\/]/.test(file)).should.be.true();
  });
});
