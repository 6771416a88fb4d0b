'use strict';
// Turns the raw results into the Markdown table (with PASS/FAIL per target) and the SVG chart.
const { MiB, formatSize } = require('./util');
const { summarize } = require('./transfer');

/**
 * Targets. Transfers: through the nodes ≥ 0.8× curl (every size) and, from 256 MiB on, ≥ 0.9× bare
 * Node and at most 1.3× the CPU per GiB of the client in its own process; the client ≥ 0.95× bare
 * Node; peak RSS growth through the nodes < 64 MiB. Events: see eventTargets.
 */
const TARGET = {
  ratio: 0.8, bareRatioNode: 0.9, bareRatioClient: 0.95, cpuOverClient: 1.3, bigFrom: 256 * MiB,
  growthMiB: 64, p99Ms: 50, fanoutMs: 2000
};

const LABEL = {
  upload: {
    curl: 'curl -F',
    bare: 'bare Node: fs.createReadStream → http.request (own process)',
    client: 'API client (own process)',
    node: 'inject → **asset-upload** (Node-RED)',
    core: 'core: file in → function (form) → http request'
  },
  download: {
    curl: 'curl -o',
    bare: 'bare Node: http.get → fs.createWriteStream (own process)',
    client: 'API client downloadToFile (own process)',
    node: 'inject → **asset-download** file mode (Node-RED)',
    core: 'core: http request (Buffer) → file out'
  }
};
const VARIANT_ORDER = ['curl', 'bare', 'client', 'node', 'core'];
const EVENT_LABEL = {
  ours: '**asset-event-in** (one msg per entry) → count',
  batch: '**asset-event-in** (one msg per callback) → count',
  redis: '**asset-event-in**, filter in Redis → count',
  inbox: '**asset-event-in** at least once → **asset-event-ack** → count',
  streams: '**asset-event-in** at least once, inbox on a Redis Stream → **asset-event-ack** → count',
  core: 'core: http in → change → split → count → http response'
};

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
const mib = (bytes, digits = 1) => (Number.isFinite(bytes) ? (bytes / MiB).toFixed(digits) : '—');
const verdict = (ok) => (ok ? 'PASS' : 'FAIL');

function target(name, ok, text) {
  return { name, ok, text: `${verdict(ok)} ${text}` };
}

/** Summaries of every transfer variant, with ratios to curl and to bare Node, and target verdicts. */
function transferSummaries(results) {
  const rows = [];
  for (const s of results.sizes) {
    for (const dir of ['upload', 'download']) {
      const curl = summarize(s.transfers[dir].curl);
      const bare = summarize(s.transfers[dir].bare);
      const client = summarize(s.transfers[dir].client);
      const big = s.size >= TARGET.bigFrom;
      const at = `${dir} at ${formatSize(s.size)}`;
      for (const v of VARIANT_ORDER) {
        if (!s.transfers[dir][v]) continue;
        const sum = summarize(s.transfers[dir][v]);
        const ratio = sum.mibPerSec / curl.mibPerSec;
        const bareRatio = sum.mibPerSec / bare.mibPerSec;
        const row = { dir, size: s.size, variant: v, ...sum, ratio, bareRatio, targets: [] };
        const clean = sum.failed === 0;
        if (v === 'node') {
          row.targets.push(target(`${at} through the node: ≥ ${TARGET.ratio}× curl`,
            clean && ratio >= TARGET.ratio, `≥${TARGET.ratio}× curl`));
          if (big && s.transfers[dir].bare) {
            row.targets.push(target(`${at} through the node: ≥ ${TARGET.bareRatioNode}× bare Node`,
              clean && bareRatio >= TARGET.bareRatioNode, `≥${TARGET.bareRatioNode}× bare`));
          }
          if (big && s.transfers[dir].client) {
            const cpuRatio = sum.cpuPerGiB / client.cpuPerGiB;
            row.cpuOverClient = cpuRatio;
            row.targets.push(target(`${at} through the node: CPU-s/GiB ≤ ${TARGET.cpuOverClient}× the client's in its own process (${fmt(cpuRatio, 2)}×)`,
              clean && cpuRatio <= TARGET.cpuOverClient, `CPU ≤${TARGET.cpuOverClient}× client`));
          }
          row.targets.push(target(`${at} through the node: peak RSS growth < ${TARGET.growthMiB} MiB`,
            clean && sum.growth < TARGET.growthMiB * MiB, `<${TARGET.growthMiB} MiB`));
        }
        if (v === 'client' && s.transfers[dir].bare) {
          row.targets.push(target(`${at}, API client in its own process: ≥ ${TARGET.bareRatioClient}× bare Node`,
            clean && bareRatio >= TARGET.bareRatioClient, `≥${TARGET.bareRatioClient}× bare`));
        }
        rows.push(row);
      }
    }
  }
  return rows;
}

