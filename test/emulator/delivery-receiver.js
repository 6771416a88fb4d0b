'use strict';
// A real HTTP callback receiver on 127.0.0.1:0 for the delivery tests: records every call
// (method, url, headers, raw body, arrival time, status answered), answers with `respond(call)`'s
// status (changeable during a test, 'hang' never answers) and can wait for the n-th call.
// (support.js has a simpler receiver without arrival times or waiting, used by other emulator tests.)
const http = require('http');

async function startReceiver(respond = () => 200) {
  const calls = [];
  const waiters = [];
  const receiver = {
    calls,
    respond,
    url: '',
    /** Resolves once `count` calls have arrived (rejects after `ms`). */
    waitFor(count, ms = 5000) {
      if (calls.length >= count) return Promise.resolve(calls.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${calls.length} of ${count} calls within ${ms} ms`)), ms);
        waiters.push({ count, resolve: v => { clearTimeout(timer); resolve(v); } });
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise(resolve => server.close(() => resolve()));
    }
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', () => {
      const call = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      calls.push(call);
      for (const w of waiters.slice()) {
        if (calls.length >= w.count) { waiters.splice(waiters.indexOf(w), 1); w.resolve(calls.slice()); }
      }
      const status = receiver.respond(call);
      call.status = status;
      if (status === 'hang') return; // never answers: for timeouts
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${server.address().port}`;
  receiver.port = server.address().port;
  return receiver;
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value (or fails after `ms`). */
async function eventually(check, ms = 5000, what = 'condition') {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} not reached within ${ms} ms`);
    await sleep(20);
  }
}

module.exports = { startReceiver, sleep, eventually };
