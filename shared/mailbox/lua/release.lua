-- End a drain, whichever way it ended (done, out of budget, error, lock lost): release
-- the lock if still ours and decide, atomically with the inbox, whether another drain is
-- needed. The "drain" mark is cleared only here and only when no work remains, so a
-- conversation with work always has the mark and a recent entry in the shard's drains
-- index, where the stalled-work sweeper finds it if the task that should follow is lost.
--
-- KEYS[1] lock  KEYS[2] inbox  KEYS[3] buffer  KEYS[4] state  KEYS[5] segments
-- KEYS[6] quarantine  KEYS[7] shard active  KEYS[8] shard drains
-- ARGV[1] lock token ("" = we never held it)   ARGV[2] member   ARGV[3] state ttl (ms)
-- ARGV[4] inbox messages that may wait (the detector's look-ahead: they are decided only
--         when more messages arrive, which queues a drain, or on a flush)
-- Returns 1 when the caller must publish a drain, 0 otherwise (done, or another worker
-- holds the lock and will decide when it releases).

local held = redis.call('GET', KEYS[1])
if held and held == ARGV[1] then
  redis.call('DEL', KEYS[1])
elseif held then
  return 0
end
local now = now_us()
local now_s = now / 1000000
if redis.call('LLEN', KEYS[2]) > tonumber(ARGV[4]) or redis.call('HEXISTS', KEYS[4], 'flush') == 1 then
  redis.call('HSETNX', KEYS[4], 'drain', fmt(now))
  redis.call('ZADD', KEYS[8], now_s, ARGV[2])
  return 1
end
redis.call('HDEL', KEYS[4], 'drain')
redis.call('ZREM', KEYS[8], ARGV[2])
if redis.call('LLEN', KEYS[3]) == 0 and redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[7], ARGV[2])
end
settle(KEYS[4], KEYS[2], KEYS[3], KEYS[5], KEYS[6], tonumber(ARGV[3]))
return 0
