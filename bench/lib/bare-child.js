'use strict';
// The "bare Node" row: the simplest streaming code Node offers for the same transfers, in a
// process of its own, with the protocol of client-child.js (so both are measured the same way).
// Upload: fs.createReadStream -> http.request with a hand-written multipart body.
// Download: http.get -> fs.createWriteStream. Node's defaults everywhere (buffer sizes, agent).
const fs = require('fs');
const http = require('http');
const { performance } = require('perf_hooks');
const { profiled } = require('./profile-job');

const [baseUrl, cookie] = process.argv.slice(2);

function answer(res) {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (t) => { text += t; });
    res.on('end', () => resolve({ status: res.statusCode, text }));
    res.on('error', reject);
  });
}

async function upload(file, destination) {
  const boundary = '----bare-node-' + Date.now().toString(16);
  const field = (name, value) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(field('destination', destination) + field('wait', 'true') +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.split('/').pop()}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n');
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const size = fs.statSync(file).size;
  const { status, text } = await new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/review/api/asset/upload`, {
      method: 'POST',
      headers: {
        Cookie: cookie, Accept: 'application/json',
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        'Content-Length': head.length + size + tail.length
      }
    }, (res) => answer(res).then(resolve, reject));
    req.on('error', reject);
    req.write(head);
    const source = fs.createReadStream(file);
    source.on('error', reject);
    source.on('end', () => req.end(tail));
    source.pipe(req, { end: false });
  });
  if (status !== 200) throw new Error(`HTTP ${status}: ${text.slice(0, 200)}`);
  const result = JSON.parse(text);
  return { success: result.success, length: result.length, fuids: result.data && result.data.fuids };
}

function download(fuid, file) {
  return new Promise((resolve, reject) => {
    http.get(`${baseUrl}/review/api/asset/download?fuid=${fuid}&rrn=-1`, { headers: { Cookie: cookie } }, (res) => {
      if (res.statusCode !== 200) { res.resume(); return reject(new Error(`HTTP ${res.statusCode}`)); }
      const out = fs.createWriteStream(file);
      out.on('finish', () => resolve({ bytes: out.bytesWritten }));
      out.on('error', reject);
      res.on('error', reject);
      res.pipe(out);
    }).on('error', reject);
  });
}

async function run(job) {
  const t0 = performance.now();
  if (job.op === 'upload') {
    const result = await upload(job.file, job.destination);
    return { ms: performance.now() - t0, result };
  }
  if (job.op === 'download') {
    const { bytes } = await download(job.fuid, job.file);
    return { ms: performance.now() - t0, bytes };
  }
  throw new Error(`unknown op ${job.op}`);
}

process.on('message', (m) => {
  if (m.cmd === 'exit') process.exit(0);
  if (m.cmd === 'warm') {
    // The same operation on a small file first, so that the measured one runs warm code, as in
    // Node-RED (a long-lived process) and any program that transfers more than one file.
    run(m).then(() => process.send({ warmed: true }), (e) => process.send({ warmed: false, error: e.message }));
    return;
  }
  if (m.cmd !== 'go') return;
  profiled(`bare-${m.op}`, () => run(m)).then(
    (r) => process.send({ ok: true, ...r }),
    (e) => process.send({ ok: false, error: e.message })
  );
});

// Warm up as client-child.js does: one small request, then the transfer is measured alone.
http.get(`${baseUrl}/review/api/events/assets/subscribe/bench-warm-up`, { headers: { Cookie: cookie } }, (res) => res.resume().on('end', ready))
  .on('error', ready);
function ready() { process.send({ ready: true, rss: process.memoryUsage.rss() }); }
