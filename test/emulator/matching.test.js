'use strict';
// Table tests of the emulator's change matching: watchPath forms (spec 4.1 rules 9, 10), watchMetadata
// syntaxes (rule 8), logicalOperand (rule 11) and the narrowing of metadata matching by watchPath.
require('should');
const {
  parseWatchPath, parseWatchMetadata, buildMatcher, changeMatches, pathInScope
} = require('../../dist/emulator/matching');

function matcher(watchPath, watchMetadata = [], operand = 'OR') {
  const paths = watchPath.map(p => { const r = parseWatchPath(p); if (!r.ok) throw new Error(r.error); return r.value; });
  const conds = watchMetadata.map(m => { const r = parseWatchMetadata(m); if (!r.ok) throw new Error(r.error); return r.value; });
  return buildMatcher(paths, conds, operand);
}

function change(p, extra = {}) {
  return { rrn: 1, fuid: 1, path: p, owner: 'u', action: 'modified', metadata: {}, changedMetadataKeys: [], ...extra };
}

describe('emulator matching: watchPath', function () {
  describe('parsing', function () {
    const good = [
      ['/', 'tree', []],
      ['* /inbox', 'tree', ['inbox']],
      ['+ /inbox', 'children', ['inbox']],
      ['- /inbox/tmp', 'exclude', ['inbox', 'tmp']],
      ['/inbox/a.jpg', 'tree', ['inbox', 'a.jpg']],
      ['* /inbox/', 'tree', ['inbox']],
      ['* //inbox//sub/', 'tree', ['inbox', 'sub']],
      ['* /', 'tree', []]
    ];
    for (const [raw, kind, segments] of good) {
      it(`accepts "${raw}" as ${kind} ${JSON.stringify(segments)}`, function () {
        const r = parseWatchPath(raw);
        r.should.eql({ ok: true, value: { kind, segments } });
      });
    }
    const bad = ['inbox', '*/inbox', '*  /inbox', '# /inbox', '* inbox', '/inbox/../etc', '/a/./b', '/a\nb', ''];
    for (const raw of bad) {
      it(`rejects ${JSON.stringify(raw)} with an error naming watchPath`, function () {
        const r = parseWatchPath(raw);
        r.ok.should.be.false();
        r.error.should.match(/^watchPath /);
      });
    }
  });

  describe('scope', function () {
    // [watchPath values, path, expected]
    const table = [
      [['/'], '/a.jpg', true],
      [['/'], '/deep/down/a.jpg', true],
      [['* /inbox'], '/inbox/a.jpg', true],
      [['* /inbox'], '/inbox/sub/deeper/a.jpg', true],
      [['* /inbox'], '/inbox2/a.jpg', false],
      [['* /inbox'], '/other/inbox/a.jpg', false],
      [['* /inbox'], '/inbox', true],
      [['* /inbox/'], '/inbox/a.jpg', true],
      [['+ /inbox'], '/inbox/a.jpg', true],
      [['+ /inbox'], '/inbox/sub/a.jpg', false],
      [['+ /inbox'], '/inbox2/a.jpg', false],
      [['+ /'], '/a.jpg', true],
      [['+ /'], '/inbox/a.jpg', false],
      [['/inbox/a.jpg'], '/inbox/a.jpg', true],
      [['/inbox/a.jpg'], '/inbox/b.jpg', false],
      [['/inbox/a.jpg'], '/inbox/a.jpg2', false],
      [['/inbox'], '/inbox/sub/a.jpg', true], // a bare folder path watches like "* /dir"
      [['* /inbox', '* /outbox'], '/outbox/a.jpg', true], // several values: OR (rule 10)
      [['* /inbox', '* /outbox'], '/archive/a.jpg', false],
      [['* /inbox', '- /inbox/tmp'], '/inbox/a.jpg', true],
      [['* /inbox', '- /inbox/tmp'], '/inbox/tmp/a.jpg', false],
      [['* /inbox', '- /inbox/tmp'], '/inbox/tmp/x/a.jpg', false],
      [['* /inbox', '- /inbox/tmp'], '/inbox/tmp2/a.jpg', true],
      [['- /inbox/tmp', '* /inbox'], '/inbox/tmp/a.jpg', false], // exclusion wins whatever the order
      [['- /private'], '/public/a.jpg', true], // only exclusions: everything else is watched
      [['- /private'], '/private/a.jpg', false],
      [['/', '- /'], '/a.jpg', false]
    ];
    for (const [watch, p, expected] of table) {
      it(`${JSON.stringify(watch)} ${expected ? 'covers' : 'does not cover'} ${p}`, function () {
        pathInScope(matcher(watch), p).should.equal(expected);
        changeMatches(matcher(watch), change(p)).should.equal(expected);
      });
    }

    it('matches every action (added, modified, deleted) in scope without watchMetadata', function () {
      for (const action of ['added', 'modified', 'deleted']) {
        changeMatches(matcher(['* /inbox']), change('/inbox/a.jpg', { action })).should.be.true();
      }
    });
  });
});

