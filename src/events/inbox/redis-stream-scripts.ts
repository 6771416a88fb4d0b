/**
 * The Lua scripts of the Redis Streams inbox (redis-stream-inbox.ts). Each runs atomically in
 * Redis, so no other copy's command runs between its checks and its writes.
 *
 * Keys, all under one prefix P that carries the node id as a cluster hash tag:
 * - `P s`        the stream of stored entries (fields `k` ordering key, `d` the entry as JSON); group `g`
 * - `P l:<key>`  the line of a key: stream ids of its entries not acknowledged or parked, in order
 *
 * The per-asset lock is the line and the consumer group together: only the first entry of a line
 * may start, and only the copy whose pending list holds it; another copy takes it over only once
 * its idle time (restarted when a delivery starts) passes the visibility timeout, which is the
 * lock's lease. No lock key of its own: it would be a second lease to keep in step with that one.
 * - `P n`        hash: deliveries so far per stream id
 * - `P p`        hash: parked entries, id -> JSON {k, d, n, r, pa}
 * - `P q`        hash: parked entries given out by a node switched back to at most once (DRAIN), id ->
 *                JSON {r = the parked JSON, c = consumer, at = ms}; out of reach of copies in at least once
 * - `P v:<key>`  newest revision stored of a key, PX = the revision horizon from its last store (kept
 *                after acknowledgement, as in the journal inbox; a re-sent older entry comes within it)
 * - `P d:<hex>`  an entry key's digest, PX = the duplicate window: a repeat within it is not stored
 * - `P b`        bytes of the data of the entries stored (stream and parked); `P z` hash: each one's, by
 *                id (entries stored before it existed are not counted; `P b` restarts when none is stored)
 */

/** Shared Lua: a stream entry's fields, its key `k` and data `d`. */
export const FIELDS = `local function fields(f)
  local k, d = '', ''
  for j = 1, #f, 2 do
    if f[j] == 'k' then k = f[j + 1] elseif f[j] == 'd' then d = f[j + 1] end
  end
  return k, d
end
`;

/** Shared Lua: Redis's clock in ms, as `now` (every copy compares times by the same clock). */
export const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Shared Lua: the entries stored under P, handed out or not: the stream, parked, parked given out by a drain. */
export const STORED = `local function stored(p)
  return redis.call('XLEN', p .. 's') + redis.call('HLEN', p .. 'p') + redis.call('HLEN', p .. 'q')
end
`;

/** Shared Lua: parked entries a drain gave out (`P q`) for which `back(g)` holds are parked again. */
export const PARK_GIVEN_BACK = `local function parkGivenBack(p, back)
  local given = redis.call('HGETALL', p .. 'q')
  for i = 1, #given, 2 do
    local g = cjson.decode(given[i + 1])
    if back(g) then
      redis.call('HSET', p .. 'p', given[i], g.r)
      redis.call('HDEL', p .. 'q', given[i])
    end
  end
end
`;

/**
 * Shared Lua: one command over many ids (`XACK s g ...`, `HDEL n ...`), in slices that Lua's
 * unpack can take.
 */
const EACH = `local function each(ids, f)
  for i = 1, #ids, 500 do f(unpack(ids, i, math.min(i + 499, #ids))) end
end
`;

/** Shared Lua: parks one entry (kept in `P p`, out of the stream and its line). */
const PARK = `local function park(p, id, k, n, reason, now)
  local e = redis.call('XRANGE', p .. 's', id, id)
  local rec = nil
  if #e > 0 then
    local f = e[1][2]
    local d = ''
    for j = 1, #f, 2 do if f[j] == 'd' then d = f[j + 1] end end
    rec = cjson.encode({k = k, d = d, n = n, r = reason, pa = now})
    redis.call('HSET', p .. 'p', id, rec)
  end
  redis.call('XACK', p .. 's', 'g', id)
  redis.call('XDEL', p .. 's', id)
  redis.call('LREM', p .. 'l:' .. k, 1, id)
  redis.call('HDEL', p .. 'n', id)
  return rec
end
`;

