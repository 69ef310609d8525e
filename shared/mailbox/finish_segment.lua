-- Forget a closed segment once its episode is stored in PostgreSQL.
-- KEYS[1] segments (hash)   KEYS[2] pending index (zset)
-- ARGV[1] episode id   ARGV[2] pending index member
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