/**
 * Event targets: asset-event-in (one message per entry) counts at least the core flow's entries/s,
 * loses nothing, and its p99 is no worse than the core flow's at the same load (the core flow's half
 * rate) at every size; its p99 at its own half rate is below 50 ms up to 100 entries per callback
 * (at 1000, one message per entry cannot be, in any flow); the
 * one-message-per-callback mode loses nothing and its p99 at half rate is below 50 ms at every size.
 */
/** The Redis rows' redis-server CPU per entry and commands it ran per entry (bench/lib/redis-cost.js). */
function redisCell(r) {
  return r.redisCpuMicrosPerEntry === undefined ? '' : `${fmt(r.redisCpuMicrosPerEntry)} (${r.redisCommandsPerEntry.toFixed(1)})`;
}

function eventTargets(rows) {
  const out = [];
  for (const r of rows) {
    r.targets = [];
    if (r.variant === 'redis') {
      const memory = rows.find((c) => c.variant === 'ours' && c.entriesPerCallback === r.entriesPerCallback);
      if (memory && r.entriesPerCallback === 100) {
        const ok = r.entriesPerSec >= 0.8 * memory.entriesPerSec;
        r.targets.push({ name: `asset-event-in with the filter in Redis, 100/callback: entries/s ≥ 0.8 × in-memory filter`, ok, text: `${verdict(ok)} ≥ 0.8 × in memory` });
      }
      const ok = r.lost === 0 && r.httpFailures === 0;
      r.targets.push({ name: `asset-event-in with the filter in Redis, ${r.entriesPerCallback}/callback: 0 entries lost`, ok, text: `${verdict(ok)} 0 lost` });
      out.push(...r.targets);
      continue;
    }
    if (r.variant === 'streams') {
      const filter = rows.find((c) => c.variant === 'redis' && c.entriesPerCallback === r.entriesPerCallback);
      if (filter && r.entriesPerCallback === 100) {
        const ok = r.entriesPerSec >= 0.8 * filter.entriesPerSec;
        r.targets.push({ name: 'asset-event-in at least once on a Redis Stream, 100/callback: entries/s ≥ 0.8 × the Redis filter at most once', ok, text: `${verdict(ok)} ≥ 0.8 × Redis filter` });
      }
      const ok = r.lost === 0 && r.httpFailures === 0;
      r.targets.push({ name: `asset-event-in at least once on a Redis Stream, ${r.entriesPerCallback}/callback: 0 entries lost`, ok, text: `${verdict(ok)} 0 lost` });
      out.push(...r.targets);
      continue;
    }
    if (r.variant === 'inbox') {
      const memory = rows.find((c) => c.variant === 'ours' && c.entriesPerCallback === r.entriesPerCallback);
      if (memory && r.entriesPerCallback === 100) {
        const ok = r.entriesPerSec >= 0.8 * memory.entriesPerSec;
        r.targets.push({ name: 'asset-event-in at least once (inbox + ack), 100/callback: entries/s ≥ 0.8 × at most once', ok, text: `${verdict(ok)} ≥ 0.8 × at most once` });
      }
      const ok = r.lost === 0 && r.httpFailures === 0;
      r.targets.push({ name: `asset-event-in at least once, ${r.entriesPerCallback}/callback: 0 entries lost`, ok, text: `${verdict(ok)} 0 lost` });
      out.push(...r.targets);
      continue;
    }
    if (r.variant === 'core') continue;
    const n = r.entriesPerCallback;
    const what = `asset-event-in (${r.variant === 'batch' ? 'one msg per callback' : 'one msg per entry'}), ${n}/callback`;
    const core = rows.find((c) => c.variant === 'core' && c.entriesPerCallback === n);
    if (r.variant === 'ours' && core) {
      r.targets.push(target(`${what}: entries/s ≥ core http-in flow`, r.entriesPerSec >= core.entriesPerSec, '≥ core'));
      r.targets.push(target(`${what}: p99 ≤ core http-in flow's at the same load, the core flow's half rate (${fmt(r.coreRateP99)} / ${fmt(core.halfP99)} ms)`,
        r.coreRateP99 <= core.halfP99, 'p99 ≤ core @ core ½'));
    }
    r.targets.push(target(`${what}: 0 entries lost`, r.lost === 0 && r.httpFailures === 0, '0 lost'));
    if (r.variant === 'batch' || n <= 100) {
      r.targets.push(target(`${what}: p99 < ${TARGET.p99Ms} ms at half the max rate`, r.halfP99 < TARGET.p99Ms, `p99<${TARGET.p99Ms} ms @½`));
    }
    out.push(...r.targets);
  }
  return out;
}

