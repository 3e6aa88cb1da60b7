-- pwrite: the write half of a policy update, if nobody wrote since the
-- read (optimistic concurrency on the version pv). ARGV: scope, version
-- read ('' for a scope without a policy), parameters, policy, backoff
-- score for the inspect view ('' = not backing off). The new parameters
-- may free slots: parked groups of the scope are offered them. Returns 1,
-- or 0 on a version conflict.
local s = ARGV[1]
local k = gkey(s)
if (redis.call('HGET', k, 'pv') or '') ~= ARGV[2] then return 0 end
set_params(s, ARGV[3])
redis.call('HSET', k, 'p', ARGV[4])
redis.call('HINCRBY', k, 'pv', 1)
if ARGV[5] == '' then
  redis.call('ZREM', P .. 'backoff', s)
else
  redis.call('ZADD', P .. 'backoff', ARGV[5], s)
end
wake(s)
notify()
return 1
