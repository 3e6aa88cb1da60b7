-- robots: the robots.txt answers of the job, one per origin, so that one
-- worker fetches each (throttling.SharedRobots). P..rb:ORIGIN holds the
-- answer (status, a space, the body) until it expires; P..rl:ORIGIN the
-- worker that claimed its fetch, until the claim expires (a worker that
-- died while fetching).
--
-- ARGV: mode, origin, owner, then
--   get:  claim ms           -> {'hit', answer} | {'claim'} | {'wait'}
--   put:  ttl ms, answer     -> 1 (the claim ends)
--   drop:                    -> 1 (this owner's claim ends)
local mode, origin, owner = ARGV[1], ARGV[2], ARGV[3]
local rb, rl = P .. 'rb:' .. origin, P .. 'rl:' .. origin
if mode == 'get' then
  local v = redis.call('GET', rb)
  if v then return {'hit', v} end
  if redis.call('SET', rl, owner, 'NX', 'PX', ARGV[4]) or redis.call('GET', rl) == owner then
    return {'claim'}
  end
  return {'wait'}
end
if mode == 'put' then
  redis.call('SET', rb, ARGV[5], 'PX', ARGV[4])
end
if redis.call('GET', rl) == owner then redis.call('DEL', rl) end
return 1