/** The whole Markdown report; `results.targets` is filled as a side effect. */
function markdown(results) {
  const L = [];
  const env = results.env;
  L.push(`# Benchmark ${results.startedAt}${results.quick ? ' (quick)' : ''}`, '');
  L.push(`Machine: ${env.cpus} × ${env.cpuModel}, ${formatSize(env.totalMem)} RAM, ${env.platform}; Node ${env.node}, ` +
    `Node-RED ${env.nodeRed}, ${env.curl || 'curl missing'}; commit ${env.commit}; ` +
    `load average ${env.loadAverage[0]} at the start, ${env.loadAverageAtEnd[0]} at the end; ${results.seconds} s in all. ` +
    `Each figure is the median of ${results.runs} runs; baselines ran interleaved with ours in the same invocation.`, '');
  for (const note of results.notes) L.push(`> ${note}`);
  if (results.notes.length) L.push('');

  const targets = [];
  const transfers = transferSummaries(results);
  for (const dir of ['upload', 'download']) {
    const rows = transfers.filter((r) => r.dir === dir);
    if (!rows.length) continue;
    L.push(dir === 'upload' ? '## 1. Upload: file on disk → emulator' : '## 2. Download: emulator → file on disk', '');
    L.push('| Size | Variant | MiB/s | × curl | × bare Node | Peak RSS growth (MiB) | CPU s/GiB (this side / emulator) | Target |', '|---|---|---:|---:|---:|---:|---:|---|');
    for (const r of rows) {
      const growth = r.variant === 'curl' ? `(whole process ${mib(r.peak)})` : mib(r.growth);
      const failed = r.failed ? ` (${r.failed}/${r.runs} failed: ${r.errors.join('; ').slice(0, 160)})` : '';
      L.push(`| ${formatSize(r.size)} | ${LABEL[dir][r.variant]}${failed} | ${fmt(r.mibPerSec)} | ${r.variant === 'curl' ? '1.00' : fmt(r.ratio, 2)} | ${r.variant === 'bare' ? '1.00' : fmt(r.bareRatio, 2)} | ` +
        `${growth} | ${fmt(r.cpuPerGiB, 1)} / ${fmt(r.emulatorCpuPerGiB, 1)} | ${r.targets.map((t) => t.text).join(', ')} |`);
      targets.push(...r.targets);
    }
    L.push('');
  }

  if (results.events && results.events.length) {
    L.push('## 3. Event bursts: callbacks POSTed to Node-RED over 10 keep-alive connections (full speed: autocannon; half rate: evenly paced, open loop)', '');
    L.push('| Entries / callback | Flow | Entries/s (max) | p50 / p99 ms (max rate) | Half rate (callbacks/s) | p50 / p99 ms (half rate) | p99 ms at the core flow\'s half rate | Lost | Node-RED CPU µs/entry | redis-server CPU µs/entry (commands/entry) | Target |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    targets.push(...eventTargets(results.events));
    for (const r of results.events) {
      const lost = `${r.lost}${r.httpFailures ? ` (+${r.httpFailures} HTTP failures)` : ''}`;
      L.push(`| ${r.entriesPerCallback} | ${EVENT_LABEL[r.variant]} | ${fmt(r.entriesPerSec)} | ${fmt(r.p50)} / ${fmt(r.p99)} | ` +
        `${r.halfRate} | ${fmt(r.halfP50)} / ${fmt(r.halfP99)} | ${r.coreRateP99 === undefined ? '' : fmt(r.coreRateP99)} | ${lost} | ${fmt(r.cpuMicrosPerEntry)} | ${redisCell(r)} | ${r.targets.map((t) => t.text).join(', ')} |`);
    }
    L.push('');
  }

  if (results.fanout) {
    const f = results.fanout;
    L.push('## 4. Emulator fan-out', '');
    L.push('| Subscriptions | Matching the change | Time to all deliveries (from upload start / from its answer) | Emulator RSS idle → 1000 subscribed → peak (MiB) | Target |',
      '|---:|---:|---:|---:|---|');
    const ok = f.ms < TARGET.fanoutMs && f.strays === 0;
    const t = { name: `emulator: ${f.matching} deliveries in < ${TARGET.fanoutMs} ms`, ok, text: `${verdict(ok)} <${TARGET.fanoutMs} ms` };
    targets.push(t);
    L.push(`| ${f.subscriptions} | ${f.matching} | ${fmt(f.ms)} ms / ${fmt(f.msFromAnswer)} ms | ` +
      `${mib(f.idleRss)} → ${mib(f.afterSubscribeRss)} → ${mib(f.peakRss)} | ${t.text}${f.strays ? ` (${f.strays} calls to non-matching subscriptions)` : ''} |`, '');
  }
  if (results.hotfolder) {
    const h = results.hotfolder;
    L.push(`## 5. Hot folder: files renamed into a watched folder → emulator, ${h.parallel} at once (asset-hot-folder, untouched interval ${h.untouchedSeconds} s) vs \`curl -F\` over the same files with \`xargs -P ${h.parallel}\``, '');
    L.push('| Files | Variant | Seconds | Files/s | MiB/s | × curl | Node-RED CPU s | Peak RSS growth (MiB) | Target |', '|---|---|---:|---:|---:|---:|---:|---:|---|');
    for (const r of h.rows) {
      const curl = h.rows.find((c) => c.set === r.set && c.variant === 'curl');
      const ratio = curl ? curl.seconds / r.seconds : NaN;
      const rowTargets = [];
      if (r.variant === 'node') {
        rowTargets.push(target(`hot folder, ${r.files} × ${formatSize(r.size)}: ≥ ${TARGET.ratio}× the curl loop`, ratio >= TARGET.ratio, `≥ ${TARGET.ratio}× curl`));
        rowTargets.push(target(`hot folder, ${r.files} × ${formatSize(r.size)}: peak RSS growth < ${TARGET.growthMiB} MiB`, r.growth < TARGET.growthMiB * MiB, `< ${TARGET.growthMiB} MiB`));
      }
      targets.push(...rowTargets);
      L.push(`| ${r.files} × ${formatSize(r.size)} | ${r.variant === 'curl' ? `curl -F, xargs -P ${h.parallel}` : '**asset-hot-folder** (Node-RED)'} | ${fmt(r.seconds, 2)} | ` +
        `${fmt(r.filesPerSec, 1)} | ${fmt(r.mibPerSec)} | ${r.variant === 'curl' ? '1.00' : fmt(ratio, 2)} | ${r.cpu === undefined ? '' : fmt(r.cpu, 2)} | ` +
        `${r.growth === undefined ? '' : mib(r.growth)} | ${rowTargets.map((t) => t.text).join(', ')} |`);
    }
    L.push('');
    // Measured apart (bench/lib/hotfolder.js): the first big file after each deploy starts the transfer thread.
    for (const r of h.rows.filter((x) => x.variant === 'node' && x.warmUpSeconds !== undefined)) {
      L.push(`- ${r.files} × ${formatSize(r.size)}: the warm-up file before the batch (${formatSize(h.warmUpBytes)}, the first big file after the deploy, ` +
        `which starts the transfer thread) took ${fmt(r.warmUpSeconds, 2)} s (median) and up to ${mib(r.warmUpGrowth)} MiB of RSS; ` +
        `warm-up and batch together peaked at most ${mib(r.growthFromDeploy)} MiB over the RSS after the deploy. ` +
        `In the batch the first upload started ${fmt(r.firstUploadAfter, 2)} s after the files were dropped (median: the untouched interval and the scan).`);
    }
    L.push('');
  }
  for (const e of results.errors) L.push(`**Case not run or broken:** ${e}`, '');

  L.push('## Targets', '');
  if (results.quick) L.push('_Quick mode: small sizes; the throughput and memory targets are meant for the full run._', '');
  for (const t of targets) L.push(`- ${t.ok ? '✅ PASS' : '❌ FAIL'} ${t.name}`);
  L.push('');
  results.targets = targets;
  return L.join('\n');
}

/** Hand-written SVG: peak RSS growth against file size, upload and download side by side. */
function chartSvg(results) {
  const transfers = transferSummaries(results);
  const sizes = results.sizes.map((s) => s.size);
  const W = 960; const H = 470; const panelW = 430; const top = 60; const plotH = 300; const left = 85;
  const series = [
    { v: 'curl', color: '#888888', label: 'curl (whole process peak)' },
    { v: 'bare', color: '#9467bd', label: 'bare Node (own process)' },
    { v: 'client', color: '#1f77b4', label: 'API client (own process)' },
    { v: 'node', color: '#2ca02c', label: 'asset-upload / asset-download' },
    { v: 'core', color: '#d62728', label: 'core nodes (file in / http request / file out)' }
  ];
  const values = transfers.map((r) => (r.variant === 'curl' ? r.peak : r.growth)).filter(Number.isFinite);
  const maxMiB = Math.max(64, ...values.map((b) => b / MiB));
  const yTop = Math.pow(4, Math.ceil(Math.log(maxMiB) / Math.log(4)));
  const yOf = (bytes) => top + plotH - (Math.log(Math.max(bytes / MiB, 1)) / Math.log(yTop)) * plotH;
  const minS = Math.min(...sizes); const maxS = Math.max(...sizes);
  const xOf = (panelX, size) => panelX + 20 + (maxS === minS ? 0.5 : Math.log(size / minS) / Math.log(maxS / minS)) * (panelW - 110);
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">Peak RSS growth over idle vs file size (median of ${results.runs} runs, log scales)</text>`);
  ['upload', 'download'].forEach((dir, i) => {
    const px = left + i * (panelW + 40);
    out.push(`<text x="${px + panelW / 2 - 40}" y="${top - 12}" text-anchor="middle" font-size="14">${dir === 'upload' ? 'Upload' : 'Download'}</text>`);
    out.push(`<rect x="${px}" y="${top}" width="${panelW - 80}" height="${plotH}" fill="none" stroke="#333"/>`);
    for (let t = 1; t <= yTop; t *= 4) {
      const y = yOf(t * MiB);
      out.push(`<line x1="${px}" y1="${y}" x2="${px + panelW - 80}" y2="${y}" stroke="#e5e5e5"/>`);
      out.push(`<text x="${px - 6}" y="${y + 4}" text-anchor="end">${t >= 1024 ? `${t / 1024} GiB` : `${t} MiB`}</text>`);
    }
    const y64 = yOf(TARGET.growthMiB * MiB);
    out.push(`<line x1="${px}" y1="${y64}" x2="${px + panelW - 80}" y2="${y64}" stroke="#2ca02c" stroke-dasharray="6,4"/>`);
    out.push(`<text x="${px + panelW - 84}" y="${y64 - 4}" text-anchor="end" fill="#2ca02c">target: node &lt; 64 MiB</text>`);
    for (const s of sizes) {
      const x = xOf(px, s);
      out.push(`<line x1="${x}" y1="${top + plotH}" x2="${x}" y2="${top + plotH + 5}" stroke="#333"/>`);
      out.push(`<text x="${x}" y="${top + plotH + 18}" text-anchor="middle">${esc(formatSize(s))}</text>`);
    }
    out.push(`<text x="${px + (panelW - 80) / 2}" y="${top + plotH + 36}" text-anchor="middle">file size</text>`);
    for (const ser of series) {
      const pts = transfers.filter((r) => r.dir === dir && r.variant === ser.v)
        .map((r) => ({ x: xOf(px, r.size), b: ser.v === 'curl' ? r.peak : r.growth }))
        .filter((p) => Number.isFinite(p.b));
      if (!pts.length) continue;
      const dash = ser.v === 'curl' ? ' stroke-dasharray="2,3"' : '';
      out.push(`<polyline fill="none" stroke="${ser.color}" stroke-width="2"${dash} points="${pts.map((p) => `${p.x.toFixed(1)},${yOf(p.b).toFixed(1)}`).join(' ')}"/>`);
      for (const p of pts) {
        out.push(`<circle cx="${p.x.toFixed(1)}" cy="${yOf(p.b).toFixed(1)}" r="3.5" fill="${ser.color}"><title>${esc(ser.label)}: ${mib(p.b)} MiB</title></circle>`);
      }
    }
  });
  out.push(`<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">peak RSS growth</text>`);
  series.forEach((ser, i) => {
    const x = left + (i % 2) * 430; const y = top + plotH + 62 + Math.floor(i / 2) * 18;
    out.push(`<line x1="${x}" y1="${y - 4}" x2="${x + 24}" y2="${y - 4}" stroke="${ser.color}" stroke-width="2"${ser.v === 'curl' ? ' stroke-dasharray="2,3"' : ''}/>`);
    out.push(`<text x="${x + 30}" y="${y}">${esc(ser.label)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

module.exports = { markdown, chartSvg, TARGET };
