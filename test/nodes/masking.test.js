'use strict';
// The callback URL as asset-subscribe `get` and the DAM sidebar show it (issue 22 item 5): no part
// of a user:password@ or a bare token@ survives, whatever characters the password holds.
require('should');
const { maskUrlSecrets } = require('../../dist/nodes/shared/masking');

describe('masking: the userinfo of a callback URL', function () {
  it('masks a password holding @ or : whole (the authority ends at the last @)', function () {
    maskUrlSecrets('http://u:p@ss-Q7@host/x?t=1').should.equal('http://u:***@host/x?t=***');
    maskUrlSecrets('http://u:a:b-Q7@host/x').should.equal('http://u:***@host/x');
  });

  it('masks a bare token used as the user name', function () {
    maskUrlSecrets('https://tok3n-Q7@hooks.example/x').should.equal('https://***@hooks.example/x');
  });

  it('leaves URLs without userinfo, and @ after the host, as they are', function () {
    maskUrlSecrets('http://host:1880/a@b/c').should.equal('http://host:1880/a@b/c');
    maskUrlSecrets('http://host/x?mail=a@b').should.equal('http://host/x?mail=***');
    maskUrlSecrets('http://robot:pw@127.0.0.1:9/cb').should.equal('http://robot:***@127.0.0.1:9/cb');
  });
});