/** Shared Lua: entries that leave for good take their bytes out of `P b` (see the keys above). */
export const FORGET_BYTES = `local function forgetBytes(p, ids)
  if #ids == 0 then return end
  local n = 0
  for _, z in ipairs(redis.call('HMGET', p .. 'z', unpack(ids))) do n = n + (tonumber(z) or 0) end
  redis.call('HDEL', p .. 'z', unpack(ids))
  if n > 0 and redis.call('DECRBY', p .. 'b', n) <= 0 then redis.call('DEL', p .. 'b') end
end
`;

/**
 * KEYS[1] P; ARGV[1] bound on stored entries, ARGV[2] duplicate window ms (0: none), ARGV[3] revision
 * horizon ms, ARGV[4] bound on their bytes (0: none), then per entry four: digest hex ('' none), key,
 * revision ('' none), data. All or none: -1 when the inbox is full (it holds its bound: types.ts isFull),
 * -2 when the callback's data would pass the byte bound (types.ts passesBytes), and any of them is new;
 * else how many were left out (a repeat within the window, or older than a stored revision of their key).
 *
 * Below the bound (the usual case), one pass writes as it checks: a repeat is `SET d NX` not setting, a
 * newest revision is `SET v GET` (put back when the one there is newer), four calls per new entry with
 * the XADD and the line's RPUSH; the entries' bytes go in one HSET z and one INCRBY b per callback. When full, a pass checks without writing whether any is new (not a
 * repeat, and not older than its key's stored revision; a key with nothing stored takes any revision,
 * as the one-pass way stores any first one): only a callback of repeats is answered. Each entry is
 * compared with what is stored alone: an earlier entry of the callback that was new has answered -1 or -2
 * already, and the others change nothing.
 */
const STORE = `${STORED}${EACH}local p, max, win, horizon, maxBytes = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local s = p .. 's'
if redis.call('EXISTS', s) == 0 then redis.call('XGROUP', 'CREATE', s, 'g', '0', 'MKSTREAM') end
local count = (#ARGV - 4) / 4
-- Each stored entry's bytes (id, size pairs) and their sum: written with one HSET and one INCRBY at the end.
local sizes, added = {}, 0
local function add(b)
  local id = redis.call('XADD', s, '*', 'k', ARGV[b + 1], 'd', ARGV[b + 3])
  redis.call('RPUSH', p .. 'l:' .. ARGV[b + 1], id)
  sizes[#sizes + 1] = id
  sizes[#sizes + 1] = #ARGV[b + 3]
  added = added + #ARGV[b + 3]
end
local n = stored(p)
if n == 0 then redis.call('DEL', p .. 'b', p .. 'z') end
local full = n >= max and -1 or nil
if not full and maxBytes > 0 then
  local held, adding = tonumber(redis.call('GET', p .. 'b') or '0'), 0
  for b = 5, #ARGV, 4 do adding = adding + #ARGV[b + 3] end
  if held > 0 and held + adding > maxBytes then full = -2 end
end
if not full then
  local left = 0
  for b = 5, #ARGV, 4 do
    local dg, k, v = ARGV[b], ARGV[b + 1], ARGV[b + 2]
    local keep = true
    if dg ~= '' and win > 0 then keep = redis.call('SET', p .. 'd:' .. dg, '1', 'PX', win, 'NX') ~= false end
    if keep and v ~= '' then
      local was = redis.call('SET', p .. 'v:' .. k, v, 'PX', horizon, 'GET')
      if was and tonumber(was) > tonumber(v) then
        keep = false
        redis.call('SET', p .. 'v:' .. k, was, 'PX', horizon)
      end
    end
    if keep then add(b) else left = left + 1 end
  end
  each(sizes, function(...) redis.call('HSET', p .. 'z', ...) end) -- slices of 500: whole id, size pairs
  if added > 0 then redis.call('INCRBY', p .. 'b', added) end
  return left
end
for b = 5, #ARGV, 4 do
  local dg, k, v = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  if not (dg ~= '' and win > 0 and redis.call('EXISTS', p .. 'd:' .. dg) == 1) then
    if v == '' then return full end
    local got = redis.call('GET', p .. 'v:' .. k)
    if not got or tonumber(v) >= tonumber(got) then return full end
  end
end
return count`;

