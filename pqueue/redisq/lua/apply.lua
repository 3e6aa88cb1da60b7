-- apply: the "finish" script. One call applies, in this order, what a
-- worker has to tell one shard: gates to create for new scopes, requests
-- to store (deduplicated by fingerprint), reservations to acknowledge
-- (their scope slots freed, their outcome counted), reservations to put
-- back, and stats deltas. Requests are stored before the acknowledgements,
-- so a job's children are stored no later than the job is forgotten.
--
-- ARGV: the shard's number, mode (s = set, b = Bloom filter, - = no
-- deduplication), Bloom bits, Bloom hashes, then counts nInit nPush nAck
-- nNack nStats nWire, then the items:
--   wire:  ID (8 bytes) of a reservation whose request reached its
--          connection, ms since then (applied first: see wired in lib.lua)
--   init:  scope, params          (set only if the scope has no gate yet)
--   push:  fingerprint ('' = not filtered), not-before, body
--          not-before: '' = none, '+MS' = MS after now, '@MS' = at MS (a
--          request with a not-before waits in the delayed set)
--   ack:   ID (8 bytes), outcome classes (one letter per scope: o ok, r
--          refused, t other, - none), latency ms
--   nack:  ID
--   stats: name, delta
-- Returns {IDs given to the requests ('' for a duplicate), acks of unknown IDs,
-- groups woken, counts..., groups in the ready set}.
local shard, mode, bits, hashes = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local nInit, nPush, nAck, nNack, nStats = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local nWire = tonumber(ARGV[10])
local i = 11
local now = now_ms()

for _ = 1, nWire do
  wired(ARGV[i], now, tonumber(ARGV[i + 1]))
  i = i + 2
end

for _ = 1, nInit do
  if redis.call('HEXISTS', gkey(ARGV[i]), 'd') == 0 then set_params(ARGV[i], ARGV[i + 1]) end
  i = i + 2
end

local stored = {}
for j = 1, nPush do
  local fp, nb, body = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  if fp ~= '' and mode ~= '-' and seen(fp, mode, bits, hashes) then
    stored[j] = ''
  else
    local seq = redis.call('INCR', KEYS[1])
    local id8 = pack_id(seq * 1024 + shard)
    local m = id8 .. body
    if nb == '' then
      enqueue(m)
    else
      local at = tonumber(string.sub(nb, 2))
      if string.sub(nb, 1, 1) == '+' then at = now + at end
      redis.call('ZADD', P .. 'd', num(at), m)
    end
    bump('pushed', 1)
    stored[j] = id8
  end
end

local unknown = 0
for _ = 1, nAck do
  if not finish(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), true, now) then unknown = unknown + 1 end
  i = i + 3
end
for _ = 1, nNack do
  if not finish(ARGV[i], '', 0, false, now) then unknown = unknown + 1 end
  i = i + 1
end
for _ = 1, nStats do
  redis.call('HINCRBYFLOAT', P .. 'stats', ARGV[i], ARGV[i + 1])
  i = i + 2
end
notify()
return {stored, unknown, woke, counts(), redis.call('ZCARD', P .. 'ready')}
