/**
 * The Lua scripts that drain a Redis Stream inbox for a node switched back to at most once
 * (stream-leftovers.ts), beside the inbox's own (redis-stream-scripts.ts: the key layout, and
 * the per-asset lock these respect).
 */
import { FIELDS, FORGET_BYTES, NOW, PARK_GIVEN_BACK, STORED } from './redis-stream-scripts';

/** Shared Lua: the entries still stored under P; once none is, the stream and its counts go. */
const LEFT = `${STORED}local function left(p)
  local n = stored(p)
  if n == 0 then redis.call('DEL', p .. 's', p .. 'n', p .. 'b', p .. 'z') end
  return n
end
`;

/**
 * For a node switched back to at most once (stream-leftovers.ts), step one of two: gives a batch
 * of stored entries out to this copy's consumer, so that two copies never both get one; DRAINED
 * takes them out once sent. What is given out stays stored: a stream entry pending with this
 * consumer, a parked one in `P q` (never in the stream, so no copy in at least once reads it).
 * An answer lost on the way leaves it with this consumer, given out again at its next pass; a copy
 * that stopped lets go of it (LET_GO) or, killed, leaves it to any copy after the visibility timeout.
 * KEYS[1] P; ARGV[1] visibility ms, ARGV[2] batch size, ARGV[3] XRANGE start ('-' or '(<id>'),
 * ARGV[4] consumer. At most a batch per call: at the start of a pass ('-') the parked entries
 * given out before by this consumer, or by another longer ago than the visibility timeout; then
 * parked entries; then the stream: an asset's whole line with its first entry (its order kept,
 * never split between copies; a line longer than a batch is claimed whole and given out a batch
 * at a time); an asset whose first entry another consumer holds (pending, idle below the
 * visibility timeout) is left to it. Once nothing is stored, the keys go. Returns: next
 * start ('-' at the end; the same start after a full batch), entries stored (stream + parked,
 * given out or not), then id, key, data, deliveries of each entry given out.
 */
const DRAIN = `${FIELDS}${NOW}${LEFT}local p, vis, count, me = KEYS[1], tonumber(ARGV[1]), math.max(1, tonumber(ARGV[2])), ARGV[4]
local s, q = p .. 's', p .. 'q'
local out = {ARGV[3], 0}
local room = count
local function add(id, k, d, n) out[#out + 1] = id; out[#out + 1] = k; out[#out + 1] = d; out[#out + 1] = tostring(n); room = room - 1 end
local function give(id, rec)
  local r = cjson.decode(rec)
  redis.call('HSET', q, id, cjson.encode({r = rec, c = me, at = now}))
  add(id, r.k, r.d, r.n)
end
if ARGV[3] == '-' then
  local given = redis.call('HGETALL', q)
  for i = 1, #given, 2 do
    if room <= 0 then break end
    local g = cjson.decode(given[i + 1])
    if g.c == me or now - tonumber(g.at) >= vis then give(given[i], g.r) end
  end
end
-- Parked entries at every call, at most a batch each time (a long list goes out in batches).
if room > 0 then
  local ids = redis.call('HKEYS', p .. 'p')
  for i = 1, math.min(#ids, room) do
    give(ids[i], redis.call('HGET', p .. 'p', ids[i]))
    redis.call('HDEL', p .. 'p', ids[i])
  end
end
local full = room <= 0
if not full and redis.call('EXISTS', s) == 1 then
  local batch = redis.call('XRANGE', s, ARGV[3], '+', 'COUNT', room)
  out[1] = #batch >= room and '(' .. batch[#batch][1] or '-'
  local done = {}
  for _, e in ipairs(batch) do
    local k = fields(e[2])
    if not done[k] then
      done[k] = true
      local line = redis.call('LRANGE', p .. 'l:' .. k, 0, -1)
      if #line == 0 then line = {e[1]} end
      local pend = redis.call('XPENDING', s, 'g', line[1], line[1], 1)
      if #pend == 0 or pend[1][2] == me or tonumber(pend[1][3]) >= vis then
        -- A line that does not fit waits for the next call, unless it is the first of this one.
        if #line > room and room < count then full = true; break end
        for _, id in ipairs(line) do
          -- FORCE: also an entry no copy read yet (not in the group's pending list).
          if room > 0 then
            local x = redis.call('XCLAIM', s, 'g', me, 0, id, 'FORCE')
            if #x > 0 and type(x[1]) == 'table' then
              local _, d = fields(x[1][2])
              add(id, k, d, redis.call('HGET', p .. 'n', id) or '0')
            end
          else
            -- Beyond the batch: held by this consumer (its asset stays here), given out by the next calls.
            redis.call('XCLAIM', s, 'g', me, 0, id, 'FORCE', 'JUSTID')
          end
        end
      end
    end
    if room <= 0 then full = true; break end
  end
elseif not full then
  out[1] = '-'
end
-- A full batch: the next call looks again from the same place (what this one gave out is gone by then).
if full then out[1] = ARGV[3] end
out[2] = left(p)
return out`;

/**
 * Step two of DRAIN: the entries sent go. KEYS[1] P; ARGV[1] consumer, then id and key of each
 * entry sent. One still given out to this consumer goes (one another copy took over meanwhile
 * stays with it). Once nothing is stored, the keys go. Returns the entries still stored.
 */
const DRAINED = `${LEFT}${FORGET_BYTES}local p, me = KEYS[1], ARGV[1]
local s, q = p .. 's', p .. 'q'
for i = 2, #ARGV, 2 do
  local id, k = ARGV[i], ARGV[i + 1]
  local g = redis.call('HGET', q, id)
  if g then
    if cjson.decode(g).c == me then redis.call('HDEL', q, id); forgetBytes(p, {id}) end
  else
    local pend = redis.call('XPENDING', s, 'g', id, id, 1)
    if #pend > 0 and pend[1][2] == me then
      redis.call('XACK', s, 'g', id)
      redis.call('XDEL', s, id)
      redis.call('HDEL', p .. 'n', id)
      redis.call('LREM', p .. 'l:' .. k, 1, id)
      forgetBytes(p, {id})
    end
  end
end
return left(p)`;

/**
 * A node draining closes: what DRAIN gave out to its consumer and it did not send goes back, a
 * stream entry with its idle time set to the visibility timeout (another copy takes it at once),
 * a parked one to `P p`. Sent at once at the close: Redis runs it after a DRAIN under way on the
 * same connection, whose answer the node then does not send. KEYS[1] P; ARGV[1] consumer, ARGV[2]
 * visibility ms.
 */
const LET_GO = `${PARK_GIVEN_BACK}local p, me, vis = KEYS[1], ARGV[1], ARGV[2]
local s = p .. 's'
if redis.call('EXISTS', s) == 1 then
  for _, e in ipairs(redis.call('XPENDING', s, 'g', '-', '+', 1000000, me)) do
    redis.call('XCLAIM', s, 'g', me, 0, e[1], 'IDLE', vis, 'JUSTID')
  end
end
parkGivenBack(p, function(g) return g.c == me end)
return 1`;

export const DRAIN_SCRIPTS = { drain: DRAIN, drained: DRAINED, letGo: LET_GO };
