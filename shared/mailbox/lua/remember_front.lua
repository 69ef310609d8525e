-- Keep embeddings another conversation's drain computed for this conversation's inbox
-- front (worker/segmentation/co_embedding.py), for this conversation's own drain to use.
-- A vector is written only while the exact inbox item it was computed from is still among
-- the inbox's first ARGV[2] items: a message already taken, or a conversation forgotten
-- or emptied meanwhile, gets nothing (forget leaves no trace). The " front " mark, where
-- the next drain's share starts, was moved when the items were taken (front.lua).
--
-- KEYS[1] inbox   KEYS[2] vectors (hash: message id -> vector)
-- ARGV[1] vectors' ttl (ms)   ARGV[2] how far into the inbox to look
-- ARGV[3..] triples: inbox item, message id, vector
-- Returns the number of vectors written.

local written = 0
for i = 3, #ARGV, 3 do
  if redis.call('LPOS', KEYS[1], ARGV[i], 'MAXLEN', tonumber(ARGV[2])) then
    redis.call('HSET', KEYS[2], ARGV[i + 1], ARGV[i + 2])
    written = written + 1
  end
end
if written > 0 then
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[1]))
end
return written
