'use strict';
// asset-event-in's body guard (src/nodes/asset-event-in/route.ts) on a real express stack shaped
// as Node-RED's: a root app, the editor API's app with its JSON parser mounted at httpAdminRoot
// first, httpNode mounted at httpNodeRoot after it. A request is the node's, unread, exactly when
// express routes it to the node's handler; any other request keeps its body for its own route.
const http = require('http');
const express = require('express');
const should = require('should');
const { openRoute } = require('../../dist/nodes/asset-event-in/route');
const { READ_OWN_BODY } = require('../../dist/events');

/** Node-RED's shape: the admin parser reads every JSON body under httpAdminRoot before httpNode's routes. */
async function start({ httpNodeRoot = '/', httpAdminRoot = '/' } = {}) {
  const root = express();
  const admin = express();
  admin.use(express.json());
  admin.post('/flows', (req, res) => res.json({ route: 'admin', body: req.body ?? null }));
  const httpNode = express();
  root.use(httpAdminRoot, admin);
  root.use(httpNodeRoot, httpNode);
  const server = http.createServer(root);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const RED = { settings: { httpNodeRoot }, httpNode };
  return { RED, httpNode, port: server.address().port, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** Our handler's answer: whether the request came to it unread, and its params. */
function ours(name) {
  return (req, res) => res.json({ route: name, unread: req[READ_OWN_BODY] === true && req.body === undefined, params: req.params });
}

/** A core http in route: its own JSON parser, then the body it got. */
function coreRoute(httpNode, path) {
  httpNode.post(path, express.json(), (req, res) => res.json({ route: 'core', body: req.body ?? null }));
}

function post(port, path, body = '{"rrn":18446744073709551615}') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, json: /json/.test(res.headers['content-type'] || '') ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('asset-event-in body guard: a request is guarded exactly when express routes it to the node', function () {
  let app;
  afterEach(async function () { if (app) await app.close(); app = undefined; });

  it('a path with a parameter is guarded; a core http in route registered before it keeps its body', async function () {
    app = await start();
    coreRoute(app.httpNode, '/hooks/ping');
    openRoute(app.RED, 'post', '/hooks/:source', ours('hooks'));
    (await post(app.port, '/hooks/dam-1')).json.should.eql({ route: 'hooks', unread: true, params: { source: 'dam-1' } });
    (await post(app.port, '/hooks/ping', '{"a":1}')).json.should.eql({ route: 'core', body: { a: 1 } });
  });

  it('an http in route registered after it (a redeploy of only that node) is not reached: the node\'s route answers, unread', async function () {
    app = await start();
    openRoute(app.RED, 'post', '/hooks/:source', ours('hooks'));
    coreRoute(app.httpNode, '/hooks/ping');
    (await post(app.port, '/hooks/ping')).json.should.eql({ route: 'hooks', unread: true, params: { source: 'ping' } });
  });

  it('case and a trailing slash as express routes them; another path is not guarded', async function () {
    app = await start();
    openRoute(app.RED, 'post', '/dam/events', ours('events'));
    coreRoute(app.httpNode, '/dam/other');
    (await post(app.port, '/DAM/Events/')).json.should.eql({ route: 'events', unread: true, params: {} });
    (await post(app.port, '/dam/events?x=1')).json.route.should.equal('events');
    (await post(app.port, '/dam/other', '{"b":2}')).json.should.eql({ route: 'core', body: { b: 2 } });
  });

  it('under httpNodeRoot /api: the mount in any case, a doubled slash after it, an absolute-form target', async function () {
    app = await start({ httpNodeRoot: '/api' });
    openRoute(app.RED, 'post', '/x', ours('x'));
    for (const path of ['/api/x', '/API/x', '/api//x', `http://127.0.0.1:${'PORT'}/api/x`]) {
      const r = await post(app.port, path.replace('PORT', app.port));
      r.json.should.eql({ route: 'x', unread: true, params: {} }, path);
    }
    (await post(app.port, '/flows', '{"c":3}')).json.should.eql({ route: 'admin', body: { c: 3 } });
  });

  it('a closed route is no longer guarded, another node on the same path still is', async function () {
    app = await start();
    const closeFirst = openRoute(app.RED, 'post', '/dam/events', ours('first'));
    openRoute(app.RED, 'post', '/dam/events', ours('second'));
    closeFirst();
    (await post(app.port, '/dam/events')).json.should.eql({ route: 'second', unread: true, params: {} });
  });

  it('an invalid percent-encoding in a parameter: express answers 400 itself, nothing crashes', async function () {
    app = await start();
    openRoute(app.RED, 'post', '/hooks/:source', ours('hooks'));
    should((await post(app.port, '/hooks/%E0%A4%A')).status).equal(400);
  });
});
