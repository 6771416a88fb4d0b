/**
 * Runs a real Node-RED as a child process: writes its settings file, spawns
 * `node-red/red.js` from the project's own dependencies, waits until the admin
 * API answers, and stops it with SIGINT (Node-RED's own clean shutdown).
 *
 * Used by `npm start` (src/demo/start.ts) and by the end-to-end tests.
 */
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export interface NodeRedSettings {
  /** Node-RED user directory (flows, credentials, settings.js). */
  userDir: string;
  /** Editor, admin API and httpNode port (all on one server). */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Encrypts the credentials file; fixed so that a restart can read it back. */
  credentialSecret: string;
  /**
   * Extra folders Node-RED scans for nodes. A folder whose package.json has a
   * `node-red` section is loaded as that module (with its examples, icons, locales),
   * exactly as if it were installed: this is how the demo loads this package.
   */
  nodesDir?: string[];
  /** Node-RED's log level. Default `info`. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /** More settings, JSON values only, written over the defaults (e.g. `runtimeState` for tests). */
  extraSettings?: Record<string, unknown>;
}

/** Writes `<userDir>/settings.js` (overwritten every time) and returns its path. */
export function writeSettings(settings: NodeRedSettings): string {
  fs.mkdirSync(settings.userDir, { recursive: true });
  const values = {
    uiHost: settings.host ?? '127.0.0.1',
    uiPort: settings.port,
    flowFile: 'flows.json',
    flowFilePretty: true,
    credentialSecret: settings.credentialSecret,
    nodesDir: settings.nodesDir ?? [],
    // Function nodes of the demo load the built-in `fs` and `path` modules through their Setup tab.
    functionExternalModules: true,
    logging: { console: { level: settings.logLevel ?? 'info', metrics: false, audit: false } },
    // The launcher reads Node-RED's "Started flows" log line: keep the runtime's messages in English.
    lang: 'en-US',
    // Never call out to the internet (update checks) from a sandbox or a test.
    telemetry: { enabled: false },
    diagnostics: { enabled: true, ui: false },
    editorTheme: { tours: false, projects: { enabled: false } },
    ...settings.extraSettings
  };
  const file = path.join(settings.userDir, 'settings.js');
  const text = '// Written by the DAM demo / tests on every start: edits here are replaced.\n' +
    `module.exports = ${JSON.stringify(values, null, 2)};\n`;
  fs.writeFileSync(file, text);
  return file;
}

/** Path of Node-RED's start script in the project's own dependencies. */
export function nodeRedScript(fromDir: string): string {
  return require.resolve('node-red/red.js', { paths: [fromDir] });
}

export interface NodeRedProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port> (no trailing slash). */
  url: string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** SIGINT, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<number | string>;
  /**
   * Replaces all flows (full deploy, see {@link deployFlows}) and resolves once Node-RED has
   * started them: the admin API answers before the new flows are running.
   */
  deploy(flows: object[], timeoutMs?: number): Promise<void>;
}

export interface StartNodeRedOptions extends NodeRedSettings {
  /** Folder to resolve `node-red` from. Default: this package's root. */
  nodeRedFrom?: string;
  /** Node binary. Default: the one running this code. */
  nodeBinary?: string;
  /** Extra environment for the child. */
  env?: NodeJS.ProcessEnv;
  /** Receives each line Node-RED prints (stdout and stderr). Default: dropped. */
  onLine?: (line: string) => void;
  /** How long to wait for the admin API. Default 60 s. */
  readyTimeoutMs?: number;
  /** Aborting while waiting for Node-RED stops it and rejects. */
  signal?: AbortSignal;
}

const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');

/**
 * Starts Node-RED and resolves once its admin API answers (flows are loaded and
 * started by then: Node-RED only listens after its runtime has started).
 * Rejects, with the last lines Node-RED printed, if it exits or times out first.
 */
export async function startNodeRed(options: StartNodeRedOptions): Promise<NodeRedProcess> {
  const settingsFile = writeSettings(options);
  const script = nodeRedScript(options.nodeRedFrom ?? PACKAGE_ROOT);
  const child = spawn(options.nodeBinary ?? process.execPath,
    [script, '--userDir', options.userDir, '--settings', settingsFile],
    { cwd: options.userDir, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });

  const recent: string[] = [];
  // Deploys whose flows have started: a "Started" line after a deploy's "Updated flows" (Node-RED
  // answers a deploy before its flows start, and the start-up's own "Started flows" can reach this
  // process after /settings answers).
  let deploysStarted = 0;
  let deployUnderWay = false;
  const onLine = (line: string) => {
    recent.push(line);
    if (recent.length > 30) recent.shift();
    if (/\] Updated flows\s*$/.test(line)) deployUnderWay = true;
    else if (deployUnderWay && /\] Started (flows|modified nodes|modified flows)\s*$/.test(line)) { deployUnderWay = false; deploysStarted++; }
    options.onLine?.(line);
  };
  forEachLine(child.stdout!, onLine);
  forEachLine(child.stderr!, onLine);

  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const url = `http://${options.host ?? '127.0.0.1'}:${options.port}`;

  const stop = async (graceMs = 15000): Promise<number | string> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try { return await exited; } finally { clearTimeout(timer); }
    }
    return exited;
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 60000);
  let exitedEarly: number | string | undefined;
  exited.then((code) => { exitedEarly = code; });
  for (;;) {
    if (options.signal?.aborted) {
      await stop();
      throw new Error('Node-RED start was cancelled');
    }
    if (exitedEarly !== undefined) {
      throw new Error(`Node-RED exited (${exitedEarly}) before it was ready. Its last lines:\n${recent.join('\n')}`);
    }
    if (Date.now() > deadline) {
      await stop(2000);
      throw new Error(`Node-RED did not answer on ${url} in time. Its last lines:\n${recent.join('\n')}`);
    }
    if (await answers(`${url}/settings`)) break;
    await delay(200);
  }
  const deploy = async (flows: object[], timeoutMs = 30000): Promise<void> => {
    const before = deploysStarted;
    await deployFlows(url, flows);
    const until = Date.now() + timeoutMs;
    while (deploysStarted === before) {
      if (Date.now() > until) throw new Error(`Node-RED did not start the deployed flows in time. Its last lines:\n${recent.join('\n')}`);
      await delay(50);
    }
  };
  return { child, url, exited, stop, deploy };
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    // 401: up, with adminAuth on (the admin API wants a token).
    return res.ok || res.status === 401;
  } catch {
    return false;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function forEachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split(/\r?\n/);
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  stream.on('end', () => { if (rest) onLine(rest); });
}

/**
 * Replaces all flows through the admin API (POST /flows, full deploy). Credentials
 * go in each node's `credentials` property; Node-RED strips them from the flows
 * file and stores them encrypted with the credential secret.
 */
export async function deployFlows(url: string, flows: object[]): Promise<void> {
  const res = await fetch(`${url}/flows`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': 'full', 'Node-RED-API-Version': 'v1' },
    body: JSON.stringify(flows)
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`Node-RED refused the flows (HTTP ${res.status}): ${text.slice(0, 500)}`);
}
