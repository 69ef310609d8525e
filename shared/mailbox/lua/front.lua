-- What of a conversation's inbox front another conversation's drain may embed along with
-- its own messages (worker/segmentation/co_embedding.py), claimed for it: nothing while a
-- worker holds the conversation (its drain embeds its own front); else its first ARGV[1]
-- items after the last one already taken or embedded (the vectors hash's " front " mark:
-- the sha1 of that item), at most ARGV[2] of them. The mark moves to the last item
-- returned, in this same step, so that two drains looking at once never both take (and
-- embed) the same items; the vectors remember_front.lua writes for them follow. A claim
-- whose vectors never come (the drain failed) costs nothing but the ride: the
-- conversation's own drain embeds what it does not find.
--
-- KEYS[1] lock   KEYS[2] inbox   KEYS[3] vectors
-- ARGV[1] how far into the inbox to look   ARGV[2] most items to return
-- ARGV[3] the vectors hash's ttl (ms), set when a claim is written

if redis.call('EXISTS', KEYS[1]) == 1 then
  return {}
end
local items = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)
local mark = redis.call('HGET', KEYS[3], ' front ')
local from = 1
if mark then
  for i = 1, #items do
    if redis.sha1hex(items[i]) == mark then
      from = i + 1
      break
    end
  end
end
local out = {}
for i = from, math.min(#items, from + tonumber(ARGV[2]) - 1) do
  out[#out + 1] = items[i]
end
if #out > 0 then
  redis.call('HSET', KEYS[3], ' front ', redis.sha1hex(out[#out]))
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[3]))
end
return out
