/**
 * The flow `npm start` deploys: a hot folder that ingests into the server, and a
 * mirror that follows the server's changes back to disk.
 *
 *   asset-hot-folder inbox/ -> /inbox on the server, then moved to inbox/done/
 *   asset-event-in (owns `* /inbox`, delivery at least once) -> added|modified -> asset-download to mirror/<path>
 *       -> asset-export -> file out <name>.metadata.json -> asset-event-ack (a failure: Catch -> reject)
 *
 * Values that depend on the machine (folders, ports) are written into the flow as
 * literals, so the editor shows them plainly; start.ts re-deploys the flow when they
 * change and the user has not edited it.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

export interface DemoFlowOptions {
  /** Folder watched for new files (absolute). Files are moved to `<inbox>/done/` once uploaded. */
  inboxDir: string;
  /** Folder the server's /inbox is mirrored into (absolute): `<mirror>/inbox/<name>`. */
  mirrorDir: string;
  /** Emulator base URL, e.g. http://127.0.0.1:8873. */
  serverUrl: string;
  /** Where the server reaches this Node-RED, e.g. http://127.0.0.1:1880. */
  publicBaseUrl: string;
  /** Session cookie value for the emulator. */
  cookie: string;
}

/** Subscription the demo's asset-event-in owns on the emulator. */
export const DEMO_SUBSCRIPTION_ID = 'dam-demo-mirror';
/** Route of the demo's asset-event-in under httpNodeRoot. */
export const DEMO_CALLBACK_PATH = '/dam/demo/changes';
/** Shared secret of the demo webhook: not a real secret, it shows the feature. */
const DEMO_WEBHOOK_SECRET = 'demo-webhook-secret';

/**
 * Node ids: fixed, so a re-deploy updates the same nodes, and hex like the editor's own
 * (the editor uses ids in element ids). `id('watch')` is readable in this file.
 */
function id(name: string): string {
  return crypto.createHash('sha256').update('dam-demo/' + name).digest('hex').slice(0, 16);
}

const TAB = id('tab');
const SERVER = id('server');

/** Function-node `libs` entries: Node-RED loads built-in modules for the Setup tab. */
const FS_LIBS = [{ var: 'fs', module: 'fs' }, { var: 'path', module: 'path' }];

/** Node-RED function body lines joined; `${JSON.stringify(x)}` embeds literals safely. */
function code(...lines: string[]): string {
  return lines.join('\n');
}

