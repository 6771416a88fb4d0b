'use strict';
// The README is what the package page (npm, the Node-RED flow library) shows, from the tarball.
// Issue 23 #11: its images (docs/images) are not in the tarball, so relative links would break
// there: they are absolute URLs to the repository's raw files, each of an image that exists here.
// And every example of examples/ is listed in the README and in docs/demo.md.
const fs = require('fs');
const path = require('path');
require('should');

const ROOT = path.join(__dirname, '..', '..');
const RAW = 'https://raw.githubusercontent.com/dam-assets/node-red/main/';
const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');

describe('README and docs for the package page', () => {
  it('the repository URL of package.json is the one the README images point at', () => {
    require('../../package.json').repository.url.should.equal('https://github.com/dam-assets/node-red.git');
  });

  it('every README image is an absolute URL of a raw file of the repository that exists in docs/images', () => {
    const images = [...read('README.md').matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    images.length.should.be.aboveOrEqual(1);
    for (const url of images) {
      url.should.startWith(RAW, `${url}: a relative image is broken on the package page (docs/ is not shipped)`);
      const file = url.slice(RAW.length);
      file.should.startWith('docs/images/');
      fs.existsSync(path.join(ROOT, file)).should.be.true(`${file} does not exist`);
    }
  });

  it('README and docs/demo.md list every example', () => {
    const examples = fs.readdirSync(path.join(ROOT, 'examples')).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
    for (const doc of ['README.md', 'docs/demo.md']) {
      const text = read(doc);
      for (const name of examples) text.includes(`| ${name} |`).should.be.true(`${doc} does not list ${name}`);
    }
  });

  it('the first screen of the README says how to try it (npm start) before the install details', () => {
    const text = read('README.md');
    text.indexOf('npm start').should.be.within(0, text.indexOf('## Install'));
  });
});
