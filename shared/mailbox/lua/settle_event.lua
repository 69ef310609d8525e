-- A deferred webhook event is recorded: drop it, and the conversation from the shard's
-- index once it holds no other (one step, so an event deferred meanwhile is never orphaned).
-- KEYS[1] the conversation's webhooks hash   KEYS[2] the shard's webhooks index
-- ARGV[1] event id   ARGV[2] member

redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return 1
