-- Bring a conversation's Redis state in line with what PostgreSQL holds, after the
-- Redis server restarted (its state may have lost its last writes) or when the state is
-- new or had expired. Fenced like commit_steps.lua.
--
-- KEYS[1] state   KEYS[2] lock   KEYS[3] segments
-- ARGV[1] lock token   ARGV[2] expected version   ARGV[3] Redis run id now
-- ARGV[4] fence (PostgreSQL's, just raised)   ARGV[5] lowest allowed sequence counter
-- ARGV[6] lowest allowed last effective timestamp (µs, "" = none)
-- Waiting segments ("<fence> <json>") are re-stamped with the new fence: they are
-- what this Redis holds, so they stay authoritative.
-- Returns the new version, or an error "LOCK" / "VERSION".

local version, refused = fenced(KEYS[2], ARGV[1], KEYS[1], ARGV[2])
if not version then
  return redis.error_reply(refused)
end
local seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
if tonumber(ARGV[5]) > seq then
  redis.call('HSET', KEYS[1], 'seq', ARGV[5])
end
if ARGV[6] ~= '' then
  local last = tonumber(redis.call('HGET', KEYS[1], 'last_eff_us') or '-1')
  if tonumber(ARGV[6]) > last then
    redis.call('HSET', KEYS[1], 'last_eff_us', ARGV[6])
  end
end
local segments = redis.call('HGETALL', KEYS[3])
for i = 1, #segments, 2 do
  local raw = segments[i + 1]
  local space = string.find(raw, ' ', 1, true)
  redis.call('HSET', KEYS[3], segments[i], ARGV[4] .. string.sub(raw, space))
end
redis.call('HSET', KEYS[1], 'rid', ARGV[3], 'fence', ARGV[4], 'version', version + 1)
return {version + 1, #segments / 2}
