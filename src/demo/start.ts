/**
 * `npm start`: the sandbox. Starts the emulator (in this process) and a real Node-RED
 * (a child process, from this project's devDependencies) with this package loaded,
 * deploys the demo flow, prints where to look, and stops both on Ctrl-C.
 *
 * Environment:
 *   PORT               Node-RED editor and httpNode port (default 1880)
 *   DAM_EMULATOR_PORT  emulator port (default 8873)
 *   DAM_DEMO_DIR       folder for all demo state (default <project>/.demo)
 *
 * See docs/demo.md.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { AssetClient } from '../api/client';
import { startEmulator, type RunningEmulator } from '../emulator';
import { DEMO_SUBSCRIPTION_ID, decideFlow, demoFlow, sha256, writeMarker } from './demo-flow';
import { startNodeRed, type NodeRedProcess } from './node-red';

const PROJECT_DIR = path.resolve(__dirname, '..', '..');
const HOST = '127.0.0.1';
const COOKIE = 'local-dev';
/** Fixed so the credentials file written by one start can be read by the next. Not a secret: it is a local demo. */
const CREDENTIAL_SECRET = 'dam-demo-sandbox';
/** Retry delay of the demo's emulator: short, so a callback missed while Node-RED restarts comes soon. */
const RETRY_DELAY_MS = 5000;

/** A clear message for the user, printed without a stack trace. */
class DemoError extends Error {}

function portFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DemoError(`${name} must be a port number from 1 to 65535, got "${text}"`);
  }
  return port;
}

/** Fails early, with a hint, when a port is taken (Node-RED's own message is buried in its log). */
function checkPortFree(port: number, envName: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE'
        ? new DemoError(`Port ${port} on ${HOST} is in use (is another \`npm start\` running?). Set ${envName} to use another port.`)
        : err);
    });
    server.listen(port, HOST, () => server.close(() => resolve()));
  });
}

/**
 * Waits until the demo's asset-event-in has registered its subscription, so that a
 * file dropped once the banner shows is sure to come back to the mirror.
 */
async function waitForSubscription(serverUrl: string, timeoutMs: number): Promise<boolean> {
  const client = new AssetClient({ baseUrl: serverUrl, cookie: COOKIE, timeout: 2000 });
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      try {
        if ((await client.getSubscription(DEMO_SUBSCRIPTION_ID)).success) return true;
      } catch {
        // not registered yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return false;
  } finally {
    client.close();
  }
}

/** A path as the user would type it: relative to the current folder when inside it. */
function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : p;
}

