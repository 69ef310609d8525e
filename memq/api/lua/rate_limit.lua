-- One request of a caller against its rate limit (GCRA, the generic cell rate algorithm):
-- the caller's "theoretical arrival time" (TAT) advances by one interval per unit (a
-- request, or each message of a batch); a request is refused while its last unit would run
-- more than the burst's tolerance ahead of now. Redis' own clock, so every API process
-- shares one timeline. A refused request spends nothing.
-- KEYS[1]: the caller's key    ARGV[1]: interval (ms)    ARGV[2]: tolerance (ms)
-- ARGV[3]: units (1 when absent)
-- Reply: 0 (allowed) or the milliseconds until a request of as many units would be allowed.
local cost = tonumber(ARGV[3] or '1')
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2]) - (cost - 1) * interval
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end
if tat - now > tolerance then
  return tat - now - tolerance
end
redis.call('SET', KEYS[1], tat + cost * interval, 'PX', math.ceil(tat + cost * interval - now) + 1)
return 0