/** The demo flow, credentials included (for POST /flows). */
export function demoFlow(o: DemoFlowOptions): object[] {
  const mirror = JSON.stringify(o.mirrorDir);
  const mirrorNodes = [id('events'), id('target'), id('download'), id('export'), id('metafile'), id('writemeta')];
  const node = (props: Record<string, unknown>) => ({ z: TAB, ...props });

  return [
    { id: TAB, type: 'tab', label: 'DAM demo', disabled: false,
      info: 'Deployed by `npm start`. See docs/demo.md. Edit freely: `npm start` keeps a flow you changed.' },

    { id: SERVER, type: 'asset-server', name: 'local emulator', baseUrl: o.serverUrl, timeout: 30,
      rejectUnauthorized: true, tls: '', publicBaseUrl: o.publicBaseUrl, credentials: { cookie: o.cookie } },

    // ---------------------------------------------------------------- hot-folder ingest
    node({ id: id('c1'), type: 'comment', name: `Hot folder: files dropped into ${o.inboxDir} are uploaded to /inbox, then moved to done/`,
      info: 'The asset-hot-folder node takes every file dropped into the folder once its size and time have not ' +
        'changed for 2 s (the demo is quick; the node\'s default is 5 s), uploads it to /inbox and moves it to ' +
        'done/ once the server answered success. Hidden and temporary files (.part, .tmp, .crdownload, ~$...) ' +
        'are skipped; files already waiting when Node-RED starts are taken too. A file that fails for good goes ' +
        'to failed/ with <name>.error.json beside it; a busy or unreachable server is tried again. A file leaves ' +
        'the inbox only after the server\'s success, so nothing is lost if Node-RED stops.', x: 400, y: 40, wires: [] }),
    node({ id: id('hotFolder'), type: 'asset-hot-folder', name: 'inbox', server: SERVER, folder: o.inboxDir,
      recursive: false, mode: 'events', untouchedSeconds: 2, rescanSeconds: 5, include: '', exclude: '',
      afterUpload: 'move', doneFolder: path.join(o.inboxDir, 'done'), failedFolder: path.join(o.inboxDir, 'failed'), subfolders: 'keep',
      assetName: '', assetNameType: 'str', destination: '/inbox', destinationType: 'str', destinationFuid: '', destinationFuidType: 'num',
      collectionId: '', collectionIdType: 'num', wait: 'true', waitType: 'bool',
      waitInMinutes: '', waitInMinutesType: 'num', expandZip: 'false', expandZipType: 'bool', maxParallel: 2, retries: 2,
      x: 140, y: 100, wires: [[id('ingested')], [id('ingestError')]] }),
    node({ id: id('ingested'), type: 'debug', name: 'ingested', active: true, tosidebar: true, console: false,
      tostatus: false, complete: 'filename', targetType: 'msg', statusVal: '', statusType: 'auto', x: 400, y: 100, wires: [] }),
    node({ id: id('ingestError'), type: 'debug', name: 'ingest error', active: true,
      tosidebar: true, console: true, tostatus: false, complete: 'assetError.message', targetType: 'msg', statusVal: '', statusType: 'auto',
      x: 410, y: 140, wires: [] }),

    // ---------------------------------------------------------------- change mirror
    node({ id: id('c2'), type: 'comment', name: `Mirror: every asset added or modified under /inbox is downloaded to ${o.mirrorDir}, with its metadata beside it`,
      info: `The asset-event-in node owns the subscription \`${DEMO_SUBSCRIPTION_ID}\` on \`* /inbox\`: it registers ` +
        'it on deploy (callback: the server config\'s public base URL + the node\'s path) and deletes it ' +
        'when the node is removed. Each changed asset arrives as one message; the latest revision is ' +
        'downloaded to mirror/<server path> and its metadata export is written beside it as ' +
        '<name>.metadata.json.\n\nDelivery is *at least once*: each change is stored in the node\'s inbox before the ' +
        'server gets its answer, and stays there until **acknowledge** has seen the files written; a failure ' +
        '(Catch) **rejects** it, so it is delivered again later; one that keeps failing is parked (second output, DAM tab). ' +
        'Stop Node-RED in the middle of a burst: nothing is lost.', x: 480, y: 240, wires: [] }),
    node({ id: id('events'), type: 'asset-event-in', name: 'changes in /inbox', path: DEMO_CALLBACK_PATH, method: 'post',
      successCode: 200, output: 'entry', emitEmpty: false, maxBodyMB: 50, secretHeader: 'X-DAM-Secret',
      subscriptionId: DEMO_SUBSCRIPTION_ID, checkId: true, dedup: true, dedupWindow: 600, dedupMax: 10000,
      server: SERVER, manage: true, watchPath: ['* /inbox'], watchMetadata: [], logicalOperand: '', retryCount: '',
      delivery: 'atLeastOnce', inboxMax: 10000, inboxMaxMB: 1024, maxInFlight: 10, visibilityTimeout: 600, maxDeliveries: 5, rejectBackoff: 10, holdMax: 5, outputs: 2,
      credentials: { secret: DEMO_WEBHOOK_SECRET }, x: 130, y: 300, wires: [[id('switch')], [id('parked')]] }),
    node({ id: id('switch'), type: 'switch', name: 'added or modified', property: 'payload.action', propertyType: 'msg',
      rules: [{ t: 'eq', v: 'added', vt: 'str' }, { t: 'eq', v: 'modified', vt: 'str' }, { t: 'else' }], checkall: 'false', repair: false,
      outputs: 3, x: 380, y: 300, wires: [[id('target')], [id('target')], [id('ack')]] }),
    node({ id: id('target'), type: 'function', name: 'mirror path', libs: FS_LIBS, outputs: 2, timeout: 0, noerr: 0,
      initialize: '', finalize: '', x: 560, y: 300, wires: [[id('download')], [id('ack')]],
      func: code(
        `const mirror = ${mirror};`,
        'const serverPath = String(msg.payload.path || "");',
        'const target = path.resolve(mirror, serverPath.replace(/^[\\\\/]+/, ""));',
        '// Never write outside the mirror folder, whatever path the server reports.',
        'if (!target.startsWith(mirror + path.sep)) {',
        '    node.warn("skipped: path outside the mirror: " + serverPath);',
        '    return [null, msg];  // nothing to do: acknowledged',
        '}',
        'msg.fuid = msg.payload.assetId;',
        'msg.rrn = -1;  // a mirror keeps the latest revision',
        'msg.filename = target;',
        'msg.topic = serverPath;',
        'return msg;') }),
    node({ id: id('download'), type: 'asset-download', name: 'download latest', server: SERVER,
      fuid: 'fuid', fuidType: 'msg', rrn: '-1', rrnType: 'num', collectionId: '', collectionIdType: 'num',
      output: 'file', filename: 'filename', filenameType: 'msg', x: 720, y: 300, wires: [[id('export')]] }),
    node({ id: id('export'), type: 'asset-export', name: 'export metadata', server: SERVER,
      fuid: 'fuid', fuidType: 'msg', rrn: '-1', rrnType: 'num', exportType: 'json', exportTypeType: 'fmt',
      x: 900, y: 300, wires: [[id('metafile')]] }),
    node({ id: id('metafile'), type: 'function', name: 'metadata file name', outputs: 1, timeout: 0, noerr: 0,
      initialize: '', finalize: '', libs: [], x: 1080, y: 300, wires: [[id('writemeta')]],
      func: code(
        'msg.filename = msg.filename + ".metadata.json";',
        'msg.payload = JSON.stringify(msg.payload, null, 2) + "\\n";',
        'return msg;') }),
    node({ id: id('writemeta'), type: 'file', name: 'write', filename: 'filename', filenameType: 'msg',
      appendNewline: false, createDir: true, overwriteFile: 'true', encoding: 'utf8', x: 1240, y: 300, wires: [[id('mirrored'), id('ack')]] }),
    node({ id: id('ack'), type: 'asset-event-ack', name: 'acknowledge', action: 'ack', x: 1400, y: 340, wires: [[]] }),
    node({ id: id('mirrored'), type: 'debug', name: 'mirrored', active: true, tosidebar: true, console: false,
      tostatus: false, complete: 'topic', targetType: 'msg', statusVal: '', statusType: 'auto', x: 1380, y: 300, wires: [] }),
    node({ id: id('catchMirror'), type: 'catch', name: 'mirror failed', scope: mirrorNodes, uncaught: false,
      x: 560, y: 360, wires: [[id('mirrorError'), id('reject')]] }),
    node({ id: id('reject'), type: 'asset-event-ack', name: 'reject (deliver again later)', action: 'reject', x: 770, y: 400, wires: [[]] }),
    node({ id: id('parked'), type: 'debug', name: 'parked', active: true, tosidebar: true, console: true,
      tostatus: false, complete: 'true', targetType: 'full', statusVal: '', statusType: 'auto', x: 320, y: 380, wires: [] }),
    node({ id: id('mirrorError'), type: 'debug', name: 'mirror error', active: true, tosidebar: true, console: true,
      tostatus: false, complete: 'error.message', targetType: 'msg', statusVal: '', statusType: 'auto', x: 750, y: 360, wires: [] })
  ];
}

