'use strict';
// The flows the bench deploys into one Node-RED process: ours (asset-* nodes) and the core-node
// baselines side by side. Property names follow nodes/<type>.html `defaults`.
//
// Every transfer flow starts at an inject node pressed through the admin API with the run's
// properties (the inject stamps msg.benchStart itself) and ends in a function node that prints
// one line through functionGlobalContext.benchReport, so timing stays inside Node-RED.

const TAB = 'bench-tab';
const ID = {
  server: 'bench-server',
  upOurs: 'bench-up-ours-inject',
  upCore: 'bench-up-core-inject',
  downOurs: 'bench-down-ours-inject',
  downCore: 'bench-down-core-inject'
};
const EVENT_PATHS = { hop: '/bench/dam-events-hop', ours: '/bench/dam-events', batch: '/bench/dam-events-batch', core: '/bench/core-events', redis: '/bench/redis-events', inbox: '/bench/dam-events-inbox', streams: '/bench/dam-events-streams' };

// Last node of every transfer flow: elapsed time and what the flow produced, then drop the payload.
const DONE_FUNC = `
const p = msg.payload;
const r = { tag: msg.benchTag, ms: Date.now() - msg.benchStart, statusCode: msg.statusCode, filename: msg.filename };
if (Buffer.isBuffer(p)) r.payloadBytes = p.length;
else if (p && typeof p === 'object') r.result = { success: p.success, length: p.length, data: p.data, error: p.error };
msg.payload = null;
global.get('benchReport')(r);
return null;`;

const CATCH_FUNC = `
if (msg.benchTag) {
  const e = msg.error || {};
  global.get('benchReport')({ tag: msg.benchTag, error: String(e.message || e), source: e.source && e.source.type });
}
msg.payload = null;
return null;`;

// What a user would write to post a file with the core http request node (its documented
// multipart/form-data mode): the whole file is msg.payload, a Buffer.
const CORE_FORM_FUNC = `
msg.payload = {
  file: { value: msg.payload, options: { filename: msg.filename.split('/').pop(), contentType: 'application/octet-stream' } },
  destination: msg.destination,
  wait: 'true'
};
msg.headers = { 'content-type': 'multipart/form-data', cookie: msg.cookie };
return msg;`;

// Every count function keeps the time of its last count, as the inbox's (below) needs to: the
// same work per message in every row.
const COUNT_OURS = `
flow.set('ours', (flow.get('ours') || 0) + 1);
flow.set('oursAt', Date.now());
return null;`;

// asset-event-in's per-callback output: msg.payload is the array of the callback's entries.
const COUNT_BATCH = `
flow.set('batch', (flow.get('batch') || 0) + msg.payload.length);
flow.set('batchAt', Date.now());
return null;`;

// asset-event-in at most once -> a change node without rules -> count: the cost of one more node
// on an entry's way (the at-least-once row's asset-event-ack is one), for investigations (ab-events.js --profile).
const COUNT_HOP = `
flow.set('hop', (flow.get('hop') || 0) + 1);
flow.set('hopAt', Date.now());
return null;`;

// Counted after asset-event-ack: an entry of the at-least-once inbox is done once acknowledged.
// With the time of the last count: the inbox hands entries out after it answers, so its burst ends
// at its last acknowledgement (the harness polls the count, which alone would be up to 100 ms late).
const COUNT_INBOX = `
flow.set('inbox', (flow.get('inbox') || 0) + 1);
flow.set('inboxAt', Date.now());
return null;`;

const COUNT_STREAMS = `
flow.set('streams', (flow.get('streams') || 0) + 1);
flow.set('streamsAt', Date.now());
return null;`;

const COUNT_REDIS = `
flow.set('redis', (flow.get('redis') || 0) + 1);
flow.set('redisAt', Date.now());
return null;`;

// Counts each entry; the last part of a callback answers the HTTP request (as asset-event-in
// answers once all its messages are sent).
const COUNT_CORE = `
flow.set('core', (flow.get('core') || 0) + 1);
flow.set('coreAt', Date.now());
if (msg.parts && msg.parts.index === msg.parts.count - 1) {
  msg.payload = { success: true };
  return msg;
}
return null;`;

