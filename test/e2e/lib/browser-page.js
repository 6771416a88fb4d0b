'use strict';
/**
 * Small helpers for driving the Node-RED editor page in the browser test.
 * Everything here runs real editor code (RED.* in the page), the way a user's
 * clicks would, and reads the DOM the user sees.
 */
const fs = require('fs');
const path = require('path');

const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Path of the Chromium to use, or null. `CHROMIUM_PATH` overrides the search. */
function findChromium() {
  const candidates = process.env.CHROMIUM_PATH ? [process.env.CHROMIUM_PATH] : CHROMIUM_CANDIDATES;
  return candidates.find(p => {
    try { fs.accessSync(p, fs.constants.X_OK); return true; } catch (e) { return false; }
  }) || null;
}

/**
 * Records what the page reports as broken: console errors, uncaught page errors
 * and HTTP responses >= 400. `since(mark)` lists the entries after a mark.
 */
function watchPageProblems(page) {
  const problems = [];
  page.on('console', msg => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', err => problems.push(`page error: ${err && err.stack || err}`));
  page.on('response', res => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()} for ${res.url()}`);
  });
  return {
    mark: () => problems.length,
    since: mark => problems.slice(mark),
    all: () => problems.slice(),
  };
}

/**
 * In the page: message-catalogue keys the editor failed to translate inside
 * `selector`: `data-i18n` elements left empty (hidden ones too), and visible text,
 * placeholders, titles and options that look like a key (`asset-subscribe.label.id`,
 * `node-red:common.label.name`), as `RED._()` returns a missing key as is.
 */
async function untranslatedKeys(page, selector, nodeTypes) {
  return page.evaluate(({ selector, nodeTypes }) => {
    const root = document.querySelector(selector);
    if (!root) return [];
    const keyLike = /^[\w@/:-]*[a-z][\w-]*\.(label|labels|tip|tips|placeholder|placeholders|status|errors?|messages?|options?|hint|text|paletteLabel)(\.[\w-]+)+$/;
    const typePrefix = new RegExp(`^(${nodeTypes.map(t => t.replace(/[-]/g, '\\-')).join('|')})\\.[a-zA-Z]`);
    const texts = [];
    const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
    for (const el of root.querySelectorAll('*')) {
      if (!visible(el) && el.tagName !== 'OPTION') continue;
      for (const child of el.childNodes) {
        if (child.nodeType === Node.TEXT_NODE && child.textContent.trim()) texts.push(child.textContent);
      }
      for (const attr of ['placeholder', 'title', 'aria-label']) {
        if (el.getAttribute(attr)) texts.push(el.getAttribute(attr));
      }
    }
    const found = new Set();
    // A data-i18n key the catalogue lacks leaves the element (or attribute) empty.
    for (const el of root.querySelectorAll('[data-i18n]')) {
      for (const part of el.getAttribute('data-i18n').split(';')) {
        const m = /^\[([^\]]+)\](.*)$/.exec(part.trim());
        const target = m ? m[1] : 'text';
        const key = (m ? m[2] : part).trim();
        const shown = ['text', 'html', 'append', 'prepend'].includes(target) ? el.textContent : el.getAttribute(target);
        if (!shown || !shown.trim()) found.add(`${key} (empty ${target})`);
      }
    }
    for (const text of texts) {
      for (const token of text.split(/\s+/)) {
        const t = token.replace(/^[("'[]+|[)"',.:;\]]+$/g, '');
        if (keyLike.test(t) || typePrefix.test(t)) found.add(t);
      }
    }
    return [...found];
  }, { selector, nodeTypes });
}

/**
 * In the page: visible controls inside `selector` whose right edge sticks out of
 * the container (a broken layout: a field wider than the edit tray).
 */
async function overflowingControls(page, selector) {
  return page.evaluate(selector => {
    const root = document.querySelector(selector);
    if (!root) return [];
    const box = root.getBoundingClientRect();
    const out = [];
    for (const el of root.querySelectorAll('input, select, textarea, button, .red-ui-typedInput-container, .red-ui-editableList-container')) {
      const r = el.getBoundingClientRect();
      if (!r.width || !r.height) continue;
      if (r.right > box.right + 2) {
        out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className ? '.' + String(el.className).split(/\s+/).join('.') : ''} ends at x=${Math.round(r.right)}, container ends at x=${Math.round(box.right)}`);
      }
    }
    return out;
  }, selector);
}

/** Make sure a directory exists and return the path of a screenshot file in it. */
function screenshotPath(dir, name) {
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}

/**
 * In a mocha before hook (`context` is its `this`): the Chromium to run, or the test skipped with a
 * reason naming `what`; where DAM_BROWSER_REQUIRED=1 (CI) a missing Chromium is an error instead.
 */
function chromiumOrSkip(context, what) {
  const chromiumPath = findChromium();
  if (chromiumPath) return chromiumPath;
  const reason = 'no Chromium found (looked for ' + (process.env.CHROMIUM_PATH || '/usr/bin/chromium, chromium-browser, google-chrome') +
    '). Install it with `apt-get install -y chromium` or set CHROMIUM_PATH; .ci/run installs it.';
  if (process.env.DAM_BROWSER_REQUIRED === '1') throw new Error(`${what} cannot run: ${reason}`);
  console.log(`    SKIPPED ${what}: ${reason}`);
  return context.skip();
}

/**
 * Closes the browser, waiting at most `ms`: on a loaded machine Chromium's exit can outlast a
 * hook's timeout. One still running then is killed by Playwright's exit handler with the test process.
 */
async function closeBrowser(browser, ms = 15000) {
  if (!browser) return;
  let timer;
  await Promise.race([browser.close().catch(() => {}), new Promise((resolve) => { timer = setTimeout(resolve, ms); })]);
  clearTimeout(timer);
}

/**
 * A Node-RED of this checkout (./browser-node-red) and its editor in headless Chromium, ready:
 * workspace active, loading overlay gone, our node types and DamEditor loaded. `test`: the
 * mocha context (skipped, or failed on CI, without Chromium). Resolves { nr, browser, page, problems }.
 */
async function openEditor(test, what) {
  const chromiumPath = chromiumOrSkip(test, what);
  const { chromium } = require('playwright-core');
  const { startNodeRed } = require('./browser-node-red');
  const nr = await startNodeRed();
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  const problems = watchPageProblems(page);
  await page.goto(nr.url);
  await page.waitForFunction(() => window.RED && window.RED.nodes && RED.workspaces && RED.workspaces.active() &&
    !$('#red-ui-loading-progress').is(':visible') && RED.nodes.getType('asset-hot-folder') && RED.nodes.getType('asset-event-in') && window.DamEditor,
  null, { timeout: 60000 });
  return { nr, browser, page, problems };
}

module.exports = { closeBrowser, chromiumOrSkip, findChromium, CHROMIUM_ARGS, watchPageProblems, untranslatedKeys, overflowingControls, screenshotPath, openEditor };
