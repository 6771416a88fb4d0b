'use strict';
// Spec section 5 (authentication) and 7 (errors): cookie parsing, 401, permission denied, sessions at run time.
require('should');
const { startTestEmulator, request, uploadFile } = require('./support');
const { parseCookieHeader } = require('../../dist/emulator/server');

const SUB = '/review/api/events/assets/subscribe/abcdefgh';
const FORM = { callback: 'http://127.0.0.1:9/cb' };

describe('emulator authentication (spec 5, 7)', function () {
  let emu;
  before(async () => {
    emu = await startTestEmulator({
      sessions: [
        { value: 'local-dev', permissions: ['events', 'add'] },
        { value: 'viewer', permissions: [] },
        { value: 'eventsonly', permissions: ['events'] },
        { value: 'addonly', permissions: ['add'], user: 'alice' }
      ]
    });
  });
  after(() => emu.stop());

  describe('cookie header parsing', () => {
    it('reads several cookies, spaces and quoted values', () => {
      parseCookieHeader('a=b; JSESSIONID=x').should.eql([['a', 'b'], ['JSESSIONID', 'x']]);
      parseCookieHeader('  a = b ;JSESSIONID="x y";;flag; c=d=e ').should.eql([['a', 'b'], ['JSESSIONID', 'x y'], ['c', 'd=e']]);
      parseCookieHeader(undefined).should.eql([]);
      parseCookieHeader('').should.eql([]);
    });

    it('accepts the session cookie among other cookies, with or without spaces', async () => {
      for (const cookie of ['a=b; JSESSIONID=local-dev', 'a=b;JSESSIONID=local-dev;c=d', '  JSESSIONID=local-dev  ', 'x=1; y=2; JSESSIONID="local-dev"']) {
        const r = await request(emu.url, 'GET', '/emulator/deliveries', { cookie });
        r.status.should.equal(200, cookie);
        r.json.success.should.equal(true);
      }
    });

    it('accepts the valid one of two JSESSIONID cookies (as browsers send for two paths)', async () => {
      const r = await request(emu.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=stale; JSESSIONID=local-dev' });
      r.status.should.equal(200);
    });

    it('does not take the value from another cookie name or a bare value', async () => {
      for (const cookie of ['SESSION=local-dev', 'local-dev', 'jsessionid=local-dev', 'JSESSIONID=local-dev-x', 'JSESSIONID=']) {
        const r = await request(emu.url, 'GET', '/emulator/deliveries', { cookie });
        r.status.should.equal(401, cookie);
      }
    });
  });

  describe('invalid cookie -> HTTP 401 (5.2)', () => {
    const routes = [
      ['POST', SUB], ['GET', SUB], ['DELETE', SUB],
      ['POST', '/review/api/asset/upload'],
      ['GET', '/review/api/asset/download?fuid=1'],
      ['GET', '/review/api/asset/export/metadata?fuid=1&rrn=-1'],
      ['GET', '/emulator/assets/1'], ['PUT', '/emulator/assets/1/metadata'], ['DELETE', '/emulator/assets/1'],
      ['GET', '/emulator/deliveries'], ['GET', '/emulator/jobs/job-1']
    ];
    for (const [method, path] of routes) {
      it(`${method} ${path.split('?')[0]}: missing and unknown cookie give 401 with a JSON body`, async () => {
        for (const cookie of [null, 'JSESSIONID=nope']) {
          const r = await request(emu.url, method, path, { cookie });
          r.status.should.equal(401);
          r.json.should.eql({ success: false, error: 'authentication failed' });
        }
      });
    }

    it('a 401 on an upload answers without waiting for the whole body', async () => {
      const r = await uploadFile(emu.url, '/inbox', 'a.txt', Buffer.alloc(3 * 1024 * 1024, 1), {}, { cookie: 'JSESSIONID=nope' });
      r.status.should.equal(401);
      const list = await request(emu.url, 'GET', '/emulator/assets?path=/inbox/a.txt');
      list.json.success.should.equal(false);
    });
  });

  describe('valid cookie without the permission -> HTTP 200 success false (5.3, 7)', () => {
    it('subscribe POST/GET/DELETE need the events permission', async () => {
      for (const cookie of ['JSESSIONID=viewer', 'JSESSIONID=addonly']) {
        for (const method of ['POST', 'GET', 'DELETE']) {
          const r = await request(emu.url, method, SUB, { cookie, form: method === 'POST' ? FORM : undefined });
          r.status.should.equal(200);
          r.json.should.eql({ id: 'abcdefgh', success: false, error: 'permission denied for events' });
        }
      }
    });

    it('a session with events may subscribe', async () => {
      const r = await request(emu.url, 'POST', SUB, { cookie: 'JSESSIONID=eventsonly', form: FORM });
      r.json.should.eql({ id: 'abcdefgh', success: true });
      (await request(emu.url, 'DELETE', SUB, { cookie: 'JSESSIONID=eventsonly' })).json.success.should.equal(true);
    });

    it('upload needs the add permission', async () => {
      for (const cookie of ['JSESSIONID=viewer', 'JSESSIONID=eventsonly']) {
        const r = await uploadFile(emu.url, '/inbox', 'denied.txt', 'x', {}, { cookie });
        r.status.should.equal(200);
        r.json.should.eql({ success: false, error: 'permission denied for adding files' });
      }
      const r = await request(emu.url, 'GET', '/emulator/assets?path=/inbox/denied.txt');
      r.json.success.should.equal(false);
    });

    it('a session with add may upload; the owner is its user', async () => {
      const r = await uploadFile(emu.url, '/inbox', 'alice.txt', 'x', {}, { cookie: 'JSESSIONID=addonly' });
      r.json.success.should.equal(true);
      const e = await request(emu.url, 'GET', `/review/api/asset/export/metadata?fuid=${r.json.data.fuids[0]}&rrn=-1`, { cookie: 'JSESSIONID=viewer' });
      e.json.owner.should.equal('alice');
    });

    it('download, export and /emulator/ need a valid session but no permission', async () => {
      const up = await uploadFile(emu.url, '/inbox', 'free.txt', 'free');
      const fuid = up.json.data.fuids[0];
      const d = await request(emu.url, 'GET', `/review/api/asset/download?fuid=${fuid}`, { cookie: 'JSESSIONID=viewer' });
      d.status.should.equal(200);
      d.text.should.equal('free');
      (await request(emu.url, 'GET', `/review/api/asset/export/metadata?fuid=${fuid}&rrn=-1`, { cookie: 'JSESSIONID=viewer' })).json.success.should.equal(true);
      (await request(emu.url, 'GET', `/emulator/assets/${fuid}`, { cookie: 'JSESSIONID=viewer' })).json.success.should.equal(true);
      (await request(emu.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=viewer' })).json.success.should.equal(true);
    });

    it('the default user name is emulator-user, never the cookie value', async () => {
      const up = await uploadFile(emu.url, '/inbox', 'who.txt', 'x');
      const e = await request(emu.url, 'GET', `/review/api/asset/export/metadata?fuid=${up.json.data.fuids[0]}`);
      e.json.owner.should.equal('emulator-user');
    });
  });

  describe('sessions at run time', () => {
    it('addSession makes a cookie valid; revokeSession makes it give 401 (an expired session)', async () => {
      (await request(emu.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=late' })).status.should.equal(401);
      emu.addSession({ value: 'late', permissions: ['events'] });
      (await request(emu.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=late' })).status.should.equal(200);
      (await uploadFile(emu.url, '/inbox', 'late.txt', 'x', {}, { cookie: 'JSESSIONID=late' })).json.error.should.equal('permission denied for adding files');
      emu.addSession({ value: 'late', permissions: ['events', 'add'] }); // replaces
      (await uploadFile(emu.url, '/inbox', 'late.txt', 'x', {}, { cookie: 'JSESSIONID=late' })).json.success.should.equal(true);
      emu.revokeSession('late');
      (await request(emu.url, 'GET', '/emulator/deliveries', { cookie: 'JSESSIONID=late' })).status.should.equal(401);
    });
  });

  describe('other answers are JSON too', () => {
    it('unknown route -> 404 JSON; wrong method -> 405 JSON', async () => {
      const r = await request(emu.url, 'GET', '/nope');
      r.status.should.equal(404);
      r.json.success.should.equal(false);
      const m = await request(emu.url, 'PUT', '/review/api/asset/upload');
      m.status.should.equal(405);
      m.json.success.should.equal(false);
      m.headers.allow.should.equal('POST');
    });

    it('never logs a cookie value', async () => {
      emu.lines.length.should.be.above(10);
      for (const line of emu.lines) line.should.not.match(/local-dev|viewer|addonly|eventsonly|JSESSIONID/);
    });
  });
});
