-- Re-stamp one waiting segment with the conversation's current fence, when the state is
-- synced with this Redis server (a segment present in Redis is authoritative; the fence
-- only keeps copies of segments that no longer exist here from being written). Used by
-- episode creation when PostgreSQL refuses a segment's fence, e.g. a segment put back
-- from the quarantine after its conversation was re-synced.
--
-- KEYS[1] segments   KEYS[2] state
-- ARGV[1] episode id
-- Returns the segment's fence now, 0 when the state is not synced (a drain must sync it
-- first), -1 when the segment is gone.

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
  return -1
end
local info = redis.call('INFO', 'server')
local run_id = string.match(info, 'run_id:(%x+)') or ''
local f = redis.call('HMGET', KEYS[2], 'rid', 'fence')
if not f[1] or f[1] ~= run_id or not f[2] then
  return 0
end
local space = string.find(raw, ' ', 1, true)
redis.call('HSET', KEYS[1], ARGV[1], f[2] .. string.sub(raw, space))
return tonumber(f[2])
