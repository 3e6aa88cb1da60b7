-- reclaim: puts back every reservation of owner ARGV[1] (a worker that
-- restarts with the same identity gets its unacknowledged requests back
-- at once instead of when their leases expire). Returns how many.
local now = now_ms()
local n = 0
for _, id8 in ipairs(redis.call('HKEYS', P .. 'r')) do
  local v = redis.call('HGET', P .. 'r', id8)
  local len = string.byte(v, 2)
  if string.sub(v, 3, 2 + len) == ARGV[1] then
    finish(id8, '', 0, false, now)
    n = n + 1
  end
end
return n
