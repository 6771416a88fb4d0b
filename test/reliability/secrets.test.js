'use strict';
// Suite 7: secrets. Distinctive session cookies and a distinctive webhook secret go into a real
// Node-RED process (the project's launcher) running flows with every node of the package, a Catch
// node and debug nodes that print the complete msg to the runtime log (console, not the sidebar).
// The flows succeed and fail (401, permission, network, bad webhook secret). Then none of the
// secrets may appear in:
//   - Node-RED's stdout/stderr (which holds every debug message and every error),
//   - the node status texts (read from the editor's comms websocket),
//   - the exported flows (GET /flows, v1 and v2) and the credentials endpoint,
//   - the flows file on disk; the credentials file must be encrypted (no plain value, and
//     decrypting it with the credential secret finds them: they are stored only there),
//   - the emulator's log (the dam-emulator CLI's stdout/stderr). The CLI prints each session
//     cookie once in its start-up banner, on purpose, so a user knows what to paste: exactly those
//     banner lines (`cookie: JSESSIONID=...`) are set aside, and checked to be banner lines.
// Sessions (README "Sessions"): an asset-server with automatic login (its password, a wrong
// password on another server), cookies set at run time by an asset-session node (old and new), and
// the session cookies the emulator's login hands out (shape `ses1-<32 hex>`): none of them either;
// the run-time cookie is in memory only, so not even in the encrypted credentials file.
// Also: an asset-event-in whose secret header has a name of its own (typed with spaces around it),
// its duplicate filter in a real redis-server with requirepass (the password an asset-redis
// credential; a second asset-redis with a wrong one), and the DAM sidebar: every admin route it
// offers (overview, connection checks, the dialog's connection test with a typed and a saved
// cookie, and with automatic login: a typed, a wrong and a saved password; subscription details,
// delete, register again) and its comms messages (live counters).
require('should');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const WebSocket = require('ws');
const { spawnCli } = require('../emulator/support');
const { startRealNodeRed, freePort } = require('./lib/nodered');
const { startRedis } = require('./lib/servers');
const r = require('./lib/support');

const GOOD = 'Sx7-goodcookie-Q4mZ81vKp0';
const WRONG = 'Sx7-wrongcookie-T9bW22cLr5';
const VIEWER = 'Sx7-viewercookie-H3nD47eJx8';
const WEBHOOK_SECRET = 'Wh5-webhooksecret-Z2kP93fGq1';
const CREDENTIAL_SECRET = 'reliability-secrets-credential-key';
const LOGIN_PASSWORD = 'Lp8-loginpassword-R6tY55uIo3';
const WRONG_PASSWORD = 'Lp8-wrongpassword-E1wQ66aSd4';
const RUNTIME_OLD = 'Rt3-runtimeold-N8mB77vCx6';
const RUNTIME_NEW = 'Rt3-runtimenew-K5jH88gFd7';
const HEADER_SECRET = 'Hs4-customheadersecret-V7cX30bNm2';
const REDIS_PASSWORD = 'Rp6-redispassword-M1qW48eRt9';
const REDIS_WRONG_PASSWORD = 'Rp6-wrongredispassword-U2yT59iOp0';
/** The password of a server whose login server echoes it back encoded (issue 22 item 7): characters that encoding changes. */
const ECHO_PASSWORD = 'Ep9 echo/pass+word=Z4&q';
const SECRETS = { GOOD, WRONG, VIEWER, WEBHOOK_SECRET, LOGIN_PASSWORD, WRONG_PASSWORD, RUNTIME_OLD, RUNTIME_NEW,
  HEADER_SECRET, REDIS_PASSWORD, REDIS_WRONG_PASSWORD, ECHO_PASSWORD };
/** The echoed password's encoded forms: never stored anywhere, and never to be seen either. */
const ECHO_FORMS = {
  ECHO_URL_ENCODED: encodeURIComponent(ECHO_PASSWORD),
  ECHO_URL_ENCODED_LOWER: encodeURIComponent(ECHO_PASSWORD).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
  ECHO_FORM_ENCODED: new URLSearchParams({ p: ECHO_PASSWORD }).toString().slice(2),
  ECHO_BASE64: Buffer.from(ECHO_PASSWORD).toString('base64'),
  ECHO_BASIC: Buffer.from(`robot:${ECHO_PASSWORD}`).toString('base64')
};
/** Session cookies handed out by the emulator's login endpoints. */
const LOGIN_COOKIE = /ses1-[0-9a-f]{32}/;

