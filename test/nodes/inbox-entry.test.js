'use strict';
// What asset-event-in's at-least-once delivery stores of a callback entry (src/nodes/asset-event-in/delivery.ts).
require('should');
const { inboxEntry } = require('../../dist/nodes/asset-event-in/delivery');

describe('asset-event-in delivery: the inbox entry of a callback entry', function () {
  it('an entry with an asset id is ordered by it and carries its revision (rrn as a number or digits)', function () {
    inboxEntry({ assetId: 7, rrn: 12, action: 'added' }, 'sub-00001', 't').should.containEql({ key: 'asset:7', revision: 12, subscriptionId: 'sub-00001' });
    inboxEntry({ assetId: '7', rrn: '13' }, undefined, 't').should.containEql({ key: 'asset:7', revision: 13 });
  });

  it('an entry without an asset id has a key of its own and no revision (the inbox would keep one number per such entry for ever)', function () {
    const a = inboxEntry({ rrn: 5 }, undefined, 't');
    const b = inboxEntry({ rrn: 5 }, undefined, 't');
    a.key.should.not.equal(b.key);
    a.should.not.have.property('revision');
    b.should.not.have.property('revision');
  });
});