/**
 * One take in one round trip. KEYS[1] P; ARGV[1] consumer, ARGV[2] visibility ms, ARGV[3] max
 * deliveries, ARGV[4] now (ISO), ARGV[5] room (deliveries this copy may start), ARGV[6] how many
 * new entries to read (XREADGROUP; 0: none), ARGV[7] how many timed-out entries to claim
 * (XAUTOCLAIM; 0: none), ARGV[8] the claim cursor, then for each entry the copy already holds:
 * id, key, `c` (check: it may have been claimed by another copy meanwhile; its idle time is
 * restarted) or `t` (touched less than a third of the timeout ago: still this copy's).
 * Returns: cursor, stream length, parked count, one code per held entry, then id, code, key, data
 * of each entry claimed or read. Codes: `g<n>` go (delivery n), `w` wait
 * (not first of its asset's line: an earlier entry of the asset is in flight or waits), `s` skipped (no room), `x` gone
 * (acknowledged, or claimed by another copy), `p<json>` parked (its last delivery timed out), `-`
 * a repeat of an entry already answered for.
 */
const TAKE = `${PARK}${FIELDS}${EACH}local p, me, vis, max, now, room = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local s = p .. 's'
local seen = {}
-- First deliveries of entries new to the group: their counts (1) are set in one HSET at the end.
local firsts = {}
-- mode: 'c' check (held a while), 't' trusted (held, touched lately), 'f' fresh (claimed in this
-- script), 'r' read (new to the group in this script: never delivered, no count yet)
local function start(id, k, mode)
  if seen[id] then return '-' end
  seen[id] = true
  if mode == 'c' then
    local pend = redis.call('XPENDING', s, 'g', id, id, 1)
    if #pend == 0 or pend[1][2] ~= me then return 'x' end
  end
  local code
  if room <= 0 then code = 's'
  elseif redis.call('LINDEX', p .. 'l:' .. k, 0) ~= id then code = 'w'
  elseif mode == 'r' then
    firsts[#firsts + 1] = id
    firsts[#firsts + 1] = 1
    room = room - 1
    code = 'g1'
  else
    local n = redis.call('HINCRBY', p .. 'n', id, 1)
    if n > max then
      return 'p' .. park(p, id, k, n - 1, 'not acknowledged within the visibility timeout (' .. (n - 1) .. ' deliveries)', now)
    end
    room = room - 1
    code = 'g' .. n
  end
  -- Idle time restarted: a held entry's when checked, and a delivery's when it starts.
  if mode == 'c' or (mode == 't' and string.sub(code, 1, 1) == 'g') then redis.call('XCLAIM', s, 'g', me, 0, id, 'JUSTID') end
  return code
end
local out = {ARGV[8], 0, 0}
for i = 9, #ARGV, 3 do out[#out + 1] = start(ARGV[i], ARGV[i + 1], ARGV[i + 2]) end
local got, modes = {}, {}
if tonumber(ARGV[7]) > 0 and redis.call('EXISTS', s) == 1 then
  local r = redis.call('XAUTOCLAIM', s, 'g', me, vis, ARGV[8], 'COUNT', ARGV[7])
  out[1] = r[1]
  for _, e in ipairs(r[2]) do if type(e) == 'table' then got[#got + 1] = e; modes[#got] = 'f' end end
end
if tonumber(ARGV[6]) > 0 and redis.call('EXISTS', s) == 1 then
  local r = redis.call('XREADGROUP', 'GROUP', 'g', me, 'COUNT', ARGV[6], 'STREAMS', s, '>')
  if r and r[1] then for _, e in ipairs(r[1][2]) do got[#got + 1] = e; modes[#got] = 'r' end end
end
for j, e in ipairs(got) do
  local k, d = fields(e[2])
  -- Just read or claimed by this consumer, in this script: its own, idle time restarted.
  local code = start(e[1], k, modes[j])
  if code ~= '-' then
    out[#out + 1] = e[1]; out[#out + 1] = code; out[#out + 1] = k; out[#out + 1] = d
  end
end
if #firsts > 0 then each(firsts, function(...) redis.call('HSET', p .. 'n', ...) end) end
out[2] = redis.call('XLEN', s)
out[3] = redis.call('HLEN', p .. 'p')
return out`;

