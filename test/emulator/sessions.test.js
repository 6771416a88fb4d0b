'use strict';
// The emulator's sessions: expiry (idle time and maximum age), users from the command line, and
// the two login endpoints (utility call with a JSON zm_cookie, form login answering Set-Cookie).
// Real HTTP; no password or cookie value in the emulator's log.
require('should');
const { startEmulator } = require('../../dist/emulator');
const { parseCli, parseUser } = require('../../dist/emulator/cli');
const { tmpDir, rmDir } = require('./support');

const USER = { name: 'alice', password: 'Emu-Pass:with-colon-42', permissions: ['events'] };
const SUB = '/review/api/events/assets/subscribe/emu-session-0001';

async function get(url, cookie) {
  const res = await fetch(url, { headers: cookie ? { Cookie: `JSESSIONID=${cookie}` } : {} });
  return { status: res.status, body: await res.json().catch(() => undefined), headers: res.headers };
}

async function waitUntil(check, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('emulator sessions', function () {
  let dir;
  let emu;
  const log = [];
  afterEach(async () => { if (emu) await emu.close(); emu = undefined; rmDir(dir); });

  async function start(options) {
    dir = tmpDir();
    emu = await startEmulator({ port: 0, dataDir: dir, log: (l) => log.push(l), users: [USER], ...options });
    return emu;
  }

  it('utility call: GET /command answers JSON with zm_cookie, a session with the user\'s permissions', async function () {
    await start({});
    const q = new URLSearchParams({ zm_username: USER.name, zm_password: USER.password, data: '{clientVersion:"t",cmd:getcredentials}' });
    const ok = await get(`${emu.url}/command?${q}`);
    ok.status.should.equal(200);
    ok.body.should.containDeep({ success: true, roles: ['events'] });
    ok.body.zm_cookie.should.be.a.String();
    ok.body.should.have.properties('rv_server', 'wbm_server', 'projects');
    (await get(`${emu.url}${SUB}`, ok.body.zm_cookie)).status.should.equal(200);
    // events only: adding files is refused
    const up = await fetch(`${emu.url}/review/api/asset/upload`, { method: 'POST', headers: { Cookie: `JSESSIONID=${ok.body.zm_cookie}` } });
    (await up.json()).error.should.match(/permission denied for adding/);
    q.set('zm_password', 'wrong');
    const refused = await get(`${emu.url}/command?${q}`);
    refused.status.should.equal(401);
    refused.body.success.should.be.false();
    q.set('data', '{cmd:other}');
    (await get(`${emu.url}/command?${q}`)).status.should.equal(400);
    emu.sessionStats().should.containDeep({ logins: 1, failedLogins: 1 });
    log.join('\n').should.not.containEql(USER.password).and.not.containEql(ok.body.zm_cookie).and.not.containEql('wrong');
  });

  it('form login: POST /review/j_security_check answers 303 with Set-Cookie JSESSIONID', async function () {
    await start({});
    const res = await fetch(`${emu.url}/review/j_security_check`, {
      method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ j_username: USER.name, j_password: USER.password }).toString()
    });
    res.status.should.equal(303);
    const cookie = /^JSESSIONID=([^;]+);/.exec(res.headers.get('set-cookie'))[1];
    (await get(`${emu.url}${SUB}`, cookie)).status.should.equal(200);
    const bad = await fetch(`${emu.url}/review/j_security_check`, { method: 'POST', body: 'j_username=alice&j_password=x',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    bad.status.should.equal(401);
    (await fetch(`${emu.url}/review/j_security_check`)).status.should.equal(405);
    log.join('\n').should.not.containEql(USER.password).and.not.containEql(cookie);
  });

  it('sessionIdle: a session unused for that long answers 401; using it keeps it alive', async function () {
    await start({ sessionIdle: 0.4, sessions: [{ value: 'idle-one', permissions: ['events'] }, { value: 'busy-one', permissions: ['events'] }] });
    const started = Date.now();
    // busy-one is used every 100 ms; idle-one is not used until the idle time is over.
    while (Date.now() - started < 700) {
      (await get(`${emu.url}${SUB}`, 'busy-one')).status.should.equal(200);
      await new Promise((r) => setTimeout(r, 100));
    }
    (await get(`${emu.url}${SUB}`, 'idle-one')).status.should.equal(401);
    emu.requestsWith('busy-one').should.be.above(3);
  });

  it('sessionMaxAge: a session expires that long after it was made, even in use', async function () {
    await start({ sessionMaxAge: 0.5, sessions: [{ value: 'aging', permissions: ['events'] }] });
    (await get(`${emu.url}${SUB}`, 'aging')).status.should.equal(200);
    await waitUntil(async () => (await get(`${emu.url}${SUB}`, 'aging')).status === 401, 3000);
    emu.sessionStats().expired.should.equal(1);
  });

  it('oneSessionPerUser: a login ends that user\'s other sessions, not other users\' ones; off by default', async function () {
    const BOB = { name: 'bob', password: 'Bob-Pass-7', permissions: ['events'] };
    const login = async (user) => {
      const q = new URLSearchParams({ zm_username: user.name, zm_password: user.password, data: '{clientVersion:"t",cmd:getcredentials}' });
      return (await get(`${emu.url}/command?${q}`)).body.zm_cookie;
    };
    await start({ oneSessionPerUser: true, users: [USER, BOB] });
    const first = await login(USER);
    const bobs = await login(BOB);
    (await get(`${emu.url}${SUB}`, first)).status.should.equal(200);
    const second = await login(USER);
    (await get(`${emu.url}${SUB}`, first)).status.should.equal(401, 'the first session of alice ended by her second login');
    (await get(`${emu.url}${SUB}`, second)).status.should.equal(200);
    (await get(`${emu.url}${SUB}`, bobs)).status.should.equal(200, 'bob\'s session untouched');
    emu.sessionStats().should.containDeep({ logins: 3, endedByLogin: 1 });
    await emu.close();
    rmDir(dir);
    await start({ users: [USER] });
    const a = await login(USER);
    const b = await login(USER);
    (await get(`${emu.url}${SUB}`, a)).status.should.equal(200, 'without the mode, both sessions live');
    (await get(`${emu.url}${SUB}`, b)).status.should.equal(200);
    emu.sessionStats().endedByLogin.should.equal(0);
  });

  it('CLI: --one-session-per-user (off by default)', function () {
    parseCli(['--one-session-per-user']).oneSessionPerUser.should.be.true();
    parseCli([]).oneSessionPerUser.should.be.false();
  });

  it('CLI: --user NAME:PASSWORD:PERMS (the password may hold ":"), --session-idle, --session-max-age', function () {
    parseUser('alice:pa:ss:events,add').should.eql({ name: 'alice', password: 'pa:ss', permissions: ['events', 'add'] });
    parseUser('bob:pw:').should.eql({ name: 'bob', password: 'pw', permissions: [] });
    (() => parseUser('alice:events')).should.throw(/NAME:PASSWORD:PERMS/);
    (() => parseUser('alice::events')).should.throw(/password must not be empty/);
    (() => parseUser('a:b:admin')).should.throw(/unknown permission "admin"/);
    const o = parseCli(['--user', 'alice:pw:events', '--session-idle', '30', '--session-max-age', '1.5']);
    o.users.should.eql([{ name: 'alice', password: 'pw', permissions: ['events'] }]);
    o.sessionIdle.should.equal(30);
    o.sessionMaxAge.should.equal(1.5);
    (() => parseCli(['--session-idle', '10s'])).should.throw(/--session-idle must be a number of seconds/);
    parseCli([]).users.should.eql([]);
  });
});
