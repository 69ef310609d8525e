-- Forget a closed segment once PostgreSQL holds its episode.
-- KEYS[1] segments  KEYS[2] shard pending  KEYS[3] state  KEYS[4] inbox  KEYS[5] buffer
-- KEYS[6] quarantine
-- ARGV[1] episode id   ARGV[2] pending index entry   ARGV[3] state ttl (ms)

redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], 'sfail:' .. ARGV[1])
settle(KEYS[3], KEYS[4], KEYS[5], KEYS[1], KEYS[6], tonumber(ARGV[3]))
return 1
