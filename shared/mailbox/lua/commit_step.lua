-- Commit one segmentation step of a conversation, atomically, fenced three ways: by the
-- lock token (this worker still owns the conversation), by the state version (nothing
-- else changed it since this worker read it, which also catches a Redis that restarted
-- with an older state), and by the expected inbox front.
--
-- KEYS[1] inbox  KEYS[2] buffer  KEYS[3] state  KEYS[4] lock  KEYS[5] segments
-- KEYS[6] shard pending  KEYS[7] shard drains
-- ARGV[1] lock token   ARGV[2] lock lease (ms)   ARGV[3] expected state version
-- ARGV[4] item expected at the inbox front, popped ("" = none)
-- ARGV[5] buffer item to append ("" = none)   ARGV[6] items to drop from the buffer front
-- ARGV[7] sequence counter after this step ("" = unchanged)
-- ARGV[8] last effective timestamp µs ("" = unchanged)
-- ARGV[9] episode id of a closed segment ("" = none)   ARGV[10] segment JSON
-- ARGV[11] member   ARGV[12] flush token to clear if it is still the current one ("" = none)
-- ARGV[13] event state JSON
--
-- Returns the new version, or an error "LOCK", "VERSION" or "HEAD".

local version, refused = fenced(KEYS[4], ARGV[1], KEYS[3], ARGV[3])
if not version then
  return redis.error_reply(refused)
end
if ARGV[4] ~= '' then
  if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[4] then
    return redis.error_reply('HEAD')
  end
  redis.call('LPOP', KEYS[1])
  redis.call('HDEL', KEYS[3], 'fail_key', 'fail_count', 'fail_error')
end
local drop = tonumber(ARGV[6])
if drop > 0 then
  redis.call('LTRIM', KEYS[2], drop, -1)
end
if ARGV[5] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[5])
end
local now_s = now_us() / 1000000
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[9], ARGV[10])
  redis.call('ZADD', KEYS[6], now_s, ARGV[11] .. '/' .. ARGV[9])
end
redis.call('HSET', KEYS[3], 'version', version + 1, 'event', ARGV[13])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[3], 'seq', ARGV[7])
end
if ARGV[8] ~= '' then
  redis.call('HSET', KEYS[3], 'last_eff_us', ARGV[8])
end
if ARGV[12] ~= '' and redis.call('HGET', KEYS[3], 'flush') == ARGV[12] then
  redis.call('HDEL', KEYS[3], 'flush')
end
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('ZADD', KEYS[7], 'XX', now_s, ARGV[11])
return version + 1
