-- Commit a batch of segmentation steps of a conversation, atomically (all or none),
-- fenced three ways: by the lock token (this worker still owns the conversation), by the
-- state version (nothing else changed it since this worker read it, which also catches a
-- Redis that restarted with an older state), and by the expected inbox front (the items
-- the steps pop, in order, are the inbox's first ones). Every check runs before anything
-- is written, so a refused batch leaves Redis as it was.
--
-- The event state is written once, as the last step left it: committing the steps one
-- by one would have written each step's state only for the next to overwrite it (with
-- the detector's embeddings, ~10 kB of writes and AOF per message).
--
-- KEYS[1] inbox  KEYS[2] buffer  KEYS[3] state  KEYS[4] lock  KEYS[5] segments
-- KEYS[6] shard pending  KEYS[7] shard drains
-- ARGV[1] lock token   ARGV[2] lock lease (ms)   ARGV[3] expected state version
-- ARGV[4] member   ARGV[5] event state JSON after the last step
-- ARGV[6..] per step, STEP_FIELDS values in this order:
--   item expected at the inbox front, popped ("" = none)
--   buffer item to append ("" = none)   items to drop from the buffer front (before the append)
--   sequence counter after this step ("" = unchanged)
--   last effective timestamp µs ("" = unchanged)
--   episode id of a closed segment ("" = none)   segment JSON
--   flush token to clear if it is still the current one ("" = none)
--
-- Returns the new version (the old one + 1), or an error "LOCK", "VERSION" or "HEAD".

local STEP_FIELDS, FIRST = 8, 6
local version, refused = fenced(KEYS[4], ARGV[1], KEYS[3], ARGV[3])
if not version then
  return redis.error_reply(refused)
end
local steps = (#ARGV - FIRST + 1) / STEP_FIELDS

-- the items popped, in order, must be the inbox's first ones
local heads = {}
for s = 0, steps - 1 do
  local head = ARGV[FIRST + s * STEP_FIELDS]
  if head ~= '' then
    heads[#heads + 1] = head
  end
end
if #heads > 0 then
  local front = redis.call('LRANGE', KEYS[1], 0, #heads - 1)
  for i = 1, #heads do
    if front[i] ~= heads[i] then
      return redis.error_reply('HEAD')
    end
  end
  redis.call('LTRIM', KEYS[1], #heads, -1)
  redis.call('HDEL', KEYS[3], 'fail_key', 'fail_count', 'fail_error')
end

local now_s = now_us() / 1000000
local fields = {'version', version + 1, 'event', ARGV[5]}
local seq, last_eff
for s = 0, steps - 1 do
  local at = FIRST + s * STEP_FIELDS
  local push, drop, step_seq, step_eff = ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
  local episode_id, segment, flush = ARGV[at + 5], ARGV[at + 6], ARGV[at + 7]
  if drop > 0 then
    redis.call('LTRIM', KEYS[2], drop, -1)
  end
  if push ~= '' then
    redis.call('RPUSH', KEYS[2], push)
  end
  if episode_id ~= '' then
    redis.call('HSET', KEYS[5], episode_id, segment)
    redis.call('ZADD', KEYS[6], now_s, ARGV[4] .. '/' .. episode_id)
  end
  if step_seq ~= '' then seq = step_seq end
  if step_eff ~= '' then last_eff = step_eff end
  if flush ~= '' and redis.call('HGET', KEYS[3], 'flush') == flush then
    redis.call('HDEL', KEYS[3], 'flush')
  end
end
if seq then
  fields[#fields + 1], fields[#fields + 2] = 'seq', seq
end
if last_eff then
  fields[#fields + 1], fields[#fields + 2] = 'last_eff_us', last_eff
end
redis.call('HSET', KEYS[3], unpack(fields))
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('ZADD', KEYS[7], 'XX', now_s, ARGV[4])
return version + 1
