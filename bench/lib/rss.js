'use strict';
// Memory of another process, read from /proc (Linux): resident set size and its high-water mark.
const fs = require('fs');

const KiB = 1024;
const CLOCK_TICKS = 100; // USER_HZ: 100 on every Linux architecture Node runs on

/** { rss, hwm } in bytes, or null when the process is gone or /proc is missing. */
function readMemory(pid) {
  let text;
  try { text = fs.readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return null; }
  const rss = /VmRSS:\s+(\d+) kB/.exec(text);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(text);
  if (!rss) return null;
  return { rss: Number(rss[1]) * KiB, hwm: hwm ? Number(hwm[1]) * KiB : 0 };
}

/** CPU time (seconds) the process has used so far: { user, sys }, NaN when it is gone. */
function readCpuParts(pid) {
  try {
    // fields after the command name: state is field 3, utime 14 and stime 15 (1-based, see proc(5))
    const rest = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop().split(' ');
    return { user: Number(rest[11]) / CLOCK_TICKS, sys: Number(rest[12]) / CLOCK_TICKS };
  } catch { return { user: NaN, sys: NaN }; }
}

/**
 * Each thread of `pid` (Linux: /proc/<pid>/task) by thread id: its name, CPU time so far (seconds,
 * user and system) and minor page faults. A thread that ends while they are read is left out.
 */
function readThreads(pid) {
  const out = new Map();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try { stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'); } catch { continue; }
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from state (3) on, see proc(5)
    out.set(tid, {
      name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      user: Number(rest[11]) / CLOCK_TICKS, sys: Number(rest[12]) / CLOCK_TICKS, faults: Number(rest[7])
    });
  }
  return out;
}

/** CPU time (user + system, seconds) the process has used so far, or NaN when it is gone. */
function readCpu(pid) {
  const c = readCpuParts(pid);
  return c.user + c.sys;
}

/** Resets VmHWM to the current RSS (`echo 5 > clear_refs`, Linux 4.0+). false when not allowed. */
function resetPeak(pid) {
  try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); return true; } catch { return false; }
}

/**
 * Samples VmRSS of `pid` every `intervalMs` while `work()` runs, and also reads the kernel's
 * high-water mark (reset just before), so a spike between two samples is not missed.
 * Returns { idle, peak, growth, samples, result }; idle is the RSS just before `work` starts.
 */
async function measurePeak(pid, work, intervalMs = 20) {
  const before = readMemory(pid);
  if (!before) throw new Error(`cannot read /proc/${pid}/status: process gone or not Linux`);
  const hwmReset = resetPeak(pid);
  const cpuBefore = readCpuParts(pid);
  let sampled = before.rss;
  let samples = 0;
  const timer = setInterval(() => {
    const m = readMemory(pid);
    if (m) { samples++; if (m.rss > sampled) sampled = m.rss; }
  }, intervalMs);
  let result;
  try {
    result = await work();
  } finally {
    clearInterval(timer);
  }
  const cpuAfter = readCpuParts(pid);
  const cpuUser = cpuAfter.user - cpuBefore.user;
  const cpuSys = cpuAfter.sys - cpuBefore.sys;
  const cpu = cpuUser + cpuSys;
  const after = readMemory(pid);
  if (after && after.rss > sampled) sampled = after.rss;
  const peak = Math.max(sampled, hwmReset && after ? after.hwm : 0);
  return { idle: before.rss, peak, growth: peak - before.rss, cpu, cpuUser, cpuSys, sampledPeak: sampled, hwmUsed: hwmReset, samples, result };
}

module.exports = { CLOCK_TICKS, readMemory, readCpu, readCpuParts, readThreads, resetPeak, measurePeak };
