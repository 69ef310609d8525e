-- Accept a batch of messages into one conversation's inbox, atomically.
--
-- KEYS[1] inbox   KEYS[2] state   KEYS[3] ids (zset)   KEYS[4] shard active   KEYS[5] shard drains
-- ARGV[1] out-of-order policy: "clamp" | "reject"
-- ARGV[2] dedup window (ms): how long each message id is remembered, from its acceptance
-- ARGV[3] the conversation's member name in the shard indexes
-- ARGV[4..] triples: message id, sent timestamp in µs ("" = now), JSON payload
--
-- An accepted message is pushed as "<effective_us> <arrival_us> <json>": arrival is
-- Redis' clock; the effective timestamp is the sent one or, under "clamp", the previous
-- message's when the sent one is older. A message id accepted within the window is a
-- duplicate. At most one drain task is queued per conversation: the caller publishes one
-- only when this returns schedule = 1.
--
-- Returns {schedule, status_1, status_2, ...}: "a" accepted, "c" accepted with a clamped
-- timestamp, "d" duplicate; or {-1, index, last_us} when "reject" refuses message #index
-- (nothing written).

local policy, window, member = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_us()
local now_ms = math.floor(now / 1000)

redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. fmt(now_ms - window))
local last = tonumber(redis.call('HGET', KEYS[2], 'last_ts_us') or '-1')

if policy == 'reject' then
  local probe, index, seen = last, 0, {}
  for i = 4, #ARGV, 3 do
    local id = ARGV[i]
    if not seen[id] and not redis.call('ZSCORE', KEYS[3], id) then
      seen[id] = true
      local ts = now
      if ARGV[i + 1] ~= '' then ts = tonumber(ARGV[i + 1]) end
      if ts < probe then
        return {-1, index, fmt(probe)}
      end
      probe = ts
    end
    index = index + 1
  end
end

local out = {0}
local accepted = 0
for i = 4, #ARGV, 3 do
  if redis.call('ZADD', KEYS[3], 'NX', now_ms, ARGV[i]) == 0 then
    table.insert(out, 'd')
  else
    local ts = now
    if ARGV[i + 1] ~= '' then ts = tonumber(ARGV[i + 1]) end
    local status = 'a'
    if ts < last then
      ts = last
      status = 'c'
    end
    last = ts
    redis.call('RPUSH', KEYS[1], fmt(ts) .. ' ' .. fmt(now) .. ' ' .. ARGV[i + 2])
    table.insert(out, status)
    accepted = accepted + 1
  end
end

if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PEXPIRE', KEYS[3], window)
end
if accepted > 0 then
  local now_s = now / 1000000
  redis.call('HSET', KEYS[2], 'last_ts_us', fmt(last))
  redis.call('HINCRBY', KEYS[2], 'accepted', accepted)
  redis.call('PERSIST', KEYS[2])
  redis.call('ZADD', KEYS[4], now_s, member)
  if redis.call('HSETNX', KEYS[2], 'drain', fmt(now)) == 1 then
    redis.call('ZADD', KEYS[5], now_s, member)
    out[1] = 1
  end
end
return out
