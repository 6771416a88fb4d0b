'use strict';
/**
 * A small fault-injecting TCP proxy on 127.0.0.1:0 in front of an HTTP server (the emulator).
 *
 *   const proxy = await startFaultProxy(emulator.url);
 *   proxy.setMode({ mode: 'reset-response', afterBytes: 100000 });
 *   ... point a client at proxy.url ...
 *   await proxy.waitIdle();   // every connection (client side and upstream) is closed again
 *
 * The mode is read when a connection is accepted, so a keep-alive connection keeps the mode it
 * started with: give each case a fresh client (or a fresh flow, which makes a fresh client).
 *
 * Modes:
 *   pass                           plain forwarding both ways
 *   refuse                         nothing listens on the port (ECONNREFUSED); another mode listens again
 *   reset-request  { afterBytes }  forwards that many request bytes, then resets both sides (RST)
 *   reset-response { afterBytes }  forwards that many response bytes, then resets both sides
 *   stall { read? }                accepts, reads and drops everything, never answers
 *                                  (read: false: does not even read, so a big request body blocks)
 *   drip { bytes, intervalMs }     forwards, but hands the response out `bytes` at a time every `intervalMs`
 *   status { status, body?, contentType?, headers?, answerAfter? }
 *                                  answers every request itself with that status
 *   not-json { body? }             answers 200 with Content-Type application/json and a body that is not JSON
 *   redirect { status?, location?, answerAfter? }
 *                                  answers 302 (default) with a Location elsewhere
 * `answerAfter`: 'head' (default: answer as soon as the request head is in, and drop the rest of the
 * body) or 'body' (read the whole body first, as most servers do). HTTP answers carry
 * `Connection: close`; the proxy then ends its side and waits for the client to close.
 */
const net = require('net');

