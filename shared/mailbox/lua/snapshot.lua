-- What a drainer needs to start, read atomically: the Redis server's run id (to notice a
-- restart, after which the state may have lost its last writes), the open event and the
-- state fields.
--
-- KEYS[1] state   KEYS[2] buffer
-- Returns {run_id, buffer items, rid, fence, seq, version, last_eff_us, event, flush}
-- (missing fields as "").

local info = redis.call('INFO', 'server')
local run_id = string.match(info, 'run_id:(%x+)') or ''
local f = redis.call('HMGET', KEYS[1], 'rid', 'fence', 'seq', 'version', 'last_eff_us', 'event', 'flush')
local out = {run_id, redis.call('LRANGE', KEYS[2], 0, -1)}
for i = 1, 7 do
  table.insert(out, f[i] or '')
end
return out
