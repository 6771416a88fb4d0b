'use strict';
// Floors of the at-least-once rows: loaded into the bench's Node-RED with
//   BENCH_FLOOR=nojournal,norevision BENCH_NODE_RED_ARGS="--require $PWD/bench/lib/floor-preload.js" npm run bench -- --only events --variants inbox
// (or EXTRA="--require ..." for bench/ab-events.js), it takes parts of the inbox away, so that a row
// shows what the rest costs. For measuring only: an inbox without them keeps none of its promises.
// BENCH_FLOOR, a comma list of:
//   nojournal   the journal inbox writes nothing: no record, no fsync, no compaction (its
//               bookkeeping still runs, as if each write were on disk at once)
//   norevision  the journal inbox keeps no newest revision per asset and checks none
//   barestream  the Redis Stream inbox's scripts cut to the duplicate claim (SET NX) and XADD,
//               XREADGROUP, XACK + XDEL: no bound, newest revision, per-asset line, delivery count
// Node-RED loads this package through a link to this checkout, so these are the same modules.
const path = require('path');

const DIST = path.join(__dirname, '..', '..', 'dist', 'events', 'inbox');
const parts = new Set((process.env.BENCH_FLOOR || '').split(',').filter(Boolean));
const known = ['nojournal', 'norevision', 'barestream'];
for (const p of parts) if (!known.includes(p)) throw new Error(`BENCH_FLOOR: "${p}" is not one of ${known.join(', ')}`);

if (parts.has('nojournal')) {
  const { JournalFile } = require(path.join(DIST, 'journal-file'));
  const records = require(path.join(DIST, 'journal-records'));
  const { newRecord } = require(path.join(DIST, 'inbox-state'));
  JournalFile.prototype.append = function append(text, onDurable) {
    return new Promise((resolve) => setImmediate(() => {
      if (typeof text === 'function') text(); // the gathered record's bookkeeping
      onDurable?.();
      resolve();
    }));
  };
  JournalFile.prototype.compact = function compact() {};
  records.storeRecords = (entries, firstId) => ({
    records: entries.map((e, i) => newRecord(firstId + i, e.key, e.entry, e.receivedAt, e.subscriptionId, e.revision)),
    text: ''
  });
}

if (parts.has('norevision')) {
  const { InboxState } = require(path.join(DIST, 'inbox-state'));
  const { NewestRevisions } = require(path.join(DIST, 'newest-revisions'));
  NewestRevisions.prototype.isOlder = () => false;
  NewestRevisions.prototype.reserve = () => -1;
  NewestRevisions.prototype.settle = () => undefined;
  InboxState.prototype.noteRevision = () => undefined;
}

if (parts.has('barestream')) {
  const { STREAM_SCRIPTS } = require(path.join(DIST, 'redis-stream-scripts'));
  // Same arguments and replies as the real scripts (redis-stream-scripts.ts), none of their rules.
  STREAM_SCRIPTS.store = `local p, win = KEYS[1], tonumber(ARGV[2])
local s = p .. 's'
if redis.call('EXISTS', s) == 0 then redis.call('XGROUP', 'CREATE', s, 'g', '0', 'MKSTREAM') end
local left = 0
for b = 4, #ARGV, 4 do
  local keep = true
  if ARGV[b] ~= '' and win > 0 then keep = redis.call('SET', p .. 'd:' .. ARGV[b], '1', 'PX', win, 'NX') ~= false end
  if keep then redis.call('XADD', s, '*', 'k', ARGV[b + 1], 'd', ARGV[b + 3]) else left = left + 1 end
end
return left`;
  STREAM_SCRIPTS.take = `local s, me = KEYS[1] .. 's', ARGV[1]
local out = {ARGV[8], 0, 0}
for i = 9, #ARGV, 3 do out[#out + 1] = 'x' end
if tonumber(ARGV[6]) > 0 and redis.call('EXISTS', s) == 1 then
  local r = redis.call('XREADGROUP', 'GROUP', 'g', me, 'COUNT', ARGV[6], 'STREAMS', s, '>')
  if r and r[1] then
    for _, e in ipairs(r[1][2]) do
      local f, k, d = e[2], '', ''
      for j = 1, #f, 2 do if f[j] == 'k' then k = f[j + 1] elseif f[j] == 'd' then d = f[j + 1] end end
      out[#out + 1] = e[1]; out[#out + 1] = 'g1'; out[#out + 1] = k; out[#out + 1] = d
    end
  end
end
return out`;
  STREAM_SCRIPTS.ack = `local s = KEYS[1] .. 's'
local ids, out = {}, {}
for i = 1, #ARGV, 3 do ids[#ids + 1] = ARGV[i]; out[#out + 1] = 1 end
for i = 1, #ids, 500 do
  redis.call('XACK', s, 'g', unpack(ids, i, math.min(i + 499, #ids)))
  redis.call('XDEL', s, unpack(ids, i, math.min(i + 499, #ids)))
end
return out`;
}
