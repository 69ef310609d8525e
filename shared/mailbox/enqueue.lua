-- Accept a batch of messages into a conversation's inbox, atomically.
--
-- KEYS[1] inbox (list)   KEYS[2] state (hash)   KEYS[3] ids (set)
-- KEYS[4] active index (zset)   KEYS[5] drains index (zset)
-- ARGV[1] out-of-order policy: "clamp" | "reject"
-- ARGV[2] arrival time, epoch seconds (float)
-- ARGV[3] message-id memory, seconds
-- ARGV[4] this conversation's name in the global indexes
-- ARGV[5..] triples: message id, sent timestamp (epoch microseconds), JSON payload
--
-- Each accepted message gets the next sequence number and an effective timestamp
-- (its own, or under "clamp" the previous one's when it is older) and is pushed as
-- "<seq> <effective_us> <json>". A message id seen before is skipped. At most one
-- drain task is queued per conversation: the caller must queue one only when this
-- returns schedule = 1.
--
-- Returns {schedule, status_1, seq_1, status_2, seq_2, ...} with status
-- "a" accepted, "c" accepted with clamped timestamp, "d" duplicate (seq 0);
-- or {-1, index, last_us} when "reject" refuses message #index (nothing written).

local policy = ARGV[1]
local now = ARGV[2]
local ttl = tonumber(ARGV[3])
local member = ARGV[4]

local last = tonumber(redis.call('HGET', KEYS[2], 'last_ts_us') or '-1')

if policy == 'reject' then
  local probe = last
  local i = 5
  local index = 0
  while i <= #ARGV do
    local ts = tonumber(ARGV[i + 1])
    if redis.call('SISMEMBER', KEYS[3], ARGV[i]) == 0 then
      if ts < probe then
        return {-1, index, tostring(probe)}
      end
      probe = ts
    end
    i = i + 3
    index = index + 1
  end
end

local out = {0}
local accepted = 0
local i = 5
while i <= #ARGV do
  local id = ARGV[i]
  local ts = tonumber(ARGV[i + 1])
  if redis.call('SADD', KEYS[3], id) == 0 then
    table.insert(out, 'd')
    table.insert(out, 0)
  else
    local status = 'a'
    if ts < last then
      ts = last
      status = 'c'
    end
    last = ts
    local seq = redis.call('HINCRBY', KEYS[2], 'next_seq', 1)
    redis.call('RPUSH', KEYS[1], seq .. ' ' .. string.format('%d', ts) .. ' ' .. ARGV[i + 2])
    table.insert(out, status)
    table.insert(out, seq)
    accepted = accepted + 1
  end
  i = i + 3
end

redis.call('EXPIRE', KEYS[3], ttl)
if accepted > 0 then
  redis.call('HSET', KEYS[2], 'last_ts_us', string.format('%d', last))
  redis.call('ZADD', KEYS[4], now, member)
  if redis.call('HSETNX', KEYS[2], 'drain_queued', now) == 1 then
    redis.call('ZADD', KEYS[5], now, member)
    out[1] = 1
  end
end
return out
