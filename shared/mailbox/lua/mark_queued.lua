-- Mark a drain as queued unless one already is, in one step.
-- KEYS[1] state   KEYS[2] shard drains   ARGV[1] member
-- Returns 1 when the caller must publish the drain task.

local now = now_us()
if redis.call('HSETNX', KEYS[1], 'drain', fmt(now)) == 1 then
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[2], now / 1000000, ARGV[1])
  return 1
end
return 0
