'use strict';
// BENCH_CPU_PROF=<dir>: the child processes (client-child.js, bare-child.js) write a V8 CPU profile
// of the transfer alone (not of their start-up) to <dir>/<op>-<pid>.cpuprofile. Read it with
// `node bench/cpu-profile-summary.js <file>`.
const fs = require('fs');
const path = require('path');

async function profiled(name, work) {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return work();
  const { Session } = require('inspector');
  const session = new Session();
  session.connect();
  const post = (method, params) => new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 500 });
  await post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await post('Profiler.stop');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${name}-${process.pid}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

module.exports = { profiled };
