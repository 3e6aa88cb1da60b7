-- pwrite: the write half of a policy update (throttling.Policy in Go),
-- with optimistic concurrency. ARGV: scope, version read ('' for a scope
-- without a policy), parameters, policy record (JSON), backoff score for
-- the inspect view ('' = not backing off), quota consumed delta and quota
-- remaining ('' = absent).
--
-- The quota correction happens whatever the version (it is the gate's,
-- and the caller sends it once); the policy and the parameters are written
-- only if nobody wrote since the read (pv unchanged). The new
-- parameters may free slots: parked groups of the scope are offered them.
-- Returns 1 written, 0 version conflict (read again and retry).
local s, pv = ARGV[1], ARGV[2]
local k = gkey(s)
local now = now_ms()
reconcile(s, ARGV[6], ARGV[7], now)
if (redis.call('HGET', k, 'pv') or '') ~= pv then
  notify()
  return 0
end
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
