'use strict';
// Issue 23 #1: asset-subscribe registered GET (the spec's default) while asset-event-in listens
// for POST: the server's calls got 404 and the changes were dropped, with nothing in Node-RED.
// - a new asset-subscribe defaults to POST (the editor's defaults; flows saved with "" keep it);
// - the rule "this callback reaches an asset-event-in of this Node-RED with another method"
//   (src/plugin/callback-method.ts, used by the DAM tab) and its browser copy in
//   resources/dam-editor.js (the asset-subscribe dialog) answer the same on every case.
const { loadDamEditor, runEditorScript } = require('../lib/editor-script');
require('should');
const { callbackMethodMismatch } = require('../../dist/plugin/callback-method');



function editorDefaults(type) {
  const registered = {};
  const RED = { _: (key) => key, validators: { typedInput: () => () => true }, nodes: { registerType: (name, def) => { registered[name] = def; } } };
  runEditorScript(type, { RED });
  return registered[type].defaults;
}

const eventIns = [
  { id: 'ein-post', name: 'changes', path: '/dam/events', method: 'post' },
  { id: 'ein-get', name: '', path: 'dam/ping', method: 'get' },
  { id: 'ein-default', name: 'no method saved', path: '/dam/default' }
];
const here = { httpNodeRoot: '/', uiPort: 1880, publicBaseUrls: ['https://nr.example.com'] };

// [subscription, here, expected mismatch (or undefined)]
const CASES = [
  // the case: both nodes with their defaults before the fix
  [{ callback: 'http://127.0.0.1:1880/dam/events' }, here, { nodeId: 'ein-post', eventInMethod: 'POST', subscriptionMethod: 'GET' }],
  [{ callback: 'http://127.0.0.1:1880/dam/events', method: '' }, here, { nodeId: 'ein-post', subscriptionMethod: 'GET' }],
  [{ callback: 'http://127.0.0.1:1880/dam/events', method: 'GET' }, here, { nodeId: 'ein-post' }],
  [{ callback: 'http://127.0.0.1:1880/dam/events', method: 'PUT' }, here, { nodeId: 'ein-post', subscriptionMethod: 'PUT' }],
  [{ callback: 'http://127.0.0.1:1880/dam/events', method: 'POST' }, here, undefined],
  [{ callback: 'http://127.0.0.1:1880/dam/events', method: 'post' }, here, undefined],
  [{ callback: 'http://localhost:1880/dam/events/', method: 'GET' }, here, { nodeId: 'ein-post' }],
  [{ callback: 'http://[::1]:1880/dam/events', method: 'GET' }, here, { nodeId: 'ein-post' }],
  [{ callback: 'https://nr.example.com/dam/events' }, here, { nodeId: 'ein-post' }],
  [{ callback: 'http://10.0.0.5:1880/dam/events' }, here, { nodeId: 'ein-post' }], // Node-RED's own port
  [{ callback: 'http://dam-hooks.example.org/dam/events' }, here, undefined], // another host: not ours
  [{ callback: 'http://127.0.0.1:1880/dam/events?x=1' }, here, { nodeId: 'ein-post' }],
  [{ callback: 'http://127.0.0.1:1880/dam/other' }, here, undefined],
  [{ callback: 'http://127.0.0.1:1880/dam/ping', method: 'POST' }, here, { nodeId: 'ein-get', eventInMethod: 'GET', subscriptionMethod: 'POST', path: '/dam/ping' }],
  [{ callback: 'http://127.0.0.1:1880/dam/ping' }, here, undefined],
  [{ callback: 'http://127.0.0.1:1880/dam/default' }, here, { nodeId: 'ein-default', eventInMethod: 'POST' }],
  // httpNodeRoot
  [{ callback: 'http://127.0.0.1:1880/api/dam/events' }, { ...here, httpNodeRoot: '/api/' }, { nodeId: 'ein-post' }],
  [{ callback: 'http://127.0.0.1:1880/dam/events' }, { ...here, httpNodeRoot: '/api' }, undefined],
  // not a URL, or not set
  [{ callback: 'not a url' }, here, undefined],
  [{ callback: '' }, here, undefined],
  [{}, here, undefined],
  [{ callback: 42 }, here, undefined],
  [{ callback: 'ftp://127.0.0.1/dam/events' }, here, undefined]
];

describe('callback method check (issue 23 #1)', function () {
  const editor = loadDamEditor();

  it('a new asset-subscribe defaults to method POST', function () {
    editorDefaults('asset-subscribe').method.value.should.equal('POST');
  });

  it('asset-event-in still defaults to POST (the two agree)', function () {
    editorDefaults('asset-event-in').method.value.toUpperCase().should.equal('POST');
  });

  it('finds the asset-event-in a callback reaches and says when the methods differ', function () {
    for (const [subscription, where, expected] of CASES) {
      const found = callbackMethodMismatch(subscription, eventIns, where);
      if (expected === undefined) (found === undefined).should.be.true(`${JSON.stringify(subscription)}: ${JSON.stringify(found)}`);
      else found.should.containEql(expected);
    }
  });

  it('the editor copy answers as the runtime on every case', function () {
    for (const [subscription, where] of CASES) {
      const runtime = callbackMethodMismatch(subscription, eventIns, where);
      const browser = editor.callbackMethodMismatch(subscription, eventIns, where);
      String(JSON.stringify(browser)).should.equal(String(JSON.stringify(runtime)), JSON.stringify(subscription));
    }
  });
});