async function main(): Promise<void> {
  const demoDir = path.resolve(process.env.DAM_DEMO_DIR || path.join(PROJECT_DIR, '.demo'));
  const port = portFromEnv('PORT', 1880);
  const emulatorPort = portFromEnv('DAM_EMULATOR_PORT', 8873);
  const dirs = {
    emulator: path.join(demoDir, 'emulator'),
    userDir: path.join(demoDir, 'node-red'),
    inbox: path.join(demoDir, 'inbox'),
    done: path.join(demoDir, 'inbox', 'done'),
    mirror: path.join(demoDir, 'mirror')
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });

  let emulator: RunningEmulator | undefined;
  let nodeRed: NodeRedProcess | undefined;
  let nodeRedStarting: Promise<NodeRedProcess> | undefined;
  const startup = new AbortController();
  let stopping: Promise<void> | undefined;

  const stop = (exitCode: number): Promise<void> => {
    stopping ??= (async () => {
      startup.abort();
      if (!nodeRed && !emulator) process.exit(exitCode);
      console.log('Stopping Node-RED and the emulator...');
      // Stopped while Node-RED was starting: the aborted start stops it itself; wait for that.
      const running = nodeRed ?? await nodeRedStarting?.catch(() => undefined);
      try { if (running) await running.stop(); } catch (err) { console.error(`Node-RED did not stop cleanly: ${(err as Error).message}`); }
      try { if (emulator) await emulator.close(); } catch (err) { console.error(`The emulator did not stop cleanly: ${(err as Error).message}`); }
      console.log('Stopped. Your data stays in ' + shown(demoDir) + ' for the next `npm start`.');
      process.exit(exitCode);
    })();
    return stopping;
  };
  let signals = 0;
  const onSignal = () => {
    // Ctrl-C in a terminal reaches Node-RED too (same process group); it stops itself and we wait for it.
    if (++signals > 1 && nodeRed) {
      console.log('Forcing Node-RED to stop.');
      nodeRed.child.kill('SIGKILL');
    }
    void stop(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    await checkPortFree(port, 'PORT');
    await checkPortFree(emulatorPort, 'DAM_EMULATOR_PORT');

    emulator = await startEmulator({
      host: HOST, port: emulatorPort, dataDir: dirs.emulator, retryDelayMs: RETRY_DELAY_MS,
      sessions: [{ value: COOKIE, permissions: ['events', 'add'] }],
      log: (line) => console.log(`[emulator] ${line}`)
    });
    if (startup.signal.aborted) return;

    const flow = demoFlow({
      inboxDir: dirs.inbox, mirrorDir: dirs.mirror, serverUrl: emulator.url,
      publicBaseUrl: `http://${HOST}:${port}`, cookie: COOKIE
    });
    const flowSha = sha256(JSON.stringify(flow));
    const decision = decideFlow(dirs.userDir, flowSha);

    nodeRedStarting = startNodeRed({
      userDir: dirs.userDir, port, host: HOST, credentialSecret: CREDENTIAL_SECRET,
      nodesDir: [PROJECT_DIR], signal: startup.signal,
      onLine: (line) => console.log(`[node-red] ${line}`)
    });
    nodeRed = await nodeRedStarting;
    const running = nodeRed;
    void running.exited.then((code) => {
      if (!stopping) {
        console.error(`Node-RED exited unexpectedly (${code}).`);
        void stop(1);
      }
    });
    console.log(`Node-RED started (pid ${running.child.pid}).`);

    if (decision === 'install' || decision === 'update') {
      await running.deploy(flow);
      writeMarker(dirs.userDir, flowSha);
      console.log(decision === 'install' ? 'Demo flow deployed.' : 'Demo flow updated (folders, ports or the demo itself changed).');
    } else if (decision === 'keep-user') {
      console.log(`Keeping your edited flows in ${shown(path.join(dirs.userDir, 'flows.json'))} ` +
        '(delete that file to get the demo flow back).');
    }
    if (decision !== 'keep-user' && !(await waitForSubscription(emulator.url, 15000))) {
      console.warn(`The subscription ${DEMO_SUBSCRIPTION_ID} is not registered yet: see the asset-event-in node's status in the editor.`);
    }
    if (startup.signal.aborted) return;

    const inbox = shown(dirs.inbox);
    console.log([
      '',
      'DAM demo is running.',
      `  Node-RED editor:  ${running.url}/`,
      `  Emulator:         ${emulator.url}  (cookie JSESSIONID=${COOKIE})`,
      '',
      'Try it:',
      `  cp README.md ${inbox}/`,
      `    -> uploaded to /inbox on the emulator, then moved to ${shown(dirs.done)}/`,
      `    -> the change comes back through subscription ${DEMO_SUBSCRIPTION_ID}:`,
      `       ${shown(path.join(dirs.mirror, 'inbox', 'README.md'))} and README.md.metadata.json appear`,
      '  Open the editor to see the flow; the debug sidebar shows each step.',
      '  Import > Examples > @dam-assets/node-red has one example per node.',
      '',
      'Ctrl-C stops both. Data stays in ' + shown(demoDir) + '.',
      ''
    ].join('\n'));
  } catch (err) {
    if (startup.signal.aborted) return;
    console.error(err instanceof DemoError ? `npm start: ${err.message}` : err);
    await stop(1);
  }
}

void main();
