-- Commit one segmentation step of a conversation, atomically and fenced by the lock.
--
-- KEYS[1] inbox   KEYS[2] buffer   KEYS[3] state   KEYS[4] lock   KEYS[5] segments
-- KEYS[6] pending index (zset)   KEYS[7] active index (zset)
-- ARGV[1] lock token        ARGV[2] lock lease (ms)
-- ARGV[3] head item expected at the inbox front ("" = do not pop the inbox)
-- ARGV[4] number of buffer items to drop from the front (they went into the segment)
-- ARGV[5] item to append to the buffer ("" = none)
-- ARGV[6] episode id of the closed segment ("" = no segment)
-- ARGV[7] segment JSON   ARGV[8] now (epoch seconds)   ARGV[9] member
-- ARGV[10] number of state fields to set, then field/value pairs, then fields to delete
--
-- Returns 1, or an error: "LOCK" when this worker no longer holds the conversation
-- (another took over), "HEAD" when the inbox front is not the expected message.

if redis.call('GET', KEYS[4]) ~= ARGV[1] then
  return redis.error_reply('LOCK')
end
if ARGV[3] ~= '' then
  if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[3] then
    return redis.error_reply('HEAD')
  end
  redis.call('LPOP', KEYS[1])
end
local drop = tonumber(ARGV[4])
if drop > 0 then
  redis.call('LTRIM', KEYS[2], drop, -1)
end
if ARGV[5] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[5])
end
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[6], ARGV[7])
  redis.call('ZADD', KEYS[6], ARGV[8], ARGV[9] .. '/' .. ARGV[6])
end
local nset = tonumber(ARGV[10])
local i = 11
for _ = 1, nset do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  redis.call('HDEL', KEYS[3], ARGV[i])
  i = i + 1
end
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return 1
