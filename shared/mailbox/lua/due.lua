-- Entries of a shard index older than an age, by Redis' clock, up to a limit; with
-- touch = 1 their scores are set to now, so a sweep that re-publishes their tasks does
-- not re-publish them again before another full age has passed.
--
-- KEYS[1] shard index (active | drains | pending)
-- ARGV[1] age (seconds)   ARGV[2] limit   ARGV[3] touch (0 | 1)
-- Returns the entries.

local now_s = now_us() / 1000000
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_s - tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
if ARGV[3] == '1' then
  for _, entry in ipairs(due) do
    redis.call('ZADD', KEYS[1], 'XX', now_s, entry)
  end
end
return due
