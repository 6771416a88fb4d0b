'use strict';
// A real Node-RED process for the reliability suites, through the project's own launcher
// (dist/demo/node-red.js, as `npm start` and the e2e tests use it), plus a collector: flows report
// messages by POSTing them to this test process.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { startNodeRed } = require('../../../dist/demo/node-red');
const { freePort, startCollector } = require('../../e2e/support');
const { deployStarted } = require('./support');

const ROOT = path.resolve(__dirname, '..', '..', '..');


/**
 * Starts Node-RED with this package loaded from the project folder (nodesDir), in a fresh user dir.
 * Every line it prints is kept in `lines`. `stop()` stops it and removes the user dir unless `keep`.
 */
async function startRealNodeRed({ credentialSecret = 'reliability-credential-key', logLevel = 'info', env } = {}) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-reliability-nr-'));
  const lines = [];
  const nodeRed = await startNodeRed({
    userDir, port: await freePort(), credentialSecret, nodesDir: [ROOT], logLevel, env,
    onLine: (line) => lines.push(line)
  });
  return {
    ...nodeRed,
    userDir,
    lines,
    /** POST /inject/:id, what the editor's inject button does. */
    async inject(id) {
      const res = await fetch(`${nodeRed.url}/inject/${id}`, { method: 'POST' });
      if (res.status !== 200) throw new Error(`inject ${id}: HTTP ${res.status}`);
    },
    /** Deploys with the given type (full, flows or nodes), as the editor's Deploy menu does. */
    async deployAs(type, flows) {
      const before = lines.length;
      const res = await fetch(`${nodeRed.url}/flows`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': type, 'Node-RED-API-Version': 'v1' },
        body: JSON.stringify(flows)
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`Node-RED refused the flows (HTTP ${res.status}): ${text.slice(0, 500)}`);
      const until = Date.now() + 30000;
      while (!deployStarted(lines, before)) {
        if (Date.now() > until) throw new Error(`Node-RED did not start the deployed flows. Last lines:\n${lines.slice(-30).join('\n')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stopAndClean({ keep = false } = {}) {
      await nodeRed.stop();
      if (!keep) fs.rmSync(userDir, { recursive: true, force: true });
    }
  };
}


/**
 * Two core nodes that report every msg they get to the collector, tagged `tag`: a function that
 * copies the msg (Buffers as base64) into a report, and an http request that POSTs it.
 * Returns [functionNode, httpRequestNode]; wire things to `${id}`.
 */
function reporter(id, z, tag, collectorUrl) {
  return [
    {
      id, type: 'function', z, name: `report ${tag}`, outputs: 1, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [],
      func: [
        'const out = {};',
        'for (const key of Object.keys(msg)) {',
        '    const value = msg[key];',
        '    out[key] = Buffer.isBuffer(value) ? { base64: value.toString("base64") } : value;',
        '}',
        `return { payload: { tag: ${JSON.stringify(tag)}, msg: out }, headers: { "content-type": "application/json" } };`
      ].join('\n'),
      x: 0, y: 0, wires: [[`${id}-post`]]
    },
    {
      id: `${id}-post`, type: 'http request', z, name: `post ${tag}`, method: 'POST', ret: 'txt', paytoqs: 'ignore', url: collectorUrl,
      tls: '', persist: false, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], x: 0, y: 0, wires: [[]]
    }
  ];
}

module.exports = { ROOT, freePort, startRealNodeRed, startCollector, reporter };
