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

-- A fenced writer's check: its lock token still holds the lease and the state is at the
-- version it read. Returns the version, or nil and the error ("LOCK" / "VERSION").
local function fenced(lock, token, state, expected)
  if redis.call('GET', lock) ~= token then
    return nil, 'LOCK'
  end
  local version = tonumber(redis.call('HGET', state, 'version') or '0')
  if version ~= tonumber(expected) then
    return nil, 'VERSION'
  end
  return version
end
