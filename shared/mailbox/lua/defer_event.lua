-- Keep a webhook event PostgreSQL could not record, for the sweep to record later.
-- KEYS[1] the conversation's webhooks hash   KEYS[2] the shard's webhooks index
-- ARGV[1] event id   ARGV[2] the event (JSON)   ARGV[3] member   ARGV[4] now (s)

redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[4]), ARGV[3])
return 1
