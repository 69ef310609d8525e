-- Release a conversation's lock only if it still holds our token.
-- KEYS[1] lock   ARGV[1] token   Returns 1 when released.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
