-- One request of a caller against its rate limit (GCRA, the generic cell rate algorithm):
-- the caller's "theoretical arrival time" (TAT) advances by one interval per request; a
-- request is refused while the TAT is more than the burst's tolerance ahead of now.
-- Redis' own clock, so every API process shares one timeline.
-- KEYS[1]: the caller's key    ARGV[1]: interval (ms)    ARGV[2]: tolerance (ms)
-- Reply: 0 (allowed) or the milliseconds until a request would be allowed.
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end
if tat - now > tolerance then
  return tat - now - tolerance
end
redis.call('SET', KEYS[1], tat + interval, 'PX', math.ceil(tat + interval - now) + 1)
return 0
