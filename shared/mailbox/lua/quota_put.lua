-- Give a shard the lease quota_grant.lua granted; a lease another producer put there in the
-- meantime for the same day is added to (-1, no limit, stays -1).
--
-- KEYS[1] the shard's lease hash   ARGV[1] day   ARGV[2] day_left   ARGV[3] stored_left
--
-- Returns {}. A lease of another day found in the hash is replaced (only a race with another
-- producer's grant leaves one there: what its stored_left held stays counted until
-- `memq quota recount`). A lease without a stored limit expires two days after its grant (its
-- day's count means nothing later); one with a stored limit is kept until a grant takes it back.

local h = redis.call('HMGET', KEYS[1], 'day', 'day_left', 'stored_left')
local day_left, stored_left = tonumber(ARGV[2]), tonumber(ARGV[3])
if h[1] == ARGV[1] then
  local function add(held, new)
    held = tonumber(held or '0')
    if held < 0 or new < 0 then return -1 end
    return held + new
  end
  day_left, stored_left = add(h[2], day_left), add(h[3], stored_left)
end
redis.call('HSET', KEYS[1], 'day', ARGV[1], 'day_left', fmt(day_left), 'stored_left', fmt(stored_left))
if stored_left < 0 then
  -- Holds nothing that outlives its day: gone two days after its last grant.
  redis.call('PEXPIRE', KEYS[1], 2 * 86400000)
else
  redis.call('PERSIST', KEYS[1])  -- holds stored messages granted: kept until taken back
end
return {}