function fn(id, func, wires, x, y, name) {
  return { id, type: 'function', z: TAB, name: name || id, func, outputs: 1, timeout: 0, noerr: 0,
    initialize: '', finalize: '', libs: [], x, y, wires: [wires || []] };
}
function inject(id, wires, y) {
  return { id, type: 'inject', z: TAB, name: id, props: [], repeat: '', crontab: '', once: false,
    onceDelay: 0.1, topic: '', x: 150, y, wires: [wires] };
}
function httpIn(id, url, method, wires, y) {
  return { id, type: 'http in', z: TAB, name: id, url, method, upload: false, swaggerDoc: '', x: 150, y, wires: [wires] };
}
function httpResponse(id, y) {
  return { id, type: 'http response', z: TAB, name: id, statusCode: '', headers: {}, x: 750, y, wires: [] };
}

/**
 * @param {object} o
 * @param {string} o.emulatorUrl base URL of the emulator
 * @param {string} o.cookie      cookie header value, e.g. JSESSIONID=bench
 * @param {Set<string>} o.types node types the runtime has; a flow of ours whose type is missing
 *   is left out (Node-RED would otherwise stop every flow while it waits for the type)
 * @param {Set<string>} o.parts  which flows: 'ours' (asset-upload/-download), 'core' (core-node
 *   transfers), 'events' (asset-event-in and the core http-in flow, side by side)
 * @param {string} [o.redisUrl] with 'events': a third event flow, asset-event-in with its duplicate filter in this Redis
 */
