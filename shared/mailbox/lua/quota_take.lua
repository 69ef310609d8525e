-- Take a shard's lease of a tenant's quotas away (to hand what it holds back to the tenant's
-- hash: quota_grant.lua's ARGV[5..7]).
--
-- KEYS[1] the shard's lease hash (memq:{s<n>}:quota:<tenant>): day, day_left, stored_left
--
-- Returns {day, day_left, stored_left}, or {} when the shard held no lease.

local h = redis.call('HMGET', KEYS[1], 'day', 'day_left', 'stored_left')
redis.call('DEL', KEYS[1])
if not h[1] then return {} end
return {h[1], h[2] or '0', h[3] or '0'}
