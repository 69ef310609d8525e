-- Helpers prepended to every memq script (see scripts.py). Times come from Redis' own
-- clock (TIME), so decisions never compare clocks of different machines.

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function fmt(n)
  return string.format('%d', n)
end

-- A conversation at rest (nothing queued, open, pending, quarantined or asked for) keeps
-- its state hash only for ttl_ms more: counters and fence are re-derived from PostgreSQL
-- when it comes back (see worker/sync.py).
local function settle(state, inbox, buffer, segments, quarantine, ttl_ms)
  if redis.call('LLEN', inbox) == 0 and redis.call('LLEN', buffer) == 0
     and redis.call('HLEN', segments) == 0 and redis.call('EXISTS', quarantine) == 0
     and redis.call('HEXISTS', state, 'drain') == 0 and redis.call('HEXISTS', state, 'flush') == 0 then
    redis.call('PEXPIRE', state, ttl_ms)
    return 1
  end
  return 0
end
