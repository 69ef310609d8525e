-- What of a conversation's inbox front another conversation's drain may embed along with
-- its own messages (worker/segmentation/co_embedding.py): nothing while a worker holds the
-- conversation (its drain embeds its own front); else its first ARGV[1] items after the
-- last one already embedded that way (the vectors hash's " front " mark: the sha1 of that
-- item, written by remember_front.lua), at most ARGV[2] of them, skipping ARGV[3] first.
--
-- KEYS[1] lock   KEYS[2] inbox   KEYS[3] vectors
-- ARGV[1] how far into the inbox to look   ARGV[2] most items to return   ARGV[3] skip

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
from = from + tonumber(ARGV[3])
local out = {}
for i = from, math.min(#items, from + tonumber(ARGV[2]) - 1) do
  out[#out + 1] = items[i]
end
return out
