#!/usr/bin/env node
'use strict';
/**
 * Re-creates the README pictures from the `npm start` demo:
 *   docs/images/demo-flow.png  the demo flow in the editor (1400 px wide), after one file went through it
 *   docs/images/palette.png    the DAM palette category
 *
 * Usage: `npm run screenshots` (builds first), or `node scripts/screenshot-demo.js` after a build.
 * `npm run screenshots` then runs test/e2e/browser-five-steps.test.js with DAM_DOCS_IMAGES=1, which
 * clicks the README's five steps through and writes docs/images/five-steps-*.png.
 *
 * It runs the demo launcher (dist/demo/start.js) on free ports with a fresh temporary
 * DAM_DEMO_DIR, drops one file into the demo's inbox so the node statuses show a real run,
 * opens the editor in headless Chromium (playwright-core; CHROMIUM_PATH overrides
 * /usr/bin/chromium), takes the pictures, then stops the launcher (which stops Node-RED and
 * the emulator), closes the browser and removes the temporary folder, also on error or Ctrl-C.
 */
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const ROOT = path.resolve(__dirname, '..');
const OUT_DIR = path.join(ROOT, 'docs', 'images');
const LAUNCHER = path.join(ROOT, 'dist', 'demo', 'start.js');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const VIEWPORT = { width: 1400, height: 800 };
/** The file dropped into the inbox: small, and its name reads well in the debug sidebar. */
const SAMPLE_NAME = 'product-photo.txt';

/** A port nobody listens on right now (the launcher fails clearly if it is taken meanwhile). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts the demo launcher; resolves with its editor URL once it prints its banner. */
function startDemo(env, timeoutMs) {
  // Its own process group: if it does not stop on SIGINT, the whole group (it and its
  // Node-RED child) can be killed without touching anything else.
  const child = spawn(process.execPath, [LAUNCHER], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start within ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const onData = (chunk) => {
      log += chunk;
      const url = /Node-RED editor:\s+(\S+)/.exec(log);
      if (/DAM demo is running\./.test(log) && url) {
        clearTimeout(timer);
        resolve(url[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`the demo exited early (${code}):\n${log}`)); });
  });
  return { child, ready, exited, log: () => log };
}

/** SIGINT (the launcher's clean stop), then SIGKILL of its process group after `graceMs`. */
async function stopDemo(demo, graceMs = 20000) {
  if (demo.child.exitCode !== null || demo.child.signalCode !== null) return;
  demo.child.kill('SIGINT');
  const timer = setTimeout(() => {
    try { process.kill(-demo.child.pid, 'SIGKILL'); } catch { /* already gone */ }
  }, graceMs);
  await demo.exited;
  clearTimeout(timer);
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function main() {
  if (!fs.existsSync(LAUNCHER)) throw new Error(`${path.relative(ROOT, LAUNCHER)} is missing: run \`npm run build\` first`);
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const demoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dam-demo-'));
  let demo;
  let browser;
  // Once only, whether reached by the end of main, an error or a signal.
  let cleaning;
  const cleanup = () => {
    cleaning ??= (async () => {
      if (browser) await browser.close().catch(() => {});
      if (demo) await stopDemo(demo);
      fs.rmSync(demoDir, { recursive: true, force: true });
    })();
    return cleaning;
  };
  const onSignal = () => { void cleanup().then(() => process.exit(130)); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const env = { ...process.env, PORT: String(await freePort()), DAM_EMULATOR_PORT: String(await freePort()), DAM_DEMO_DIR: demoDir };
    demo = startDemo(env, 120000);
    const editorUrl = await demo.ready;
    console.log(`demo running: ${editorUrl} (data in ${demoDir})`);

    // One file through both halves of the flow, so every DAM node shows a status.
    fs.writeFileSync(path.join(demoDir, 'inbox', SAMPLE_NAME), 'A sample asset dropped into the hot folder.\n');
    const mirrored = path.join(demoDir, 'mirror', 'inbox', `${SAMPLE_NAME}.metadata.json`);
    await waitFor(() => fs.existsSync(mirrored), 30000, `${path.relative(demoDir, mirrored)} in the demo folder`);

    // Our own signal handler stops the browser along with everything else (Playwright's would exit at once).
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
      handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
    const page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await page.goto(editorUrl);
    await page.waitForFunction(() => window.RED && RED.workspaces && RED.workspaces.active() &&
      $('.red-ui-header-toolbar').is(':visible') && !$('#red-ui-loading-progress').is(':visible'), null, { timeout: 60000 });
    // The launcher sets editorTheme.tours false; close a tour anyway should one show.
    await page.evaluate(() => $('.red-ui-tourGuide-shade, .red-ui-tourGuide-popover').remove());

    // Palette: only the DAM category, the way a user finds it.
    const category = page.locator('#red-ui-palette-container-DAM');
    await category.scrollIntoViewIfNeeded();
    await category.screenshot({ path: path.join(OUT_DIR, 'palette.png') });

    // Flow: palette and sidebar closed so that the whole demo tab fits, zoomed out one step
    // if it still does not, scrolled to the flow's top left corner; cropped below the flow.
    const frame = await page.evaluate(() => {
      RED.actions.invoke('core:toggle-palette', false);
      RED.actions.invoke('core:toggle-sidebar', false);
      $('.red-ui-notification').remove();
      RED.view.select('');
      const z = RED.workspaces.active();
      const nodes = RED.nodes.filterNodes({ z });
      const box = {
        left: Math.min(...nodes.map((n) => n.x - (n.w || 100) / 2)),
        right: Math.max(...nodes.map((n) => n.x + (n.w || 100) / 2)),
        top: Math.min(...nodes.map((n) => n.y - (n.h || 30) / 2)),
        bottom: Math.max(...nodes.map((n) => n.y + (n.h || 30) / 2)) + 20 // status text under the nodes
      };
      const chart = $('#red-ui-workspace-chart');
      const margin = 30;
      if ((box.right - box.left) + 2 * margin > chart.width()) RED.actions.invoke('core:zoom-out');
      const scale = RED.view.scale();
      chart.scrollLeft(Math.max(0, box.left * scale - margin)).scrollTop(Math.max(0, box.top * scale - margin));
      const offset = chart.offset();
      return { bottom: offset.top + (box.bottom - box.top) * scale + 2 * margin, scale };
    });
    // Statuses of nodes that ran before the page opened are sent with the page; give them a moment.
    await page.waitForTimeout(1500);
    const height = Math.min(VIEWPORT.height, Math.ceil(frame.bottom));
    await page.screenshot({ path: path.join(OUT_DIR, 'demo-flow.png'), clip: { x: 0, y: 0, width: VIEWPORT.width, height } });
    console.log(`wrote ${path.relative(ROOT, path.join(OUT_DIR, 'demo-flow.png'))} and ${path.relative(ROOT, path.join(OUT_DIR, 'palette.png'))}`);
  } finally {
    await cleanup();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

main().catch((err) => {
  console.error(err && err.stack || err);
  process.exitCode = 1;
});
