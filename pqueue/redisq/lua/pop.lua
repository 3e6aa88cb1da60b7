-- pop: the throttling-aware selection, atomic across workers. It first
-- moves due delayed entries to their sub-queues, puts back reservations
-- whose lease expired (freeing their scope slots) and returns timed groups
-- whose time has come to the ready set. Then, up to max jobs and scan
-- evaluations: it takes the best ready group, checks the gate of each
-- scope of its head and either reserves the head under a lease (recording
-- the send in every gate, and a start-rate token), or files the group
-- where it waits: parked on the first scope whose concurrency is used up
-- (woken when a slot of that scope frees), or timed until the largest
-- delay of its scopes (capped by the time a scope's parameters go stale).
-- A head with a stale or missing gate stops the call: the worker refreshes
-- the scope's parameters from its policy and calls again.
--
-- ARGV: owner, max jobs, lease ms, u0 (uniform in [0,1): the jitter draws
-- are u0 + i*golden ratio mod 1), start rate per second (0 = off), start
-- burst, scan limit.
-- Returns {now, entries, stale scopes, next timed ready-at, next delayed
-- due, ready groups left, start-token wait ms, groups woken, counts, next
-- lease expiry}.
local owner, maxJobs, lease, u0 = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local rate, burst, scan = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local now = now_ms()
promote(now, 256)
reclaim(now, 64)
for _, g in ipairs(redis.call('ZRANGEBYSCORE', P .. 'timed', '-inf', num(now), 'LIMIT', 0, 256)) do
  to_ready(g, 't')
end

local jobs, stales, tokenWait, nu, evals = {}, {}, 0, 0, 0
while #jobs < maxJobs and evals < scan do
  local top = redis.call('ZRANGE', P .. 'ready', 0, 0)
  if #top == 0 then break end
  local g = top[1]
  evals = evals + 1
  local head = redis.call('ZRANGE', P .. 'q:' .. g, 0, 0, 'WITHSCORES')
  if #head == 0 then
    to_ready(g, 'r') -- an empty group is forgotten
  else
    local m = head[1]
    local _, names, amounts = decode(m)
    local gates, conc, worst, staleAt, stl = {}, nil, 0, 0, nil
    for j, s in ipairs(names) do
      local gt = gate_load(s)
      if stale(gt, now) then stl = s break end
      gates[j] = gt
      local w = can_send(gt, now, amounts[j], false)
      if w == SLOT then
        if not conc then conc = s end
      elseif w > worst then
        worst = w
      end
      if gt.vu > 0 and (staleAt == 0 or gt.vu < staleAt) then staleAt = gt.vu end
    end
    if stl then
      table.insert(stales, stl)
      break
    elseif conc then
      redis.call('ZREM', P .. 'ready', g)
      redis.call('HSET', P .. 'gl', g, 'p' .. conc)
      redis.call('ZADD', P .. 'pk:' .. conc, num(gscore(g, head[2])), g)
    elseif worst > 0 then
      local at = now + worst
      if staleAt > 0 and staleAt < at then at = staleAt end
      redis.call('ZREM', P .. 'ready', g)
      redis.call('HSET', P .. 'gl', g, 't')
      redis.call('ZADD', P .. 'timed', num(at), g)
    else
      if rate > 0 and #names > 0 then
        tokenWait = take_start_token(now, rate, burst)
        if tokenWait > 0 then break end
      end
      redis.call('ZREM', P .. 'q:' .. g, m)
      bump('w', -1)
      reserve(string.sub(m, 1, 8), 1, owner, m, now + lease)
      for j, s in ipairs(names) do
        record_sent(s, gates[j], now, amounts[j], (u0 + nu * 0.6180339887498949) % 1, string.sub(m, 1, 8))
        nu = nu + 1
      end
      redis.call('HSET', P .. 'gs', g, redis.call('HINCRBY', P .. 'c', 'stamp', 1))
      refile(g)
      table.insert(jobs, m)
    end
  end
end

local function first(key)
  local v = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #v == 0 then return '' end
  return v[2]
end
if redis.call('ZCARD', P .. 'ready') == 0 then woke = 0 end
notify()
return {num(now), jobs, stales, first(P .. 'timed'), first(P .. 'd'), redis.call('ZCARD', P .. 'ready'),
  num(tokenWait), woke, counts(), first(P .. 'l')}