function buildFlows({ emulatorUrl, cookie, types, parts, redisUrl }) {
  const has = (t) => types.has(t) && types.has('asset-server');
  const nodes = [{ id: TAB, type: 'tab', label: 'bench', disabled: false, info: '' }];

  // --- helpers read by the harness
  nodes.push(
    httpIn('bench-counts-in', '/bench/counts', 'get', ['bench-counts-fn'], 600),
    fn('bench-counts-fn', `msg.payload = { ours: flow.get('ours') || 0, batch: flow.get('batch') || 0, core: flow.get('core') || 0, redis: flow.get('redis') || 0, inbox: flow.get('inbox') || 0, streams: flow.get('streams') || 0, hop: flow.get('hop') || 0, inboxAt: flow.get('inboxAt'), streamsAt: flow.get('streamsAt') }; return msg;`, ['bench-counts-out'], 450, 600),
    httpResponse('bench-counts-out', 600),
    httpIn('bench-reset-in', '/bench/reset', 'post', ['bench-reset-fn'], 640),
    fn('bench-reset-fn', `flow.set('ours', 0); flow.set('batch', 0); flow.set('core', 0); flow.set('redis', 0); flow.set('inbox', 0); flow.set('streams', 0); flow.set('inboxAt', undefined); flow.set('streamsAt', undefined); flow.set('hop', 0); msg.payload = { ok: true }; return msg;`, ['bench-reset-out'], 450, 640),
    httpResponse('bench-reset-out', 640),
    { id: 'bench-catch', type: 'catch', z: TAB, name: '', scope: null, uncaught: false, x: 150, y: 720, wires: [['bench-catch-fn']] },
    fn('bench-catch-fn', CATCH_FUNC, [], 450, 720)
  );

  if (parts.has('core')) {
    // --- 1d: upload with core nodes: file in (one Buffer) -> function (form) -> http request
    nodes.push(
      inject(ID.upCore, ['bench-up-core-file'], 100),
      { id: 'bench-up-core-file', type: 'file in', z: TAB, name: '', filename: 'filename', filenameType: 'msg',
        format: '', chunk: false, sendError: false, encoding: 'none', allProps: false, x: 300, y: 100, wires: [['bench-up-core-form']] },
      fn('bench-up-core-form', CORE_FORM_FUNC, ['bench-up-core-http'], 450, 100),
      { id: 'bench-up-core-http', type: 'http request', z: TAB, name: '', method: 'POST', ret: 'obj', paytoqs: 'ignore',
        url: `${emulatorUrl}/review/api/asset/upload`, tls: '', persist: false, proxy: '', insecureHTTPParser: false,
        authType: '', senderr: true, headers: [], x: 600, y: 100, wires: [['bench-up-core-done']] },
      fn('bench-up-core-done', DONE_FUNC, [], 750, 100)
    );

    // --- 2d: download with core nodes: http request (binary Buffer) -> file out
    nodes.push(
      inject(ID.downCore, ['bench-down-core-http'], 300),
      { id: 'bench-down-core-http', type: 'http request', z: TAB, name: '', method: 'GET', ret: 'bin', paytoqs: 'ignore',
        url: '', tls: '', persist: false, proxy: '', insecureHTTPParser: false, authType: '', senderr: true, headers: [],
        x: 300, y: 300, wires: [['bench-down-core-file']] },
      { id: 'bench-down-core-file', type: 'file', z: TAB, name: '', filename: 'filename', filenameType: 'msg',
        appendNewline: false, createDir: true, overwriteFile: 'true', encoding: 'none', x: 450, y: 300, wires: [['bench-down-core-done']] },
      fn('bench-down-core-done', DONE_FUNC, [], 750, 300)
    );
  }

  if (parts.has('events')) {
    // --- 3b: events with core nodes: http in -> change (entries) -> split -> count -> http response
    nodes.push(
      httpIn('bench-ev-core-in', EVENT_PATHS.core, 'post', ['bench-ev-core-change'], 500),
      { id: 'bench-ev-core-change', type: 'change', z: TAB, name: 'entries',
        rules: [{ t: 'set', p: 'payload', pt: 'msg', to: 'payload.data.entry', tot: 'msg' }], x: 300, y: 500, wires: [['bench-ev-core-split']] },
      { id: 'bench-ev-core-split', type: 'split', z: TAB, name: '', splt: '\\n', spltType: 'str', arraySplt: 1,
        arraySpltType: 'len', stream: false, addname: '', property: 'payload', x: 450, y: 500, wires: [['bench-ev-core-count']] },
      fn('bench-ev-core-count', COUNT_CORE, ['bench-ev-core-out'], 600, 500),
      httpResponse('bench-ev-core-out', 500)
    );
  }

  if (parts.has('ours') && (has('asset-upload') || has('asset-download'))) {
    nodes.push({ id: ID.server, type: 'asset-server', name: 'bench emulator', baseUrl: emulatorUrl,
      timeout: 30, rejectUnauthorized: true, tls: '', publicBaseUrl: '', credentials: { cookie } });

    // --- 1c: inject -> asset-upload (msg.filename) -> done
    nodes.push(
      inject(ID.upOurs, ['bench-up-ours'], 40),
      { id: 'bench-up-ours', type: 'asset-upload', z: TAB, name: '', server: ID.server,
        filename: 'filename', filenameType: 'msg', assetName: '', assetNameType: 'str',
        destination: 'destination', destinationType: 'msg', destinationFuid: '', destinationFuidType: 'num',
        collectionId: '', collectionIdType: 'num', wait: 'true', waitType: 'bool', waitInMinutes: '', waitInMinutesType: 'num',
        expandZip: 'true', expandZipType: 'bool', x: 450, y: 40, wires: [['bench-up-ours-done']] },
      fn('bench-up-ours-done', DONE_FUNC, [], 750, 40)
    );
  }
  if (parts.has('ours') && has('asset-download')) {
    // --- 2c: inject -> asset-download (file mode, msg.filename) -> done
    nodes.push(
      inject(ID.downOurs, ['bench-down-ours'], 240),
      { id: 'bench-down-ours', type: 'asset-download', z: TAB, name: '', server: ID.server,
        fuid: 'fuid', fuidType: 'msg', rrn: '', rrnType: 'num', collectionId: '', collectionIdType: 'num',
        output: 'file', filename: 'filename', filenameType: 'msg', x: 450, y: 240, wires: [['bench-down-ours-done']] },
      fn('bench-down-ours-done', DONE_FUNC, [], 750, 240)
    );
  }
  if (parts.has('events') && types.has('asset-event-in')) {
    // --- 3a: asset-event-in (defaults: one msg per entry, duplicate filter on) -> count
    nodes.push(
      { id: 'bench-ev-ours-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.ours, method: 'post',
        successCode: '', output: 'entry', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false,
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 440, wires: [['bench-ev-ours-count']] },
      fn('bench-ev-ours-count', COUNT_OURS, [], 450, 440),
      { id: 'bench-ev-hop-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.hop, method: 'post',
        successCode: '', output: 'entry', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false,
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 410, wires: [['bench-ev-hop-change']] },
      { id: 'bench-ev-hop-change', type: 'change', z: TAB, name: '', rules: [], x: 350, y: 410, wires: [['bench-ev-hop-count']] },
      fn('bench-ev-hop-count', COUNT_HOP, [], 550, 410),
      // --- 3c: the same with one message per callback (output: callback)
      { id: 'bench-ev-batch-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.batch, method: 'post',
        successCode: '', output: 'callback', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false,
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 470, wires: [['bench-ev-batch-count']] },
      fn('bench-ev-batch-count', COUNT_BATCH, [], 450, 470)
    );
  }
  if (parts.has('events') && types.has('asset-event-in') && types.has('asset-event-ack')) {
    // --- 3d: asset-event-in with Delivery "at least once" (embedded inbox in the user dir) -> ack -> count.
    // 100 in flight and a bound no burst reaches: the row measures the inbox, not the back-pressure.
    nodes.push(
      { id: 'bench-ev-inbox-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.inbox, method: 'post',
        successCode: '', output: 'entry', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false,
        delivery: 'atLeastOnce', inboxMax: 10000000, maxInFlight: 100, outputs: 2,
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 500, wires: [['bench-ev-inbox-ack'], []] },
      { id: 'bench-ev-inbox-ack', type: 'asset-event-ack', z: TAB, name: '', action: 'ack', x: 350, y: 500, wires: [['bench-ev-inbox-count']] },
      fn('bench-ev-inbox-count', COUNT_INBOX, [], 550, 500)
    );
  }
  if (parts.has('events') && types.has('asset-event-in') && types.has('asset-redis') && redisUrl) {
    // --- 3c: the same asset-event-in with its duplicate filter in Redis -> count
    nodes.push(
      { id: 'bench-redis', type: 'asset-redis', name: 'bench', url: redisUrl, prefix: 'bench:', timeout: 1000, lease: 10 },
      { id: 'bench-ev-redis-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.redis, method: 'post',
        successCode: '', output: 'entry', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false, redis: 'bench-redis',
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 480, wires: [['bench-ev-redis-count']] },
      fn('bench-ev-redis-count', COUNT_REDIS, [], 450, 480)
    );
  }
  if (parts.has('events') && types.has('asset-event-in') && types.has('asset-event-ack') && types.has('asset-redis') && redisUrl) {
    // In flight 100, as the journal inbox's row; BENCH_STREAMS_IN_FLIGHT changes it for investigations only.
    const STREAMS_IN_FLIGHT = Number(process.env.BENCH_STREAMS_IN_FLIGHT) || 100;
    // --- 3e: at least once with its inbox on a Redis Stream (an asset-redis node chosen) -> ack -> count.
    nodes.push(
      { id: 'bench-redis-streams', type: 'asset-redis', name: 'bench streams', url: redisUrl, prefix: 'benchs:', timeout: 1000, lease: 10 },
      { id: 'bench-ev-streams-in', type: 'asset-event-in', z: TAB, name: '', path: EVENT_PATHS.streams, method: 'post',
        successCode: '', output: 'entry', emitEmpty: false, maxBodyMB: '', secretHeader: '', subscriptionId: '',
        checkId: true, dedup: true, dedupWindow: '', dedupMax: '', server: '', manage: false, redis: 'bench-redis-streams',
        delivery: 'atLeastOnce', inboxMax: 10000000, maxInFlight: STREAMS_IN_FLIGHT, outputs: 2,
        watchPath: [], watchMetadata: [], logicalOperand: '', retryCount: '', x: 150, y: 520, wires: [['bench-ev-streams-ack'], []] },
      { id: 'bench-ev-streams-ack', type: 'asset-event-ack', z: TAB, name: '', action: 'ack', x: 350, y: 520, wires: [['bench-ev-streams-count']] },
      fn('bench-ev-streams-count', COUNT_STREAMS, [], 550, 520)
    );
  }
  return nodes;
}

module.exports = { buildFlows, ID, EVENT_PATHS };
