'use strict';
// What asset-event-in's at-least-once delivery stores of a callback entry (src/nodes/asset-event-in/delivery.ts).
require('should');
const { inboxEntry } = require('../../dist/nodes/asset-event-in/delivery');
const { orderKey, keyText, readKey, isAssetKey } = require('../../dist/events/inbox');

describe('asset-event-in delivery: the inbox entry of a callback entry', function () {
  it('an entry with an asset id is ordered by it and carries its revision (rrn as a number or digits)', function () {
    inboxEntry({ assetId: 7, rrn: 12, action: 'added' }, 'sub-00001', 't').should.containEql({ key: 7, revision: 12, subscriptionId: 'sub-00001' });
    inboxEntry({ assetId: '7', rrn: '13' }, undefined, 't').should.containEql({ key: 7, revision: 13 });
    inboxEntry({ assetId: 'a7', rrn: 14 }, undefined, 't').should.containEql({ key: 'asset:a7', revision: 14 });
  });

  it('an rrn beyond 2^53 (kept exact as digits in the entry) is compared as the nearest number: a newer one never counts as older', function () {
    const revision = (rrn) => inboxEntry({ assetId: 7, rrn }, undefined, 't').revision;
    revision('9007199254740993').should.equal(9007199254740992);
    revision('9223372036854775807').should.equal(2 ** 63);
    (revision('9007199254740993') < revision('9007199254741001')).should.be.true('older than newer');
    const rrns = ['9007199254740993', '9007199254740994', '9007199254740995', '9007199254741001', '18014398509481985', '9223372036854775807'];
    for (let i = 1; i < rrns.length; i++) (revision(rrns[i]) < revision(rrns[i - 1])).should.be.false(`${rrns[i]} is not older than ${rrns[i - 1]}`);
    inboxEntry({ assetId: 7, rrn: '12a' }, undefined, 't').should.not.have.property('revision');
    inboxEntry({ assetId: 7, rrn: '' }, undefined, 't').should.not.have.property('revision');
  });

  it('keys: a whole-number asset id is its number, any other asset:<id>; the text form reads back to the same key', function () {
    for (const [assetId, key] of [[7, 7], ['7', 7], [-3, -3], [0, 0], ['007', 'asset:007'], [1.5, 'asset:1.5'], ['1.5', 'asset:1.5'],
      [2 ** 53, 'asset:9007199254740992'], ['9007199254740993', 'asset:9007199254740993'], ['x', 'asset:x'], ['', 'asset:']]) {
      const k = orderKey(assetId);
      k.should.equal(key, `assetId ${JSON.stringify(assetId)}`);
      readKey(keyText(k)).should.equal(k, `key ${JSON.stringify(k)} through its text`);
      isAssetKey(k).should.be.true();
    }
    keyText(7).should.equal('asset:7');
    readKey('asset:7').should.equal(7);
    orderKey(undefined).should.startWith('none:');
    isAssetKey(orderKey(null)).should.be.false();
    readKey('none:ab').should.equal('none:ab');
  });

  it('an entry without an asset id has a key of its own and no revision (the inbox would keep one number per such entry for ever)', function () {
    const a = inboxEntry({ rrn: 5 }, undefined, 't');
    const b = inboxEntry({ rrn: 5 }, undefined, 't');
    a.key.should.not.equal(b.key);
    a.should.not.have.property('revision');
    b.should.not.have.property('revision');
  });
});
