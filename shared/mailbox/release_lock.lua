-- Release a conversation lock if this worker still holds it; when the conversation is
-- fully drained (empty inbox and buffer, no flush waiting), drop it from the active
-- index so inactivity collapse stops looking at it.
--
-- KEYS[1] lock   KEYS[2] inbox   KEYS[3] buffer   KEYS[4] active index   KEYS[5] state
-- ARGV[1] token   ARGV[2] member
-- Returns 1 when released, 0 when the lock was not ours.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if redis.call('LLEN', KEYS[2]) == 0 and redis.call('LLEN', KEYS[3]) == 0
   and redis.call('HEXISTS', KEYS[5], 'flush_requested') == 0 then
  redis.call('ZREM', KEYS[4], ARGV[2])
end
return 1