/** The entry's key from the stream, or nil when it is gone. */
const KEY_OF = `local function keyOf(p, id)
  local e = redis.call('XRANGE', p .. 's', id, id)
  if #e == 0 then return nil end
  local f = e[1][2]
  for j = 1, #f, 2 do if f[j] == 'k' then return f[j + 1] end end
  return nil
end
`;

/**
 * KEYS[1] P; then per acknowledgement: id, delivery, key ('' unknown: read from the stream). One
 * code each: 1 acknowledged (the entry leaves the stream, XACK + XDEL: the stream holds only what
 * is not acknowledged; the next of its asset may go), 0 unknown or in flight with another delivery.
 * The delivery counts are read in one HMGET, and the acknowledged entries leave in one XACK, XDEL
 * and HDEL: one call per entry (its line's LPOP) besides those.
 */
const ACK = `${KEY_OF}${EACH}${FORGET_BYTES}
local p = KEYS[1]
local s = p .. 's'
local ids = {}
for i = 1, #ARGV, 3 do ids[#ids + 1] = ARGV[i] end
local counts = {}
each(ids, function(...) for _, n in ipairs(redis.call('HMGET', p .. 'n', ...)) do counts[#counts + 1] = n end end)
local out, done = {}, {}
for j, id in ipairs(ids) do
  local d, k = tonumber(ARGV[3 * j - 1]), ARGV[3 * j]
  local ok = 0
  -- The latest delivery of the first entry of its line (also after its timeout, until it starts again).
  -- A delivery is counted only for the first of a line, so the count matching says it is first;
  -- LPOP checks it all the same (and puts back what it took when not).
  if tonumber(counts[j] or '0') == d then
    if k == '' then k = keyOf(p, id) end
    local first = k and redis.call('LPOP', p .. 'l:' .. k)
    if first == id then
      ok = 1
      done[#done + 1] = id
    elseif first then
      redis.call('LPUSH', p .. 'l:' .. k, first)
    end
  end
  out[#out + 1] = ok
end
if #done > 0 then
  each(done, function(...) redis.call('XACK', s, 'g', ...) end)
  each(done, function(...) redis.call('XDEL', s, ...) end)
  each(done, function(...) redis.call('HDEL', p .. 'n', ...) end)
  for i = 1, #done, 500 do forgetBytes(p, {unpack(done, i, math.min(i + 499, #done))}) end
end
return out`;

/**
 * KEYS[1] P; ARGV[1] id, ARGV[2] delivery, ARGV[3] max deliveries, ARGV[4] reason, ARGV[5] now,
 * ARGV[6] consumer, ARGV[7] '1' when the server was away (the delivery is not counted, never
 * parks). `a` again (the entry stays with this copy, its idle time
 * restarted, and this copy delivers it after the backoff),
 * `p<json>` parked (its last delivery), `x` unknown or in flight with another delivery.
 */
