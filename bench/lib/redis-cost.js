'use strict';
// What a burst costs redis-server: its CPU (from /proc, user + system) and the commands it ran
// (INFO commandstats). Scripts count once as a round trip (EVAL / EVALSHA) and each redis.call()
// inside them as a command of its own (Redis counts both), so the two are told apart here.
const Redis = require('ioredis');
const { readCpu } = require('./rss');

const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall']);
/** Commands this module itself sends to read the figures. */
const OWN_COMMANDS = new Set(['info', 'client', 'hello', 'ping']);

function parseCommandStats(text) {
  const calls = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]] = Number(m[2]);
  return calls;
}

/** A reader of `redis` ({ url, pid }): snapshot() before a burst, cost(before, entries) after. */
function redisCostMeter(redis) {
  const client = new Redis(redis.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  return {
    async snapshot() {
      return { cpu: readCpu(redis.pid), calls: parseCommandStats(await client.info('commandstats')) };
    },
    /** Per entry: redis-server CPU µs, round trips (scripts and plain commands sent), commands run inside scripts. */
    async cost(before, entries) {
      const after = await this.snapshot();
      let scripts = 0; let plain = 0;
      for (const [cmd, n] of Object.entries(after.calls)) {
        if (OWN_COMMANDS.has(cmd)) continue;
        const d = n - (before.calls[cmd] || 0);
        if (SCRIPT_COMMANDS.has(cmd)) scripts += d; else plain += d;
      }
      const per = (x) => (entries > 0 ? x / entries : NaN);
      return { redisCpuMicrosPerEntry: per((after.cpu - before.cpu) * 1e6), scriptsPerEntry: per(scripts), commandsPerEntry: per(plain), perCommand: after.calls };
    },
    close() { client.disconnect(); }
  };
}

module.exports = { redisCostMeter, parseCommandStats };
