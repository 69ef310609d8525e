-- Grant a shard a lease of a tenant's quotas (messages per day, stored messages).
--
-- KEYS[1] the tenant's quota hash (its own hash slot: memq:{q:<tenant>}:quota):
--   day          the UTC day (days since the epoch, Redis' clock) day_used counts
--   day_used     messages granted to shards today (accepted, or leased and not yet used)
--   stored       messages granted to shards for good (accepted, or leased), less forgotten ones
--   limit_day    the tenant's own limits, set by `memq quota set`; absent: ARGV[1] / ARGV[2]
--   limit_stored   (-1: none; the defaults come from MEMQ_QUOTA_* settings, 0 there = none)
-- ARGV[1] default messages per day (-1 = none)   ARGV[2] default stored messages (-1 = none)
-- ARGV[3] need: messages the batch waiting for this lease accepts
-- ARGV[4] lease size: what a grant takes beyond need, so that the next batches of this shard
--         run without a lease (never more than is left)
-- ARGV[5] the returned lease's day, ARGV[6] its day_left, ARGV[7] its stored_left: what the
--         shard's old lease still held (taken by quota_take.lua); "" = nothing to return
--
-- Returns {0, day, day_left, stored_left} (a lease; -1 = no limit), or {-1, which, limit,
-- used} when the limit `which` ("messages_per_day" | "stored_messages") cannot cover need.

local today = math.floor(now_us() / 86400000000)
local q = KEYS[1]
local h = redis.call('HMGET', q, 'day', 'day_used', 'stored', 'limit_day', 'limit_stored')
local day_used, stored = tonumber(h[2] or '0'), tonumber(h[3] or '0')
if tonumber(h[1] or '-1') ~= today then
  day_used = 0
end
local limit_day = tonumber(h[4] or ARGV[1])
local limit_stored = tonumber(h[5] or ARGV[2])
local need, extra = tonumber(ARGV[3]), tonumber(ARGV[4])

-- What the shard's previous lease left unused goes back first (the day's count only for today's).
if ARGV[5] ~= '' then
  local back_day, back_stored = tonumber(ARGV[6]), tonumber(ARGV[7])
  if tonumber(ARGV[5]) == today and back_day > 0 then
    day_used = math.max(0, day_used - back_day)
  end
  if back_stored > 0 then
    stored = math.max(0, stored - back_stored)
  end
end

local function grant(limit, used)
  if limit < 0 then return -1 end
  local left = limit - used
  if left < need then return nil end
  return math.min(left, need + extra)
end

local day_left = grant(limit_day, day_used)
local stored_left = grant(limit_stored, stored)
local refused = nil
if day_left == nil then
  refused = {-1, 'messages_per_day', fmt(limit_day), fmt(day_used)}
elseif stored_left == nil then
  refused = {-1, 'stored_messages', fmt(limit_stored), fmt(stored)}
end
if refused then
  day_left, stored_left = 0, 0
end
if day_left > 0 then day_used = day_used + day_left end
if stored_left > 0 then stored = stored + stored_left end
redis.call('HSET', q, 'day', fmt(today), 'day_used', fmt(day_used), 'stored', fmt(stored))
if limit_stored < 0 and not h[4] and not h[5] then
  redis.call('PEXPIRE', q, 2 * 86400000)  -- nothing kept for good: gone two days after its last grant
else
  redis.call('PERSIST', q)
end
if refused then return refused end
return {0, fmt(today), fmt(day_left), fmt(stored_left)}