const REJECT = `${PARK}${KEY_OF}
local p, id, d, max = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local k = keyOf(p, id)
if not k or redis.call('LINDEX', p .. 'l:' .. k, 0) ~= id or tonumber(redis.call('HGET', p .. 'n', id) or '0') ~= d then return 'x' end
if ARGV[7] == '1' then redis.call('HSET', p .. 'n', id, d - 1)
elseif d >= max then return 'p' .. park(p, id, k, d, ARGV[4], ARGV[5]) end
redis.call('XCLAIM', p .. 's', 'g', ARGV[6], 0, id, 'JUSTID')
return 'a'`;

/**
 * KEYS[1] P; ARGV[1] consumer, ARGV[2] visibility ms, then ids this copy lets go (it closes): their
 * idle time is set to the visibility timeout, so
 * that another copy claims them at once instead of after it.
 */
const RELEASE = `${KEY_OF}
local p, me, vis = KEYS[1], ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local id = ARGV[i]
  local k = keyOf(p, id)
  local pend = redis.call('XPENDING', p .. 's', 'g', id, id, 1)
  if k and #pend > 0 and pend[1][2] == me then
    redis.call('XCLAIM', p .. 's', 'g', me, 0, id, 'IDLE', vis, 'JUSTID')
  end
end
return 1`;

/** KEYS[1] P; ARGV[1] parked id. The new stream id (back of its key's line, deliveries from 0), or false. */
const DELIVER_AGAIN = `local p, id = KEYS[1], ARGV[1]
local rec = redis.call('HGET', p .. 'p', id)
if not rec then return false end
local r = cjson.decode(rec)
local s = p .. 's'
if redis.call('EXISTS', s) == 0 then redis.call('XGROUP', 'CREATE', s, 'g', '0', 'MKSTREAM') end
local nid = redis.call('XADD', s, '*', 'k', r.k, 'd', r.d)
redis.call('RPUSH', p .. 'l:' .. r.k, nid)
redis.call('HDEL', p .. 'p', id)
local z = redis.call('HGET', p .. 'z', id)
if z then redis.call('HSET', p .. 'z', nid, z); redis.call('HDEL', p .. 'z', id) end
return nid`;

/** KEYS[1] P; ARGV[1] parked id: 1 when it went. */
const DISCARD = `${FORGET_BYTES}local gone = redis.call('HDEL', KEYS[1] .. 'p', ARGV[1])
if gone == 1 then forgetBytes(KEYS[1], {ARGV[1]}) end
return gone`;

/**
 * KEYS[1] P; ARGV[1] this consumer, ARGV[2] ms: other consumers holding nothing and idle longer go.
 * ARGV[3] visibility ms: parked entries a drain gave out longer ago (`P q`: its copy was killed, and
 * no copy in at most once is left to give them out again) are parked again, listed in the sidebar.
 */
const SWEEP = `${NOW}${PARK_GIVEN_BACK}local s, n = KEYS[1] .. 's', 0
parkGivenBack(KEYS[1], function(g) return now - tonumber(g.at) >= tonumber(ARGV[3]) end)
-- A drain deletes an empty stream (its group with it) while a copy in at least once may still run.
if redis.call('EXISTS', s) == 0 then return 0 end
for _, info in ipairs(redis.call('XINFO', 'CONSUMERS', s, 'g')) do
  local f = {}
  for j = 1, #info, 2 do f[info[j]] = info[j + 1] end
  if f['name'] ~= ARGV[1] and tonumber(f['pending']) == 0 and tonumber(f['idle']) > tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', s, 'g', f['name'])
    n = n + 1
  end
end
return n`;

/** KEYS[1] P: the entries stored (STORED). */
const COUNT_STORED = `${STORED}return stored(KEYS[1])`;

export const STREAM_SCRIPTS = {
  store: STORE, take: TAKE, ack: ACK, reject: REJECT, release: RELEASE,
  deliverAgain: DELIVER_AGAIN, discard: DISCARD, sweep: SWEEP, countStored: COUNT_STORED
};
