-- Put a quarantined item back to work: a message at the inbox front (it is the next to
-- be segmented), a segment back among those waiting for episode creation.
--
-- KEYS[1] quarantine  KEYS[2] shard quarantined  KEYS[3] inbox  KEYS[4] segments
-- KEYS[5] shard pending  KEYS[6] state  KEYS[7] shard drains  KEYS[8] shard active
-- ARGV[1] quarantine field ("m:<id>" | "s:<id>")   ARGV[2] member
-- Returns {} when there is no such item, else {kind, id, publish}: publish = 1 when the
-- caller must publish a task (a drain for a message, episode creation for a segment).

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
  return {}
end
local entry = cjson.decode(raw)
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[2])
end
local now = now_us()
local now_s = now / 1000000
redis.call('PERSIST', KEYS[6])
if entry.kind == 'message' then
  redis.call('LPUSH', KEYS[3], entry.item)
  redis.call('HDEL', KEYS[6], 'fail_key', 'fail_count', 'fail_error')
  redis.call('ZADD', KEYS[8], now_s, ARGV[2])
  local publish = 0
  if redis.call('HSETNX', KEYS[6], 'drain', fmt(now)) == 1 then
    redis.call('ZADD', KEYS[7], now_s, ARGV[2])
    publish = 1
  end
  return {'message', entry.id, publish}
end
redis.call('HSET', KEYS[4], entry.id, entry.item)
redis.call('ZADD', KEYS[5], now_s, ARGV[2] .. '/' .. entry.id)
return {'segment', entry.id, 1}
