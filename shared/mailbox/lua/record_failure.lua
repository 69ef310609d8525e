-- Count a deterministic failure of one unit of work and, at the threshold, move the unit
-- to the conversation's quarantine so that the rest of the conversation carries on.
--
-- KEYS[1] state  KEYS[2] inbox  KEYS[3] segments  KEYS[4] quarantine  KEYS[5] shard quarantined
-- KEYS[6] shard pending  KEYS[7] lock
-- ARGV[1] kind: "message" (the inbox front failed segmentation) | "segment" (episode creation)
-- ARGV[2] message: the exact inbox front item; segment: ""
-- ARGV[3] item id (message id / episode id)   ARGV[4] error   ARGV[5] threshold
-- ARGV[6] member   ARGV[7] lock token (message kind: the failure counts only while we own
--         the conversation and the message is still at the front)
-- Returns {failures so far, 1 if quarantined now}.

local kind, id, err, threshold, member = ARGV[1], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local now = now_us()
local count

if kind == 'message' then
  if redis.call('GET', KEYS[7]) ~= ARGV[7] or redis.call('LINDEX', KEYS[2], 0) ~= ARGV[2] then
    return {0, 0}
  end
  if redis.call('HGET', KEYS[1], 'fail_key') == id then
    count = redis.call('HINCRBY', KEYS[1], 'fail_count', 1)
  else
    redis.call('HSET', KEYS[1], 'fail_key', id, 'fail_count', 1)
    count = 1
  end
  redis.call('HSET', KEYS[1], 'fail_error', err)
  if count < threshold then
    return {count, 0}
  end
  redis.call('LPOP', KEYS[2])
  redis.call('HDEL', KEYS[1], 'fail_key', 'fail_count', 'fail_error')
  redis.call('HSET', KEYS[4], 'm:' .. id,
    cjson.encode({kind = 'message', id = id, item = ARGV[2], error = err, failures = count, at_us = fmt(now)}))
else
  local segment = redis.call('HGET', KEYS[3], id)
  if not segment then
    return {0, 0}
  end
  count = redis.call('HINCRBY', KEYS[1], 'sfail:' .. id, 1)
  if count < threshold then
    return {count, 0}
  end
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[6], member .. '/' .. id)
  redis.call('HDEL', KEYS[1], 'sfail:' .. id)
  redis.call('HSET', KEYS[4], 's:' .. id,
    cjson.encode({kind = 'segment', id = id, item = segment, error = err, failures = count, at_us = fmt(now)}))
end
redis.call('ZADD', KEYS[5], now / 1000000, member)
return {count, 1}
