'use strict';
require('should');
const s = require('./nodes-support');
const { helper } = s;

describe('asset-subscribe node (against the emulator)', function () {
  let emulator;
  before(async function () {
    await helper.startServer();
    emulator = await s.startTestEmulator();
  });
  after(async function () {
    if (emulator) await emulator.close();
    await helper.stopServer();
  });
  afterEach(() => helper.unload());

  const registerProps = {
    action: 'register', subscriptionId: 'node-test-sub-1', subscriptionIdType: 'str',
    callback: 'http://127.0.0.1:9/callback', callbackType: 'str',
    method: 'POST', successCode: '202', successCodeType: 'num', retryCount: '5', retryCountType: 'num',
    requestType: '', requestTypeType: 'str', logicalOperand: 'AND',
    header: ['Content-Type: application/json', 'X-Secret: abc', 'X-Hook-Check: any-name-secret'],
    queryParam: ['source=dam', 'b=2'],
    watchPath: ['* /inbox', '+ /outbox', '/docs/readme.txt'],
    watchMetadata: ['City==SFO', 'Status=*']
  };

  async function getStored(id) {
    await s.load(s.flow('asset-subscribe', { action: 'get', subscriptionId: id }, { baseUrl: emulator.url }));
    const msg = await s.run({});
    await helper.unload();
    return msg.payload.subscription;
  }

  it('get masks the query values of the callback URL (issue 22 item 5); the server keeps them whole', async function () {
    const callback = 'http://robot:cb-pass-31@127.0.0.1:9/callback?token=cb-token-8Hq2&flag&b=2#frag-secret';
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-cbq', callback }, { baseUrl: emulator.url }));
    await s.run({ payload: 'go' });
    await helper.unload();
    const stored = await getStored('node-test-sub-cbq');
    stored.callback.should.equal('http://robot:***@127.0.0.1:9/callback?token=***&flag&b=***#***');
    JSON.stringify(stored).should.not.containEql('cb-token-8Hq2').and.not.containEql('cb-pass-31').and.not.containEql('frag-secret');
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-cbq`)).body.subscription.callback.should.equal(callback);
    // The DAM sidebar's subscription details go through the same mask.
    const { maskHeaderValues } = require('../../dist/nodes/asset-subscribe');
    maskHeaderValues({ subscription: { callback } }).subscription.callback.should.equal(stored.callback);
    await s.load(s.flow('asset-subscribe', { action: 'delete', subscriptionId: 'node-test-sub-cbq' }, { baseUrl: emulator.url }));
    await s.run({});
  });

  it('get\'s mask: a header nested deeper than it looks is masked whole, not shown; a callback URL in a list is masked', function () {
    const { maskHeaderValues } = require('../../dist/nodes/asset-subscribe');
    let deep = { header: ['X-Deep: DEEPSECRET'] };
    for (let i = 0; i < 12; i++) deep = { level: deep };
    JSON.stringify(maskHeaderValues({ subscription: deep })).should.not.containEql('DEEPSECRET');
    const masked = maskHeaderValues({ subscription: { callbackUrl: ['http://h/cb?token=LISTSECRET', null], info: { url: 'http://docs/x?version=2' }, depth: { a: 1 } } });
    JSON.stringify(masked).should.not.containEql('LISTSECRET');
    masked.subscription.callbackUrl.should.eql(['http://h/cb?token=***', null]);
    masked.subscription.info.url.should.equal('http://docs/x?version=2'); // not a callback: shown as it is
    masked.subscription.depth.should.eql({ a: 1 });
  });

  it('Secret (a credential) goes out as the Secret header, after the listed and msg.subscription headers; never in the msg or a log', async function () {
    const creds = (secret) => ({ ...s.credentials(), n1: { secret } });
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret', header: ['X-A: 1'] }, { baseUrl: emulator.url }), creds('sub-Secret-77'));
    const msg = await s.run({ payload: 'go' });
    await helper.unload();
    const sent = (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-secret`)).body.subscription.header;
    sent.should.eql(['X-A: 1', 'X-DAM-Secret: sub-Secret-77']);
    s.serialise(msg).should.not.containEql('sub-Secret-77');

    // Its own header name; with no node headers, msg.subscription's are kept.
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret', header: [], secretHeader: ' X-Hook-Key ' }, { baseUrl: emulator.url }), creds('k2'));
    await s.run({ subscription: { header: 'X-From-Msg: yes' } });
    await helper.unload();
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-secret`)).body.subscription.header.should.eql(['X-From-Msg: yes', 'X-Hook-Key: k2']);

    // An unset ${VAR} and a bad header name are errors naming the field; the secret is not sent as text.
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret' }, { baseUrl: emulator.url }), creds('${DAM_TEST_UNSET_SECRET_VAR}'));
    let caught = await s.runFailing({});
    caught.assetError.field.should.equal('secret');
    caught.error.message.should.match(/DAM_TEST_UNSET_SECRET_VAR/);
    await helper.unload();
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret', secretHeader: 'X Bad' }, { baseUrl: emulator.url }), creds('k3'));
    caught = await s.runFailing({});
    caught.assetError.field.should.equal('secretHeader');
    await helper.unload();
    // A header whose value get and the DAM tab show would show the secret.
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret', secretHeader: 'User-Agent' }, { baseUrl: emulator.url }), creds('k3'));
    caught = await s.runFailing({});
    caught.error.message.should.match(/secretHeader: must not be User-Agent: a standard header whose value is shown/);
    s.loggedText().should.not.containEql('sub-Secret-77').and.not.containEql('k3');
    await helper.unload();
    // A value no header can carry as typed (HTTP drops spaces at its ends; a line break, a non-ASCII
    // character): every callback would be refused; said naming the field, nothing sent.
    for (const bad of ['k4 ', ' k4', 'k4\n', 'k4\u20ac']) {
      await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-secret-bad' }, { baseUrl: emulator.url }), creds(bad));
      caught = await s.runFailing({});
      caught.assetError.field.should.equal('secret', JSON.stringify(bad));
      caught.error.message.should.match(/secret: must be visible ASCII characters/);
      await helper.unload();
    }
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-secret-bad`)).body.success.should.be.false();
    await s.load(s.flow('asset-subscribe', { action: 'delete', subscriptionId: 'node-test-sub-secret' }, { baseUrl: emulator.url }));
    await s.run({});
  });

  it('a server that echoes the secret in its refusal: redacted in msg.error and msg.assetError.serverMessage', async function () {
    const http = require('http');
    const echo = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ success: false, error: `refused: ${decodeURIComponent(body.replace(/\+/g, ' '))}` }));
      });
    });
    await new Promise((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'node-test-sub-echo' }, { baseUrl: `http://127.0.0.1:${echo.address().port}` }),
        { ...s.credentials(), n1: { secret: 'echoed-Secret-91' } });
      const caught = await s.runFailing({});
      caught.assetError.kind.should.equal('rejected');
      caught.assetError.serverMessage.should.match(/X-DAM-Secret: \*\*\*/);
      s.serialise(caught).should.not.containEql('echoed-Secret-91');
      s.loggedText().should.not.containEql('echoed-Secret-91');
    } finally {
      echo.close();
    }
  });

  it('registers with every editor field, then get returns them in order, then delete', async function () {
    await s.load(s.flow('asset-subscribe', registerProps, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const msg = await s.run({ payload: 'go' });
    msg.payload.should.containDeep({ id: 'node-test-sub-1', success: true });
    msg.subscriptionId.should.equal('node-test-sub-1');
    msg.action.should.equal('register');
    statuses[0].should.containDeep({ fill: 'blue', text: '1 running' });
    statuses[statuses.length - 1].should.containDeep({ fill: 'green', shape: 'dot' });
    await helper.unload();

    const stored = await getStored('node-test-sub-1');
    stored.should.containDeep({
      callback: 'http://127.0.0.1:9/callback', method: 'POST', successCode: 202, retryCount: 5, logicalOperand: 'AND'
    });
    // get masks every header value but the standard content headers (a secret header may have any name); the server has them whole.
    stored.header.should.eql(['Content-Type: application/json', 'X-Secret: ***', 'X-Hook-Check: ***']);
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-1`)).body.subscription.header.should.eql(registerProps.header);
    // ... and query parameter values (they may carry a token); names stay readable.
    stored.queryParam.should.eql(['source=***', 'b=***']);
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/node-test-sub-1`)).body.subscription.queryParam.should.eql(registerProps.queryParam);
    stored.watchPath.should.eql(registerProps.watchPath);
    stored.watchMetadata.should.eql(registerProps.watchMetadata);

    await s.load(s.flow('asset-subscribe', { action: 'delete', subscriptionId: 'node-test-sub-1' }, { baseUrl: emulator.url }));
    const deleted = await s.run({});
    deleted.payload.success.should.be.true();
    await helper.unload();
    await s.load(s.flow('asset-subscribe', { action: 'get', subscriptionId: 'node-test-sub-1' }, { baseUrl: emulator.url }));
    const caught = await s.runFailing({});
    caught.assetError.kind.should.equal('rejected');
  });

  it('empty editor fields are not sent: the server defaults apply', async function () {
    await s.load(s.flow('asset-subscribe', {
      action: 'register', subscriptionId: 'node-test-defaults', callback: 'http://127.0.0.1:9/cb',
      method: '', successCode: '', retryCount: '', logicalOperand: '', watchPath: [], header: [], queryParam: [], watchMetadata: []
    }, { baseUrl: emulator.url }));
    await s.run({});
    await helper.unload();
    const stored = await getStored('node-test-defaults');
    stored.should.containDeep({ method: 'GET', successCode: 200, retryCount: 3, requestType: 'auto', logicalOperand: 'OR' });
    stored.watchPath.should.eql(['/']);
  });

  it('msg.action, msg.subscriptionId and msg.subscription do not replace what the node sets', async function () {
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: 'editor-keeps-id' }, { baseUrl: emulator.url }));
    const msg = await s.run({
      action: 'delete',
      subscriptionId: 'msg-id-unused',
      subscription: { callback: 'https://example.test/hook', retryCount: 1, requestType: 'json' }
    });
    msg.payload.id.should.equal('editor-keeps-id');
    msg.action.should.equal('register');
    await helper.unload();
    const stored = await getStored('editor-keeps-id');
    stored.callback.should.equal(registerProps.callback);
    stored.retryCount.should.equal(5);
    // msg.subscription fills in what the node leaves blank.
    stored.requestType.should.equal('json');
  });

  it('Action "set by msg.action" reads msg.action; a blank id and blank fields read msg.subscriptionId and msg.subscription', async function () {
    await s.load(s.flow('asset-subscribe', {
      ...registerProps, action: 'msg', subscriptionId: '', callback: '', retryCount: '', header: [], watchPath: []
    }, { baseUrl: emulator.url }));
    const msg = await s.run({
      action: 'REGISTER',
      subscriptionId: 'msg-chosen-id',
      subscription: { callback: 'https://example.test/hook', watchPath: '* /override', header: ['Authorization: Bearer t0ken', 'B: 2'], retryCount: 1 }
    });
    msg.payload.id.should.equal('msg-chosen-id');
    msg.action.should.equal('register');
    await helper.unload();
    const stored = await getStored('msg-chosen-id');
    stored.callback.should.equal('https://example.test/hook');
    stored.watchPath.should.eql(['* /override']);
    stored.header.should.eql(['Authorization: ***', 'B: ***']);
    (await s.emulatorGet(`${emulator.url}/review/api/events/assets/subscribe/msg-chosen-id`)).body.subscription.header.should.eql(['Authorization: Bearer t0ken', 'B: 2']);
    stored.retryCount.should.equal(1);
    stored.method.should.equal('POST');
    stored.watchMetadata.should.eql(registerProps.watchMetadata);
  });

  it('takes the id from env and the callback from msg and flow context (TypedInput)', async function () {
    process.env.DAM_TEST_SUB_ID = 'from-env-subscription';
    try {
      await s.load(s.flow('asset-subscribe', {
        action: 'register', subscriptionId: 'DAM_TEST_SUB_ID', subscriptionIdType: 'env',
        callback: 'target.url', callbackType: 'msg', watchPath: ['* /a']
      }, { baseUrl: emulator.url }));
      const msg = await s.run({ target: { url: 'http://127.0.0.1:9/from-msg' } });
      msg.subscriptionId.should.equal('from-env-subscription');
      await helper.unload();
      (await getStored('from-env-subscription')).callback.should.equal('http://127.0.0.1:9/from-msg');

      await s.load(s.flow('asset-subscribe', {
        action: 'register', subscriptionId: 'from-flow-context', callback: 'hook', callbackType: 'flow'
      }, { baseUrl: emulator.url }));
      helper.getNode('n1').context().flow.set('hook', 'http://127.0.0.1:9/from-flow');
      await s.run({});
      await helper.unload();
      (await getStored('from-flow-context')).callback.should.equal('http://127.0.0.1:9/from-flow');
    } finally {
      delete process.env.DAM_TEST_SUB_ID;
    }
  });

  describe('invalid input is refused with an error naming the field', function () {
    const cases = [
      // (the client's option `id`, named by the editor's label: "Id: must be 8 to 40 …")
      ['an id of 7 characters', { subscriptionId: 'abcdefg' }, {}, /^Id\b|^id$/],
      ['an id of 41 characters', { subscriptionId: 'a'.repeat(41) }, {}, /^Id\b|^id$/],
      ['an id with _', { subscriptionId: 'a_b-cdefgh' }, {}, /^Id\b|^id$/],
      ['a missing id', { subscriptionId: '' }, {}, /subscriptionId/],
      ['an unknown msg.action', { action: 'msg' }, { action: 'subscribe-all' }, /msg\.action/],
      ['msg.subscription that is not an object', {}, { subscription: 'callback=x' }, /msg\.subscription/],
      ['a missing callback', { callback: '' }, {}, /callback/],
      ['a callback that is not a URL', { callback: '' }, { subscription: { callback: 'not a url' } }, /callback/],
      ['a bad logicalOperand', { logicalOperand: '' }, { subscription: { logicalOperand: 'XOR' } }, /logicalOperand/],
      ['a bad watchMetadata', { watchMetadata: [] }, { subscription: { watchMetadata: ['no-operator'] } }, /watchMetadata/],
      ['a non-integer successCode', { successCode: 'abc', successCodeType: 'str' }, {}, /successCode/]
    ];
    for (const [title, props, msg, field] of cases) {
      it(title, async function () {
        await s.load(s.flow('asset-subscribe', { ...registerProps, ...props }, { baseUrl: emulator.url }));
        const statuses = s.recordStatus();
        const caught = await s.runFailing(msg);
        caught.assetError.kind.should.equal('invalid-input');
        caught.assetError.field.should.match(field);
        caught.error.message.should.match(field);
        // Reason first: the field and its rule.
        statuses[statuses.length - 1].should.containDeep({ fill: 'red', shape: 'ring' });
        statuses[statuses.length - 1].text.should.match(field);
      });
    }
  });

  it('several messages: two run (the default limit), the third waits; the status shows both, every one completes', async function () {
    await s.load(s.flow('asset-subscribe', { ...registerProps, subscriptionId: '' }, { baseUrl: emulator.url }));
    const statuses = s.recordStatus();
    const out = helper.getNode('out');
    let received = 0;
    const all = new Promise(resolve => out.on('input', () => { if (++received === 3) resolve(); }));
    for (let i = 0; i < 3; i++) helper.getNode('n1').receive({ subscriptionId: `parallel-sub-${i}` });
    await all;
    statuses.map(st => st.text).should.containEql('2 running, 1 queued');
    statuses.map(st => st.text).should.not.containEql('3 running');
    statuses[statuses.length - 1].fill.should.equal('green');
  });

  s.describeFailures('asset-subscribe', async () => ({
    emulator, props: registerProps, msg: () => ({})
  }));
});