const Z = 'sec-tab';
const EVENT_IN = 'sec-event-in-01';
const OWNED_SUB = `nr-${EVENT_IN}`;
/** Owns its subscription too, with a secret header of its own name, and keeps its duplicate filter in Redis. */
const CUSTOM_IN = 'sec-event-in-custom';
const CUSTOM_SUB = `nr-${CUSTOM_IN}`;
const CUSTOM_HEADER = 'X-Hook-Signature';

function debugNode(id) {
  return { id, type: 'debug', z: Z, name: id, active: true, tosidebar: false, console: true, tostatus: false,
    complete: 'true', targetType: 'full', statusVal: '', statusType: 'auto', x: 0, y: 0, wires: [] };
}

function inject(id, next, payload = 'secret test payload') {
  return { id, type: 'inject', z: Z, name: id, props: [{ p: 'payload' }], payload, payloadType: 'str', repeat: '', once: false, x: 0, y: 0, wires: [[next]] };
}

describe('reliability 7: secrets stay out of logs, messages, errors, statuses, exported flows and the emulator log', function () {
  this.timeout(r.pick(60000, 120000));
  let work;
  let emulator;
  let nodeRed;
  let statusTexts;
  let ws;
  let downPort;
  let redis;
  /** Every comms message of the sidebar's topic (dam-assets/...), as JSON text. */
  let sidebarComms;
  /** Every answer of the sidebar's admin routes, as `<method> <route> -> <status> <body>`. */
  const sidebarAnswers = [];
  /** A login server that refuses every login, echoing the password it got in every encoded form. */
  let echoLogin;
  let echoLogins = 0;

  before(async function () {
    this.timeout(90000);
    work = r.tempDir('dam-secrets-');
    emulator = await spawnCli(['--port', '0', '--data', path.join(work, 'emulator'), '--retry-delay', '300ms',
      '--session', `${GOOD}:events,add`, '--session', `${VIEWER}:`, '--session', 'Sx7-unused-session:events',
      '--user', `robot:${LOGIN_PASSWORD}:events,add`]);
    downPort = await freePort();
    echoLogin = require('http').createServer((req, res) => {
      echoLogins++;
      const password = new URL(req.url, 'http://x').searchParams.get('zm_password') || '';
      res.writeHead(401, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({
        error: `login refused for ${req.url} (password ${encodeURIComponent(password)}, form ${new URLSearchParams({ p: password }).toString().slice(2)}, ` +
          `base64 ${Buffer.from(password).toString('base64')}, Basic ${Buffer.from(`robot:${password}`).toString('base64')})`
      }));
    });
    await new Promise((resolve) => echoLogin.listen(0, '127.0.0.1', resolve));
    redis = await startRedis(path.join(work, 'redis'), { password: REDIS_PASSWORD, durable: false });
    nodeRed = await startRealNodeRed({ credentialSecret: CREDENTIAL_SECRET, logLevel: 'debug', env: { DAM_RUNTIME_COOKIE: `JSESSIONID=${RUNTIME_NEW}` } });
    statusTexts = [];
    sidebarComms = [];
    ws = new WebSocket(`${nodeRed.url.replace('http', 'ws')}/comms`);
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    ws.on('message', (data) => {
      for (const m of [].concat(JSON.parse(String(data)))) {
        if (m.topic && m.topic.startsWith('status/')) statusTexts.push(JSON.stringify(m.data));
        if (m.topic && m.topic.startsWith('dam-assets/')) sidebarComms.push(JSON.stringify(m));
      }
    });
    ws.send(JSON.stringify({ subscribe: 'status/#' }));
    ws.send(JSON.stringify({ subscribe: 'dam-assets/#' }));
  });

  after(async function () {
    this.timeout(30000);
    if (ws) ws.close();
    if (nodeRed) await nodeRed.stopAndClean();
    if (redis) await redis.stop();
    if (echoLogin) echoLogin.close();
    if (emulator && emulator.child.exitCode === null) {
      emulator.child.kill('SIGTERM');
      await emulator.exited;
    }
    r.rmDir(work);
  });

  const echoUrl = () => `http://127.0.0.1:${echoLogin.address().port}/command`;

  function flows() {
    const server = (id, cookie, baseUrl = emulator.url) => ({
      id, type: 'asset-server', name: `server ${id.slice(8)}`, baseUrl, publicBaseUrl: nodeRed.url, timeout: 5, credentials: { cookie }
    });
    const node = (id, type, props, next) => ({ id, type, z: Z, name: id, x: 0, y: 0, wires: [next === undefined ? [] : [].concat(next)], ...props });
    const download = path.join(work, 'downloads', 'copy.txt');
    return [
      { id: Z, type: 'tab', label: 'secrets' },
      server('sec-srv-good', `JSESSIONID=${GOOD}`),
      server('sec-srv-wrong', WRONG), // a bare value: sent as JSESSIONID=<value>
      server('sec-srv-viewer', `JSESSIONID=${VIEWER}`),
      server('sec-srv-down', `JSESSIONID=${GOOD}`, `http://127.0.0.1:${downPort}`),
      // Automatic login: the configured cookie is not valid, so the first request logs in.
      { ...server('sec-srv-login', `JSESSIONID=${RUNTIME_OLD}`), loginEnabled: true, loginPreset: 'utility',
        credentials: { cookie: `JSESSIONID=${RUNTIME_OLD}`, username: 'robot', password: LOGIN_PASSWORD } },
      { ...server('sec-srv-badlogin', ''), loginEnabled: true, loginPreset: 'form',
        credentials: { username: 'robot', password: WRONG_PASSWORD } },
      // Its login server echoes the password back URL-encoded, form-encoded and in base64.
      { ...server('sec-srv-echo', ''), loginEnabled: true, loginPreset: 'utility', loginUrl: echoUrl(),
        credentials: { username: 'robot', password: ECHO_PASSWORD } },

      // Receives the emulator's callbacks (it owns its subscription, with the shared secret as header).
      node(EVENT_IN, 'asset-event-in', { method: 'post', path: '/secrets-hook', manage: true, server: 'sec-srv-good',
        watchPath: ['* /secrets'], watchMetadata: [], retryCount: '5', credentials: { secret: WEBHOOK_SECRET } }, 'sec-dbg-event'),
      debugNode('sec-dbg-event'),
      // The same secret on endpoints whose subscription cannot be registered: 401 and network.
      node('sec-event-in-401', 'asset-event-in', { method: 'post', path: '/secrets-hook-401', manage: true, server: 'sec-srv-wrong',
        watchPath: ['* /secrets'], watchMetadata: [], credentials: { secret: WEBHOOK_SECRET } }, 'sec-dbg-event'),
      node('sec-event-in-down', 'asset-event-in', { method: 'post', path: '/secrets-hook-down', manage: true, server: 'sec-srv-down',
        watchPath: ['* /secrets'], watchMetadata: [], credentials: { secret: WEBHOOK_SECRET } }, 'sec-dbg-event'),
      // A secret header of its own name (typed with spaces around it), the duplicate filter in Redis.
      { id: 'sec-redis', type: 'asset-redis', name: 'redis-ok', url: redis.url, credentials: { password: REDIS_PASSWORD } },
      { id: 'sec-redis-wrong', type: 'asset-redis', name: 'redis-wrongpass', url: redis.url, credentials: { password: REDIS_WRONG_PASSWORD } },
      node(CUSTOM_IN, 'asset-event-in', { method: 'post', path: '/secrets-hook-custom', manage: true, server: 'sec-srv-good', redis: 'sec-redis',
        secretHeader: ` ${CUSTOM_HEADER} `, watchPath: ['* /secrets'], watchMetadata: [], credentials: { secret: HEADER_SECRET } }, 'sec-dbg-custom'),
      debugNode('sec-dbg-custom'),
      // Its Redis refuses the password: every callback is answered 503 (the server retries it).
      node('sec-event-in-redis-wrong', 'asset-event-in', { method: 'post', path: '/secrets-hook-redis-wrong', manage: false, redis: 'sec-redis-wrong',
        secretHeader: CUSTOM_HEADER, credentials: { secret: HEADER_SECRET } }, 'sec-dbg-never'),

      // Successes: upload -> download (buffer, file), export.
      inject('sec-inj-upload', 'sec-upload'),
      node('sec-upload', 'asset-upload', { server: 'sec-srv-good', destination: '/secrets', destinationType: 'str', assetName: 'note.txt', assetNameType: 'str',
        wait: 'true', waitType: 'bool' }, ['sec-dbg-upload', 'sec-download-buffer', 'sec-download-file', 'sec-export']),
      debugNode('sec-dbg-upload'),
      node('sec-download-buffer', 'asset-download', { server: 'sec-srv-good', output: 'buffer' }, 'sec-dbg-download'),
      node('sec-download-file', 'asset-download', { server: 'sec-srv-good', output: 'file', filename: download, filenameType: 'str' }, 'sec-dbg-download'),
      debugNode('sec-dbg-download'),
      node('sec-export', 'asset-export', { server: 'sec-srv-good' }, 'sec-dbg-export'),
      debugNode('sec-dbg-export'),

      // Subscriptions: register / delete one, and read the event node's own (which carries the secret header).
      inject('sec-inj-register', 'sec-register'),
      node('sec-register', 'asset-subscribe', { server: 'sec-srv-good', action: 'register', subscriptionId: 'sec-other-sub-01', subscriptionIdType: 'str',
        callback: `${nodeRed.url}/elsewhere`, callbackType: 'str', method: 'POST', watchPath: ['* /other'], header: ['X-Plain: not-a-secret'] }, 'sec-dbg-subscribe'),
      inject('sec-inj-get-own', 'sec-get-own'),
      node('sec-get-own', 'asset-subscribe', { server: 'sec-srv-good', action: 'get', subscriptionId: OWNED_SUB, subscriptionIdType: 'str' }, 'sec-dbg-subscribe'),
      inject('sec-inj-delete', 'sec-delete'),
      node('sec-delete', 'asset-subscribe', { server: 'sec-srv-good', action: 'delete', subscriptionId: 'sec-other-sub-01', subscriptionIdType: 'str' }, 'sec-dbg-subscribe'),
      debugNode('sec-dbg-subscribe'),

      // Failures: 401 (wrong cookie), permission (viewer), network (server down), for several node types.
      inject('sec-inj-401', 'sec-upload-401'),
      node('sec-upload-401', 'asset-upload', { server: 'sec-srv-wrong', destination: '/secrets', destinationType: 'str' }, 'sec-dbg-never'),
      inject('sec-inj-401-export', 'sec-export-401'),
      node('sec-export-401', 'asset-export', { server: 'sec-srv-wrong', fuid: '2', fuidType: 'num' }, 'sec-dbg-never'),
      inject('sec-inj-permission', 'sec-upload-viewer'),
      node('sec-upload-viewer', 'asset-upload', { server: 'sec-srv-viewer', destination: '/secrets', destinationType: 'str' }, 'sec-dbg-never'),
      inject('sec-inj-permission-subscribe', 'sec-register-viewer'),
      node('sec-register-viewer', 'asset-subscribe', { server: 'sec-srv-viewer', action: 'register', subscriptionId: 'sec-viewer-sub-01', subscriptionIdType: 'str',
        callback: `${nodeRed.url}/elsewhere`, callbackType: 'str' }, 'sec-dbg-never'),
      inject('sec-inj-network', 'sec-upload-down'),
      node('sec-upload-down', 'asset-upload', { server: 'sec-srv-down', destination: '/secrets', destinationType: 'str' }, 'sec-dbg-never'),
      inject('sec-inj-network-download', 'sec-download-down'),
      node('sec-download-down', 'asset-download', { server: 'sec-srv-down', fuid: '2', fuidType: 'num', output: 'buffer' }, 'sec-dbg-never'),
      debugNode('sec-dbg-never'),

      // Sessions: a login (the configured cookie is refused), a cookie set at run time (unknown to
      // the emulator: the next request logs in again), and a login with a wrong password.
      inject('sec-inj-login-export', 'sec-login-export'),
      node('sec-login-export', 'asset-subscribe', { server: 'sec-srv-login', action: 'get', subscriptionId: OWNED_SUB, subscriptionIdType: 'str' }, 'sec-dbg-session'),
      // The new cookie comes from Node-RED's environment, so that the flow itself does not hold it.
      inject('sec-inj-set-cookie', 'sec-set-cookie'),
      node('sec-set-cookie', 'asset-session', { server: 'sec-srv-login', cookie: 'DAM_RUNTIME_COOKIE', cookieType: 'env' }, 'sec-dbg-session'),
      inject('sec-inj-echo-login', 'sec-echo-login'),
      node('sec-echo-login', 'asset-subscribe', { server: 'sec-srv-echo', action: 'get', subscriptionId: OWNED_SUB, subscriptionIdType: 'str' }, 'sec-dbg-never'),
      inject('sec-inj-bad-login', 'sec-bad-login'),
      node('sec-bad-login', 'asset-subscribe', { server: 'sec-srv-badlogin', action: 'get', subscriptionId: OWNED_SUB, subscriptionIdType: 'str' }, 'sec-dbg-never'),
      debugNode('sec-dbg-session'),

      { id: 'sec-catch', type: 'catch', z: Z, name: 'catch all', scope: null, uncaught: false, x: 0, y: 0, wires: [['sec-dbg-catch']] },
      debugNode('sec-dbg-catch')
    ];
  }

  /** How many complete messages the debug node `name` printed to the log so far. */
  const printed = (name) => nodeRed.lines.filter((l) => l.includes(`[debug:${name}]`)).length;

  async function clickAndWait(injectId, debugName, count = 1) {
    const before = printed(debugName);
    await nodeRed.inject(injectId);
    await r.waitFor(`${count} message(s) at ${debugName} after ${injectId}`, () => printed(debugName) >= before + count, 15000, 50);
  }

  function leaks(text) {
    const found = Object.entries({ ...SECRETS, ...ECHO_FORMS }).filter(([, value]) => text.includes(value)).map(([name]) => name);
    return LOGIN_COOKIE.test(text) ? [...found, 'LOGIN_COOKIE'] : found;
  }

  /** Calls an admin route of the DAM sidebar as the editor does; keeps the answer. */
  async function sidebar(method, route, body) {
    const res = await fetch(`${nodeRed.url}/dam-assets/${route}`, {
      method, headers: body === undefined ? {} : { 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
    });
    const text = await res.text();
    sidebarAnswers.push(`${method} ${route} -> ${res.status} ${text}`);
    return { status: res.status, json: JSON.parse(text) };
  }

  /** Every route of the sidebar, on servers that work and that fail, with subscriptions that carry secret headers. */
  async function useTheSidebar() {
    const overview = await sidebar('GET', 'overview');
    overview.json.eventIns.map((e) => e.id).should.containEql(CUSTOM_IN);
    overview.json.subscriptions.map((sub) => sub.id).should.containEql(CUSTOM_SUB);
    const checks = {};
    for (const id of ['sec-srv-good', 'sec-srv-wrong', 'sec-srv-viewer', 'sec-srv-down', 'sec-srv-login', 'sec-srv-badlogin']) {
      checks[id] = (await sidebar('GET', `servers/${id}/check`)).json.result;
    }
    checks.should.eql({ 'sec-srv-good': 'ok', 'sec-srv-wrong': 'auth', 'sec-srv-viewer': 'permission', 'sec-srv-down': 'network',
      'sec-srv-login': 'ok', 'sec-srv-badlogin': 'login' });
    // The stored subscriptions carry the secrets as header values: answered masked.
    for (const sub of [OWNED_SUB, CUSTOM_SUB]) {
      const details = await sidebar('GET', `subscriptions/sec-srv-good/${sub}`);
      details.json.ok.should.be.true();
      JSON.stringify(details.json.details).should.match(sub === CUSTOM_SUB ? /X-Hook-Signature: \*\*\*/ : /X-DAM-Secret: \*\*\*/);
    }
    // The dialog's connection test: a typed cookie (good and wrong), the saved one, the saved one towards another host.
    const test = (body) => sidebar('POST', 'connection-test', { id: 'sec-srv-good', baseUrl: emulator.url, timeout: 5, ...body });
    (await test({ cookie: `JSESSIONID=${GOOD}` })).json.result.should.equal('ok');
    (await test({ cookie: WRONG })).json.result.should.equal('auth');
    (await test({ cookie: '__PWRD__' })).json.result.should.equal('ok');
    // Towards a host that does not answer: the base URL is tried first, without cookie (issue 23 #5).
    (await test({ cookie: '__PWRD__', baseUrl: `http://127.0.0.1:${downPort}` })).json.should.containEql({ result: 'network', part: 'baseUrl' });
    // ... with automatic login as the dialog sends it: unchanged (the deployed node's client), a typed password (right, wrong),
    // the saved one with another timeout (logs in as the node does), with another preset and towards another host (refused).
    const login = (body) => test({ id: 'sec-srv-login', loginEnabled: true, loginPreset: 'utility', username: 'robot', ...body });
    (await login({ cookie: '__PWRD__', password: '__PWRD__' })).json.result.should.equal('ok');
    (await login({ password: LOGIN_PASSWORD })).json.result.should.equal('ok');
    (await login({ password: WRONG_PASSWORD })).json.result.should.equal('login');
    (await login({ password: '__PWRD__', timeout: 7 })).json.result.should.equal('ok');
    (await login({ password: '__PWRD__', loginPreset: 'form' })).json.should.containEql({ result: 'config', part: 'password' });
    (await login({ password: '__PWRD__', baseUrl: `http://127.0.0.1:${downPort}` })).json.should.containEql({ result: 'network', part: 'baseUrl' });
    // ... towards a login server that echoes the typed password encoded.
    (await login({ id: 'sec-srv-echo', loginUrl: echoUrl(), password: ECHO_PASSWORD })).json.result.should.equal('login');
    // Register again (one that works, one whose server refuses the cookie), and a delete the server refuses.
    (await sidebar('POST', `event-in/${CUSTOM_IN}/register`)).json.ok.should.be.true();
    (await sidebar('POST', 'event-in/sec-event-in-401/register')).json.ok.should.be.false();
    (await sidebar('DELETE', 'subscriptions/sec-srv-viewer/sec-viewer-sub-01')).json.ok.should.be.false();
    await r.waitFor('live counters of the endpoints on the sidebar\'s comms topic', () =>
      sidebarComms.some((m) => m.includes(`dam-assets/event-in/${CUSTOM_IN}`)) && sidebarComms.some((m) => m.includes(`dam-assets/event-in/${EVENT_IN}`)), 15000, 50);
  }

  it('run: successes and failures of every node, callbacks with the right and a wrong secret', async function () {
    await nodeRed.deployAs('full', flows());
    await r.waitFor('the owned subscription on the emulator', async () => {
      const res = await fetch(`${emulator.url}/review/api/events/assets/subscribe/${OWNED_SUB}`, { headers: { Cookie: `JSESSIONID=${GOOD}` } });
      return (await res.json()).success === true;
    }, 15000, 100);
    await r.waitFor('the subscription with the custom secret header on the emulator', async () => {
      const res = await fetch(`${emulator.url}/review/api/events/assets/subscribe/${CUSTOM_SUB}`, { headers: { Cookie: `JSESSIONID=${GOOD}` } });
      return (await res.json()).success === true;
    }, 15000, 100);

    await clickAndWait('sec-inj-upload', 'sec-dbg-upload');
    await r.waitFor('download and export output', () => printed('sec-dbg-download') >= 2 && printed('sec-dbg-export') >= 1, 15000, 50);
    // The upload's change comes back through the emulator's callback, secret header and all.
    await r.waitFor('the callback message', () => printed('sec-dbg-event') >= 1, 15000, 50);
    // ... and to the endpoint with its own header name, through the Redis duplicate filter (the password works).
    await r.waitFor('the callback message through the custom header and Redis', () => printed('sec-dbg-custom') >= 1, 15000, 50);
    await clickAndWait('sec-inj-register', 'sec-dbg-subscribe');
    await clickAndWait('sec-inj-get-own', 'sec-dbg-subscribe');
    await clickAndWait('sec-inj-delete', 'sec-dbg-subscribe');

    await clickAndWait('sec-inj-login-export', 'sec-dbg-session');
    await clickAndWait('sec-inj-set-cookie', 'sec-dbg-session');
    await clickAndWait('sec-inj-login-export', 'sec-dbg-session');
    for (const id of ['sec-inj-401', 'sec-inj-401-export', 'sec-inj-permission', 'sec-inj-permission-subscribe', 'sec-inj-network', 'sec-inj-network-download', 'sec-inj-bad-login',
      'sec-inj-echo-login']) {
      await clickAndWait(id, 'sec-dbg-catch');
    }
    printed('sec-dbg-never').should.equal(0);
    // The two endpoints that cannot register their subscription said why (in the log and their status).
    await r.waitFor('registration errors of the failing event nodes', () =>
      nodeRed.lines.some((l) => /\[asset-event-in:sec-event-in-401\]/.test(l) && /401|auth/i.test(l)) &&
      nodeRed.lines.some((l) => /\[asset-event-in:sec-event-in-down\]/.test(l) && /refused|network/i.test(l)), 15000, 100);
    const log = nodeRed.lines.join('\n');
    for (const kind of ['auth', 'permission', 'network']) log.should.match(new RegExp(`kind: '${kind}'`), `a caught ${kind} error was printed`);
    log.should.match(/login failed, next try in \d+ s: login request/, 'the failed login reached the Catch node');
    echoLogins.should.be.above(0);
    log.should.match(/\(server says: login refused for \/command\?/, 'the echoing login server\'s text reached the Catch node, redacted');

    // Callers of the webhook with a wrong or no secret are refused (401), and say nothing of the secret.
    const forged = (id) => JSON.stringify({ success: true, id, data: { entry: [{ assetId: 99, rrn: 1, path: '/secrets/forged', action: 'added' }] } });
    for (const headers of [{ 'X-DAM-Secret': `${WEBHOOK_SECRET.slice(0, -1)}X` }, {}, { 'X-DAM-Secret': '' }]) {
      const res = await fetch(`${nodeRed.url}/secrets-hook`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: forged(OWNED_SUB) });
      res.status.should.equal(401);
      leaks(await res.text()).should.eql([]);
    }
    // The custom header: the right secret under the default name, or a wrong one under its name, is refused.
    for (const headers of [{ 'X-DAM-Secret': HEADER_SECRET }, { [CUSTOM_HEADER]: `${HEADER_SECRET}x` }, { [CUSTOM_HEADER]: WEBHOOK_SECRET }]) {
      const res = await fetch(`${nodeRed.url}/secrets-hook-custom`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: forged(CUSTOM_SUB) });
      res.status.should.equal(401);
      const text = await res.text();
      text.should.containEql(CUSTOM_HEADER, 'the refusal names the header');
      leaks(text).should.eql([]);
    }
    // The right secret where Redis refuses the password: 503, the reason without any password.
    const refused = await fetch(`${nodeRed.url}/secrets-hook-redis-wrong`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', [CUSTOM_HEADER]: HEADER_SECRET }, body: forged('sec-no-such-sub-01')
    });
    refused.status.should.equal(503);
    leaks(await refused.text()).should.eql([]);
    await r.waitFor('the Redis authentication failure in the log', () =>
      nodeRed.lines.some((l) => /\[asset-redis:redis-wrongpass\]/.test(l) && /WRONGPASS|NOAUTH|auth/i.test(l)), 15000, 100);

    await useTheSidebar();
    await r.sleep(300); // the last log lines and status events
  });

  it('Node-RED stdout/stderr (every debug message and every error in it) hold no secret', function () {
    const log = nodeRed.lines.join('\n');
    log.should.containEql('[debug:sec-dbg-catch]');
    log.should.containEql('[debug:sec-dbg-event]');
    const leaking = nodeRed.lines.filter((line) => leaks(line).length > 0);
    leaking.should.eql([], `secret(s) in the Node-RED log:\n${leaking.join('\n')}`);
  });

  it('the DAM sidebar: its admin routes\' answers and its comms messages hold no secret', function () {
    sidebarAnswers.length.should.be.above(15);
    sidebarComms.length.should.be.above(1);
    const leaking = [...sidebarAnswers, ...sidebarComms].filter((text) => leaks(text).length > 0);
    leaking.should.eql([], `secret(s) in the sidebar:\n${leaking.join('\n')}`);
  });

  it('node status texts hold no secret', function () {
    statusTexts.length.should.be.above(5);
    statusTexts.join('\n').should.match(/auth:/);
    leaks(statusTexts.join('\n')).should.eql([]);
  });

  it('the exported flows (GET /flows v1 and v2) and the credentials endpoint hold no secret', async function () {
    for (const version of ['v1', 'v2']) {
      const res = await fetch(`${nodeRed.url}/flows`, { headers: { 'Node-RED-API-Version': version } });
      const text = await res.text();
      text.should.containEql('sec-srv-good');
      leaks(text).should.eql([], `GET /flows ${version}`);
    }
    for (const [type, id] of [['asset-server', 'sec-srv-good'], ['asset-server', 'sec-srv-wrong'], ['asset-event-in', EVENT_IN], ['asset-event-in', 'sec-event-in-401'],
      ['asset-server', 'sec-srv-login'], ['asset-server', 'sec-srv-badlogin'], ['asset-event-in', CUSTOM_IN],
      ['asset-redis', 'sec-redis'], ['asset-redis', 'sec-redis-wrong']]) {
      const res = await fetch(`${nodeRed.url}/credentials/${type}/${id}`);
      const text = await res.text();
      text.should.match(/"has_(cookie|secret|password)":true/);
      leaks(text).should.eql([], `GET /credentials/${type}/${id}`);
    }
  });

  it('the flows file holds no secret; the credentials file is encrypted and is where they are', function () {
    const flowsText = fs.readFileSync(path.join(nodeRed.userDir, 'flows.json'), 'utf8');
    flowsText.should.containEql(EVENT_IN);
    leaks(flowsText).should.eql([]);
    const credText = fs.readFileSync(path.join(nodeRed.userDir, 'flows_cred.json'), 'utf8');
    leaks(credText).should.eql([], 'no plain secret in flows_cred.json');
    const sealed = JSON.parse(credText);
    Object.keys(sealed).should.eql(['$']);
    // Node-RED's scheme: aes-256-ctr, key sha256(credentialSecret), IV in the first 32 hex characters.
    const key = crypto.createHash('sha256').update(CREDENTIAL_SECRET).digest();
    const decipher = crypto.createDecipheriv('aes-256-ctr', key, Buffer.from(sealed.$.slice(0, 32), 'hex'));
    const plain = decipher.update(sealed.$.slice(32), 'base64', 'utf8') + decipher.final('utf8');
    const configured = Object.keys(SECRETS).filter((name) => name !== 'RUNTIME_NEW');
    leaks(plain).sort().should.eql(configured.sort(), 'every configured secret is stored, encrypted, in flows_cred.json; the run-time cookie is not');
  });

  it('the emulator log holds no secret apart from its start-up banner', function () {
    const lines = emulator.stdout().split('\n');
    const banner = lines.filter((l) => /^cookie: JSESSIONID=\S+ \(permissions: [^)]*\)$/.test(l));
    banner.map((l) => l.split(' ')[1]).should.eql([`JSESSIONID=${GOOD}`, `JSESSIONID=${VIEWER}`, 'JSESSIONID=Sx7-unused-session']);
    // The banner is the first write: its cookie lines come straight after the listening and data folder lines.
    lines.slice(0, 5).should.eql([lines[0], lines[1], ...banner]);
    lines[0].should.startWith('dam-emulator listening on ');
    const rest = lines.slice(5).concat(emulator.stderr().split('\n'));
    rest.filter((l) => / (GET|POST|DELETE) /.test(l)).length.should.be.above(10, 'request lines were logged');
    rest.some((l) => /delivery \d+ of subscription/.test(l)).should.be.true('delivery lines were logged');
    // The configured cookie and then the run-time one were refused: two logins; the wrong password: one refusal.
    // The dialog's connection test: a typed password and the saved one (utility call), a wrong one (utility call).
    rest.filter((l) => /login \(utility call\): user "robot" signed in/.test(l)).length.should.equal(4);
    rest.filter((l) => /login \(form login\): user "robot" signed in/.test(l)).length.should.equal(0);
    rest.filter((l) => /login \(form login\) refused for user "robot"/.test(l)).length.should.equal(1);
    rest.filter((l) => /login \(utility call\) refused for user "robot"/.test(l)).length.should.equal(1);
    const leaking = rest.filter((line) => leaks(line).length > 0);
    leaking.should.eql([], `secret(s) in the emulator log:\n${leaking.join('\n')}`);
  });
});
