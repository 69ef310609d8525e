-- Ask for a conversation's open event to be closed into an episode once its inbox is
-- drained: an explicit flush, or the inactivity collapse (MIRA). Queues a drain the
-- way enqueue.lua does.
--
-- KEYS[1] state   KEYS[2] shard drains   KEYS[3] inbox   KEYS[4] buffer   KEYS[5] shard active
-- ARGV[1] member   ARGV[2] reason ("explicit" | "inactivity")
-- ARGV[3] idle seconds: "" for an explicit flush; for a collapse, the conversation must
--         still be idle this long by Redis' clock (a message may have arrived since the
--         scan), and when it has nothing open it leaves the active index here, atomically.
--
-- Every request gets a new token "<n>:<reason>" in state.flush; a drain clears only the
-- token it acted on, so a request made while a drain is closing is never lost.
-- Returns {schedule, has_work}.

local member, reason, idle = ARGV[1], ARGV[2], ARGV[3]
local now = now_us()
local now_s = now / 1000000

if idle ~= '' then
  local score = redis.call('ZSCORE', KEYS[5], member)
  if not score or tonumber(score) > now_s - tonumber(idle) then
    return {0, 0}
  end
end
if redis.call('LLEN', KEYS[3]) == 0 and redis.call('LLEN', KEYS[4]) == 0 then
  if idle ~= '' then
    redis.call('ZREM', KEYS[5], member)
  end
  return {0, 0}
end
if idle ~= '' and redis.call('HEXISTS', KEYS[1], 'flush') == 1 then
  return {0, 1}  -- already being closed
end
local n = redis.call('HINCRBY', KEYS[1], 'flush_seq', 1)
redis.call('HSET', KEYS[1], 'flush', n .. ':' .. reason)
if redis.call('HSETNX', KEYS[1], 'drain', fmt(now)) == 1 then
  redis.call('ZADD', KEYS[2], now_s, member)
  return {1, 1}
end
return {0, 1}
