-- Accept a batch of messages into one conversation's inbox, atomically.
--
-- KEYS[1] inbox   KEYS[2] state   KEYS[3] ids (zset)   KEYS[4] shard active   KEYS[5] shard drains
-- KEYS[6] the shard's quota lease of the tenant (below)
-- ARGV[1] out-of-order policy: "clamp" | "reject"
-- ARGV[2] dedup window (ms): how long each message id is remembered, from its acceptance
-- ARGV[3] the conversation's member name in the shard indexes
-- ARGV[4] the batch: one line per message, "<message id> <sent µs or empty> <JSON payload>",
--         lines joined by "\n" (ids are printable ASCII without spaces; JSON escapes every
--         newline). One argument instead of three per message: redis-py packs each argument
--         separately, which cost the producer more than the script itself.
--
-- An accepted message is pushed as "<effective_us> <arrival_us> <json>": arrival is
-- Redis' clock; the effective timestamp is the sent one or, under "clamp", the previous
-- message's when the sent one is older. A message id accepted within the window is a
-- duplicate. At most one drain task is queued per conversation: the caller publishes one
-- only when this returns schedule = 1.
--
-- Returns {schedule, statuses}: statuses one character per message, "a" accepted, "c"
-- accepted with a clamped timestamp, "d" duplicate; or {-1, index, last_us} when "reject"
-- refuses message #index (nothing written); or {-3, need} (KEYS[6]: a lease is needed).
-- The ids are looked up with one ZMSCORE and
-- the accepted ones written with one ZADD and one RPUSH (in chunks below Lua's unpack limit).
--
-- ARGV[5] the user the batch names ("" = none): the conversation's first user is kept in
-- the state's "user_id" (the workers copy it to PostgreSQL); a batch naming another user
-- is refused with {-2, owner} (nothing written).
--
-- KEYS[6] the shard's lease of the tenant's quotas (HASH day, day_left, stored_left; -1 =
-- no limit; granted by quota_grant.lua): the messages the batch accepts are taken from it.
-- When it is missing, of another day (Redis' clock, UTC) or too small, nothing is written
-- and the script returns {-3, need}: the caller gets a lease for need messages and sends the
-- batch again (a tenant over its quota gets no lease: that is the refusal).
--
-- KEYS[7] (optional) the broker's segmentation queue, ARGV[6] a drain task's message for
-- it (memq.shared.task_message), given when the broker is this Redis: the script queues
-- the task itself, in the same atomic step as the drain mark, and returns schedule = 2
-- (queued; the caller publishes nothing). Without them it returns schedule = 1 and the
-- caller publishes the task.

local policy, window, member = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local user = ARGV[5] or ''
if user ~= '' then
  local owner = redis.call('HGET', KEYS[2], 'user_id')
  if owner and owner ~= user then
    return {-2, owner}
  end
end
local now = now_us()
local now_ms = math.floor(now / 1000)
local CHUNK = 1000  -- values per unpack(): Lua's C stack holds at most ~8000
local LARGE_BATCH = 32
local LARGE_BATCH_MARKER = 'batch of 32 or more messages: this member keeps the id set a skiplist (see enqueue.lua)'

local now_text, now_ms_text = fmt(now), fmt(now_ms)
-- One pass over the lines. A message's payload is not cut out here: its item is built from
-- the line's end below, for the accepted ones only (one string made per message instead
-- of two: each costs Lua an allocation and a hash).
local ids, sent, sent_text, body_at, line_end = {}, {}, {}, {}, {}
local batch, pos, n = ARGV[4], 1, 0
local size = #batch
local find, sub = string.find, string.sub
while pos <= size do
  local eol = find(batch, '\n', pos, true) or (size + 1)
  local s1 = find(batch, ' ', pos, true)
  local s2 = find(batch, ' ', s1 + 1, true)
  n = n + 1
  ids[n] = sub(batch, pos, s1 - 1)
  if s2 == s1 + 1 then
    sent[n], sent_text[n] = now, now_text
  else
    local ts = sub(batch, s1 + 1, s2 - 1)
    sent[n], sent_text[n] = tonumber(ts), ts
  end
  body_at[n], line_end[n] = s2, eol - 1
  pos = eol + 1
end

-- known: the ids accepted within the window (and, below, the ones this batch accepts: a
-- repeat within the batch is a duplicate of its first). Ids past the window are removed only
-- after the batch is written: the script's first write must be one Redis refuses at its
-- maxmemory (ZADD, HINCRBY), because once a script has written anything Redis lets the rest
-- of it write past maxmemory too.
local oldest = now_ms - window
local known = {}
for first = 1, n, CHUNK do
  local scores = redis.call('ZMSCORE', KEYS[3], unpack(ids, first, math.min(first + CHUNK - 1, n)))
  for k = 1, #scores do
    if scores[k] and tonumber(scores[k]) >= oldest then known[ids[first + k - 1]] = true end
  end
end

local last = tonumber(redis.call('HGET', KEYS[2], 'last_ts_us') or '-1')
if policy == 'reject' then
  local probe, seen = last, {}
  for i = 1, n do
    local id = ids[i]
    if not known[id] and not seen[id] then
      seen[id] = true
      if sent[i] < probe then
        return {-1, i - 1, fmt(probe)}
      end
      probe = sent[i]
    end
  end
end

local statuses, members, items = {}, {}, {}
-- A large batch first adds a member that no message id can equal (it holds spaces) and that
-- is longer than zset-max-ziplist-value (64 by default): Redis then keeps the id set as a
-- skiplist instead of a ziplist, whose every insert and lookup scans the whole list (a
-- batch of 100 into a new set cost four times its Lua). It ages out with the ids. Memory:
-- ~110 bytes per id instead of ~27 until the set would have grown past 128 ids anyway.
if n >= LARGE_BATCH then
  members[1], members[2] = now_ms_text, LARGE_BATCH_MARKER
end
local m, k = #members, 0
local arrival = ' ' .. now_text
for i = 1, n do
  local id = ids[i]
  if not known[id] then
    known[id] = true  -- a repeat later in this batch is a duplicate
    local text = sent_text[i]
    if sent[i] < last then
      text = fmt(last)
      statuses[i] = 'c'
    else
      last = sent[i]
      statuses[i] = 'a'
    end
    members[m + 1], members[m + 2] = now_ms_text, id
    m = m + 2
    k = k + 1
    items[k] = text .. arrival .. sub(batch, body_at[i], line_end[i])  -- the body from its leading space
  else
    statuses[i] = 'd'
  end
end
if k > 0 then
  local lease = redis.call('HMGET', KEYS[6], 'day', 'day_left', 'stored_left')
  local day_left, stored_left = tonumber(lease[2] or '0'), tonumber(lease[3] or '0')
  if tonumber(lease[1] or '-1') ~= math.floor(now / 86400000000)
     or (day_left >= 0 and day_left < k) or (stored_left >= 0 and stored_left < k) then
    return {-3, k}
  end
  if day_left >= 0 then redis.call('HINCRBY', KEYS[6], 'day_left', -k) end
  if stored_left >= 0 then redis.call('HINCRBY', KEYS[6], 'stored_left', -k) end
end
for first = 1, #members, 2 * CHUNK do
  redis.call('ZADD', KEYS[3], unpack(members, first, math.min(first + 2 * CHUNK - 1, #members)))
end
for first = 1, #items, CHUNK do
  redis.call('RPUSH', KEYS[1], unpack(items, first, math.min(first + CHUNK - 1, #items)))
end

local out = {0, table.concat(statuses)}
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. fmt(oldest))
redis.call('PEXPIRE', KEYS[3], window)  -- (nothing when the set does not exist)
if #items > 0 then
  local now_s = now / 1000000
  redis.call('HSET', KEYS[2], 'last_ts_us', fmt(last))
  redis.call('HINCRBY', KEYS[2], 'accepted', #items)
  redis.call('PERSIST', KEYS[2])
  if user ~= '' then
    redis.call('HSETNX', KEYS[2], 'user_id', user)
  end
  redis.call('ZADD', KEYS[4], now_s, member)
  if redis.call('HSETNX', KEYS[2], 'drain', fmt(now)) == 1 then
    redis.call('ZADD', KEYS[5], now_s, member)
    if KEYS[7] and (ARGV[6] or '') ~= '' then
      redis.call('LPUSH', KEYS[7], ARGV[6])
      out[1] = 2
    else
      out[1] = 1
    end
  end
end
return out
