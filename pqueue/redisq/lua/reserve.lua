-- reserve: the Store's Reserve, without throttling: takes the head of
-- sub-queue ARGV[1] under a lease for owner ARGV[2] (ARGV[3] ms). Returns
-- the entry, or false when the sub-queue is empty.
local now = now_ms()
local got = redis.call('ZPOPMIN', P .. 'q:' .. ARGV[1], 1)
if #got == 0 then return false end
bump('w', -1)
reserve(string.sub(got[1], 1, 8), 0, ARGV[2], got[1], now + tonumber(ARGV[3]))
refile(ARGV[1])
return got[1]