/** sha256 of a value's JSON, or of a file's bytes. */
export function sha256(data: string | Buffer): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/** What start.ts does with the flows file it finds. */
export type FlowDecision =
  | 'install'     // no flows file yet: deploy the demo flow
  | 'update'      // the flows file is the one we deployed, but the demo flow changed (folders, ports, version)
  | 'unchanged'   // the flows file is the one we deployed and still current
  | 'keep-user';  // someone edited the flows: leave them alone

/** Remembered beside the flows file: what we deployed last and what Node-RED wrote for it. */
export interface DeployMarker {
  demoFlowSha: string;
  flowsFileSha: string;
}

export const MARKER_FILE = '.dam-demo-flow.json';

/** Decides, from the user dir's files, whether to (re)deploy the demo flow. */
export function decideFlow(userDir: string, demoFlowSha: string): FlowDecision {
  let flowsFile: Buffer;
  try {
    flowsFile = fs.readFileSync(path.join(userDir, 'flows.json'));
  } catch {
    return 'install';
  }
  let marker: DeployMarker | undefined;
  try {
    marker = JSON.parse(fs.readFileSync(path.join(userDir, MARKER_FILE), 'utf8')) as DeployMarker;
  } catch {
    marker = undefined;
  }
  if (!marker || marker.flowsFileSha !== sha256(flowsFile)) return 'keep-user';
  return marker.demoFlowSha === demoFlowSha ? 'unchanged' : 'update';
}

/** Records what was deployed, after Node-RED has written its flows file. */
export function writeMarker(userDir: string, demoFlowSha: string): void {
  const flowsFileSha = sha256(fs.readFileSync(path.join(userDir, 'flows.json')));
  const marker: DeployMarker = { demoFlowSha, flowsFileSha };
  fs.writeFileSync(path.join(userDir, MARKER_FILE), JSON.stringify(marker, null, 2) + '\n');
}
