-- admit: the gate for a request sent outside the queue (robots.txt,
-- Crawler.Download). If every scope can send, the send is recorded in
-- each gate and an admission lease holds the slots until released (or
-- until it expires, if the worker dies).
--
-- ARGV: shard, owner, lease ms, u0, start rate, start burst, no-slot (1:
-- do not wait for a concurrency slot, but take one), body (an entry body
-- with the scopes and no request), turn ('' or the ID of a reservation
-- whose request has not reached the server: in each scope where it made
-- the last send, the new request takes its turn, as Gate.CanSendInTurnOf
-- and RecordSentInTurnOf: the delay counts from the send before it, its
-- quota amount is the new request's, and neither can give the turn back;
-- a request that reached the wire has no turn to give). The new request
-- is the scope's last send with no send before it (pls ''), counted in nt.
-- Returns {now, 'ok', ID} or {now, 'slot'} or {now, 'wait', ms} or {now,
-- 'stale', scope}.
local shard, owner, lease, u0 = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local rate, burst, noSlot, body, turn = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8], ARGV[9] or ''
local now = now_ms()
local _, names, amounts = decode(string.rep('\0', 8) .. body)
local gates, worst, conc, owned = {}, 0, false, {}
for j, s in ipairs(names) do
  local gt = gate_load(s)
  if stale(gt, now) then return {num(now), 'stale', s} end
  gates[j] = gt
  if turn ~= '' then
    local v = redis.call('HMGET', gkey(s), 'lr', 'pls', 'pjf')
    if v[1] == turn and v[2] ~= '' and gt.lw <= 0 then
      -- the turn's owner gives its send to this request
      owned[j] = true
      gt = {}
      for f, x in pairs(gates[j]) do gt[f] = x end
      gt.ls, gt.lw, gt.jf = tonumber(v[2]) or 0, 0, tonumber(v[3]) or 1
      -- its quota amount, counted in the current window, is this one's
      if gt.q > 0 and gt.ws > 0 and gates[j].ls >= gt.ws then gt.qu = math.max(0, gt.qu - amounts[j]) end
    end
  end
  local w = can_send(gt, now, amounts[j], noSlot)
  if w == SLOT then conc = true elseif w > worst then worst = w end
end
if conc then return {num(now), 'slot'} end
if worst > 0 then return {num(now), 'wait', num(worst)} end
if rate > 0 and #names > 0 then
  local wait = take_start_token(now, rate, burst)
  if wait > 0 then return {num(now), 'wait', num(wait)} end
end
local id8 = pack_id(redis.call('INCR', KEYS[1]) * 1024 + shard)
for j, s in ipairs(names) do
  if owned[j] then
    record_sent(s, gates[j], now, 0, (u0 + (j - 1) * 0.6180339887498949) % 1, id8)
    redis.call('HSET', gkey(s), 'pls', '', 'pjf', '')
    redis.call('HINCRBY', gkey(s), 'nt', 1)
  else
    record_sent(s, gates[j], now, amounts[j], (u0 + (j - 1) * 0.6180339887498949) % 1, id8)
  end
end
reserve(id8, 3, owner, id8 .. body, now + lease)
return {num(now), 'ok', id8}