const STATUS_TEXT = { 200: 'OK', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
  449: 'Retry With', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

const HTTP_MODES = new Set(['status', 'not-json', 'redirect']);
const MODES = new Set(['pass', 'refuse', 'reset-request', 'reset-response', 'stall', 'drip', ...HTTP_MODES]);

async function startFaultProxy(targetUrl, initialMode = { mode: 'pass' }) {
  const target = new URL(targetUrl);
  const targetPort = Number(target.port || 80);
  const targetHost = target.hostname;
  /** Every socket the proxy holds: client side ('client') and upstream ('upstream'). */
  const sockets = new Map();
  /** Stalled sockets that do not read (stall with read: false). */
  const paused = new Set();
  const stats = { accepted: 0, bytesFromClient: 0, bytesToClient: 0, resets: 0, answered: 0, requests: [] };
  let mode = { mode: 'pass' };
  let server;
  let port = 0;
  let closed = false;

  function track(socket, side, connectionMode) {
    sockets.set(socket, { side, mode: connectionMode });
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined); // resets and aborts are the point here
  }

  /** Forwards `from` -> `to` with back-pressure; `tap(chunk)` returns the bytes to write (or undefined to write nothing). */
  function forward(from, to, tap) {
    from.on('data', (chunk) => {
      const out = tap(chunk);
      if (out === undefined || out.length === 0 || to.destroyed) return;
      if (!to.write(out)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
    from.once('end', () => { if (!to.destroyed) to.end(); });
    from.once('close', () => { if (!to.destroyed && !to.writableEnded) to.destroy(); });
  }

  function reset(...list) {
    stats.resets++;
    for (const s of list) {
      if (s.destroyed) continue;
      if (typeof s.resetAndDestroy === 'function' && s.readyState !== 'opening') s.resetAndDestroy();
      else s.destroy();
    }
  }

  function connectUpstream(client, onConnected) {
    const upstream = net.connect(targetPort, targetHost);
    track(upstream, 'upstream', client.proxyMode);
    upstream.once('error', () => client.destroy());
    upstream.once('connect', () => onConnected(upstream));
    client.once('close', () => { if (!upstream.destroyed) upstream.destroy(); });
    return upstream;
  }

  function onPass(client, m) {
    client.pause();
    connectUpstream(client, (upstream) => {
      let fromClient = 0;
      let toClient = 0;
      let dripTimer;
      forward(client, upstream, (chunk) => {
        stats.bytesFromClient += chunk.length;
        if (m.mode !== 'reset-request') return chunk;
        const room = m.afterBytes - fromClient;
        fromClient += chunk.length;
        if (chunk.length < room) return chunk;
        client.pause();
        if (room <= 0) reset(client, upstream);
        else upstream.write(chunk.subarray(0, room), () => reset(client, upstream));
        return undefined;
      });
      if (m.mode === 'drip') {
        const queue = [];
        const tick = () => {
          if (client.destroyed) { clearInterval(dripTimer); return; }
          let room = m.bytes || 16;
          while (room > 0 && queue.length) {
            const head = queue[0];
            const piece = head.subarray(0, room);
            client.write(piece);
            stats.bytesToClient += piece.length;
            room -= piece.length;
            if (piece.length === head.length) queue.shift(); else queue[0] = head.subarray(piece.length);
          }
          if (queue.length === 0) {
            if (upstream.readableEnded || upstream.destroyed) { clearInterval(dripTimer); client.end(); } else upstream.resume();
          }
        };
        upstream.on('data', (chunk) => { queue.push(chunk); upstream.pause(); });
        upstream.once('end', () => { if (queue.length === 0) { clearInterval(dripTimer); client.end(); } });
        // Cut short upstream (not a clean end): cut the client too once the queue is out.
        upstream.once('close', () => { if (queue.length === 0 && !upstream.readableEnded) { clearInterval(dripTimer); client.destroy(); } });
        dripTimer = setInterval(tick, m.intervalMs || 50);
        client.once('close', () => clearInterval(dripTimer));
      } else {
        forward(upstream, client, (chunk) => {
          if (m.mode !== 'reset-response') { stats.bytesToClient += chunk.length; return chunk; }
          const room = m.afterBytes - toClient;
          toClient += chunk.length;
          if (chunk.length < room) { stats.bytesToClient += chunk.length; return chunk; }
          const piece = chunk.subarray(0, Math.max(0, room));
          stats.bytesToClient += piece.length;
          upstream.pause();
          if (piece.length === 0) reset(client, upstream);
          else client.write(piece, () => reset(client, upstream));
          return undefined;
        });
      }
      client.resume();
    });
  }

  /** Answers the request itself (status, not-json, redirect). */
  function onAnswer(client, m) {
    let head = Buffer.alloc(0);
    let bodyLeft; // bytes of body still to read before answering (answerAfter 'body')
    let chunkedTail = '';
    let chunked = false;
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      stats.answered++;
      let status = m.status;
      let contentType = m.contentType;
      let body = m.body;
      const headers = { ...(m.headers || {}) };
      if (m.mode === 'not-json') {
        status = status || 200;
        contentType = contentType || 'application/json; charset=utf-8';
        body = body === undefined ? '<html><body>Service temporarily replaced by a captive portal</body></html>' : body;
      } else if (m.mode === 'redirect') {
        status = status || 302;
        headers.Location = m.location || 'http://login.example.invalid/sso?next=%2Freview%2Fapi%2Fasset%2Fupload';
        body = body === undefined ? '' : body;
      } else {
        status = status || 500;
        body = body === undefined ? `<html><body><h1>${status} ${STATUS_TEXT[status] || ''}</h1></body></html>` : body;
        contentType = contentType || 'text/html; charset=utf-8';
      }
      const payload = Buffer.from(body);
      const lines = [`HTTP/1.1 ${status} ${STATUS_TEXT[status] || 'Status'}`, 'Connection: close', `Content-Length: ${payload.length}`];
      if (contentType) lines.push(`Content-Type: ${contentType}`);
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      client.write(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n'), payload]));
      stats.bytesToClient += payload.length;
      client.end();
    };
    client.on('data', (chunk) => {
      stats.bytesFromClient += chunk.length;
      if (answered) return; // the rest of a body we answered early: dropped
      if (bodyLeft === undefined) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const text = head.subarray(0, end).toString('latin1');
        const [requestLine, ...headerLines] = text.split('\r\n');
        const [method, path] = requestLine.split(' ');
        stats.requests.push({ method, path });
        const header = (name) => {
          const line = headerLines.find((l) => l.toLowerCase().startsWith(name + ':'));
          return line ? line.slice(name.length + 1).trim() : undefined;
        };
        const rest = head.subarray(end + 4);
        chunked = /chunked/i.test(header('transfer-encoding') || '');
        bodyLeft = chunked ? Infinity : Number(header('content-length') || 0);
        if ((m.answerAfter || 'head') === 'head') { answer(); return; }
        chunk = rest;
      }
      if (chunked) {
        chunkedTail = (chunkedTail + chunk.toString('latin1')).slice(-16);
        if (/(^|\r\n)0\r\n(\r\n)$/.test(chunkedTail)) answer();
      } else {
        bodyLeft -= chunk.length;
        if (bodyLeft <= 0) answer();
      }
    });
  }

  function onConnection(client) {
    stats.accepted++;
    const m = mode;
    client.proxyMode = m.mode;
    track(client, 'client', m.mode);
    if (m.mode === 'stall') {
      // read: false also stops reading, so a sender's writes block once the socket buffers are full.
      client.on('data', (chunk) => { stats.bytesFromClient += chunk.length; });
      if (m.read === false) { client.pause(); paused.add(client); client.once('close', () => paused.delete(client)); }
      return;
    }
    if (HTTP_MODES.has(m.mode)) { onAnswer(client, m); return; }
    onPass(client, m);
  }

  async function listen() {
    server = net.createServer(onConnection);
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => { server.off('error', reject); resolve(); });
    });
    port = server.address().port;
  }

  async function unlisten() {
    const s = server;
    server = undefined;
    if (s) await new Promise((resolve) => { s.close(() => resolve()); setImmediate(resolve); });
  }

  const proxy = {
    get url() { return `http://127.0.0.1:${port}`; },
    get port() { return port; },
    stats,
    /** Sets the mode of connections accepted from now on. */
    async setMode(next) {
      if (!next || !MODES.has(next.mode)) throw new Error(`unknown proxy mode ${JSON.stringify(next && next.mode)}`);
      if ((next.mode === 'reset-request' || next.mode === 'reset-response') && !(next.afterBytes >= 0)) {
        throw new Error(`${next.mode} needs afterBytes`);
      }
      mode = { ...next };
      if (next.mode === 'refuse') await unlisten();
      else if (!server && !closed) await listen();
    },
    /** Open sockets: accepted client connections plus upstream connections. */
    openConnections() { return sockets.size; },
    /** Describes the open sockets (for failure messages). */
    describeOpen() { return [...sockets.values()].map((s) => `${s.side}(${s.mode})`).join(', ') || 'none'; },
    /**
     * Resolves once no socket is open; rejects after `timeoutMs` naming what is still open.
     * Stalled sockets that do not read start reading (and dropping) first: a paused socket never
     * notices that the client closed its end, one that reads does.
     */
    async waitIdle(timeoutMs = 3000) {
      for (const s of paused) s.resume();
      paused.clear();
      const until = Date.now() + timeoutMs;
      while (sockets.size > 0) {
        if (Date.now() > until) throw new Error(`proxy still has ${sockets.size} open socket(s) after ${timeoutMs} ms: ${proxy.describeOpen()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    /** Stops listening and destroys every socket. */
    async close() {
      closed = true;
      await unlisten();
      for (const s of sockets.keys()) s.destroy();
    }
  };
  await listen();
  await proxy.setMode(initialMode);
  return proxy;
}

module.exports = { startFaultProxy };
