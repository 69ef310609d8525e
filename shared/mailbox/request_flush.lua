-- Ask for a conversation's open event to be closed into an episode once its inbox is
-- drained (explicit flush or inactivity collapse). Queues a drain like enqueue.lua.
--
-- KEYS[1] state (hash)   KEYS[2] drains index (zset)   KEYS[3] inbox   KEYS[4] buffer
-- ARGV[1] now (epoch seconds)   ARGV[2] member   ARGV[3] reason
-- Returns {schedule, has_work}: has_work = 0 when inbox and buffer are both empty
-- (nothing to flush; no flag is left behind).

if redis.call('LLEN', KEYS[3]) == 0 and redis.call('LLEN', KEYS[4]) == 0 then
  return {0, 0}
end
redis.call('HSET', KEYS[1], 'flush_requested', ARGV[3])
if redis.call('HSETNX', KEYS[1], 'drain_queued', ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
  return {1, 1}
end
return {0, 1}