describe('emulator matching: watchMetadata', function () {
  describe('parsing', function () {
    const good = [
      ['City=SFO', 'City', 'SFO'],
      ['City==SFO', 'City', 'SFO'],
      ['City==*', 'City', '*'],
      ['City=*', 'City', '*'],
      ['*==*', '*', '*'],
      ['*=*', '*', '*'],
      ['Note=a=b', 'Note', 'a=b'],
      ['Note==a==b', 'Note', 'a==b'],
      ['City=', 'City', '']
    ];
    for (const [raw, key, value] of good) {
      it(`parses "${raw}" as key ${key}, value ${JSON.stringify(value)}`, function () {
        parseWatchMetadata(raw).should.eql({ ok: true, value: { key, value } });
      });
    }
    for (const raw of ['City', '=SFO', '==SFO', ' =x']) {
      it(`rejects "${raw}" with an error naming watchMetadata`, function () {
        const r = parseWatchMetadata(raw);
        r.ok.should.be.false();
        r.error.should.match(/^watchMetadata /);
      });
    }
  });

  describe('conditions', function () {
    const sfo = change('/inbox/a.jpg', { metadata: { City: 'SFO', Status: 'new' }, changedMetadataKeys: ['City'] });
    const nyc = change('/inbox/a.jpg', { metadata: { City: 'NYC', Status: 'new' }, changedMetadataKeys: ['City'] });
    const statusOnly = change('/inbox/a.jpg', { metadata: { City: 'SFO', Status: 'done' }, changedMetadataKeys: ['Status'] });
    const both = change('/inbox/a.jpg', { metadata: { City: 'SFO', Status: 'done' }, changedMetadataKeys: ['City', 'Status'] });
    const contentOnly = change('/inbox/a.jpg', { metadata: { City: 'SFO' }, changedMetadataKeys: [] });
    const outside = change('/outbox/a.jpg', { metadata: { City: 'SFO' }, changedMetadataKeys: ['City'] });

    // [watchMetadata, operand, watchPath, change, expected, why]
    const table = [
      [['City=SFO'], 'OR', ['/'], sfo, true, 'Key=Value: key set to that value'],
      [['City==SFO'], 'OR', ['/'], sfo, true, 'Key==Value means the same'],
      [['City=SFO'], 'OR', ['/'], nyc, false, 'other value'],
      [['City=SFO'], 'OR', ['/'], statusOnly, false, 'City unchanged though its value is SFO'],
      [['City==*'], 'OR', ['/'], nyc, true, 'Key==*: key set to anything'],
      [['City=*'], 'OR', ['/'], sfo, true, 'Key=*: key set to anything'],
      [['City=*'], 'OR', ['/'], statusOnly, false, 'Key=*: another key set'],
      [['*==*'], 'OR', ['/'], statusOnly, true, '*==*: any metadata change'],
      [['*==*'], 'OR', ['/'], contentOnly, false, '*==*: a content-only change is no metadata change'],
      [['City=SFO'], 'OR', ['/'], contentOnly, false, 'content-only change never fires a metadata watch'],
      [['*=done'], 'OR', ['/'], statusOnly, true, '*=Value: any key set to that value'],
      [['city=SFO'], 'OR', ['/'], sfo, false, 'keys are case-sensitive'],
      [['City=SFO', 'Status=done'], 'OR', ['/'], statusOnly, true, 'OR: one condition is enough'],
      [['City=SFO', 'Status=done'], 'OR', ['/'], nyc, false, 'OR: none holds'],
      [['City=SFO', 'Status=done'], 'AND', ['/'], statusOnly, false, 'AND: City not set by this change'],
      [['City=SFO', 'Status=done'], 'AND', ['/'], both, true, 'AND: both set by this change'],
      [['City=SFO', 'Status==*'], 'AND', ['/'], both, true, 'AND with a wildcard value'],
      [['City=SFO'], 'OR', ['* /inbox'], sfo, true, 'watchPath narrows: in scope'],
      [['City=SFO'], 'OR', ['* /inbox'], outside, false, 'watchPath narrows: out of scope (rule 10)'],
      [['*==*'], 'OR', ['* /inbox', '- /inbox'], sfo, false, 'excluded subtree']
    ];
    for (const [conds, operand, watch, c, expected, why] of table) {
      it(`${JSON.stringify(conds)} ${operand} ${JSON.stringify(watch)}: ${expected} (${why})`, function () {
        changeMatches(matcher(watch, conds, operand), c).should.equal(expected);
      });
    }
  });
});
