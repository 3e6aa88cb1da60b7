-- lib.lua is prepended to every script of the shard (see scripts.go).
-- KEYS[1] is the shard's ID counter, PREFIX:{TAG}:id; every other key of
-- the shard is derived from it, so each call touches one hash slot.
local P = string.sub(KEYS[1], 1, -3)
local TWO32 = 4294967296
local SLOT = -1 -- can_send: blocked until a concurrency slot frees

-- num formats a number for Redis without the 14-digit rounding of
-- tostring (millisecond timestamps have 16 significant digits).
local function num(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- now_ms is Redis's clock in milliseconds: every decision uses it, so
-- the workers' clocks do not matter. Tests set P..testclock to run the
-- scripts on a clock of their own.
local function now_ms()
  local fake = redis.call('GET', P .. 'testclock')
  if fake then return tonumber(fake) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

local function pack_id(n) return struct.pack('>I4I4', math.floor(n / TWO32), n % TWO32) end

-- decode returns the priority, scope names, amounts and sub-queue name of
-- an entry (ID + body, see entry.go).
local function decode(m)
  local prio, qf, n, pos = struct.unpack('>dBH', m, 10)
  local names, amounts = {}, {}
  for i = 1, n do
    local len
    len, pos = struct.unpack('>H', m, pos)
    names[i] = string.sub(m, pos, pos + len - 1)
    pos = pos + len
    amounts[i], pos = struct.unpack('>d', m, pos)
  end
  if qf == 1 then
    local len
    len, pos = struct.unpack('>H', m, pos)
    return prio, names, amounts, string.sub(m, pos, pos + len - 1)
  end
  return prio, names, amounts, table.concat(names, '\0')
end

local function bump(field, n) redis.call('HINCRBY', P .. 'c', field, n) end

-- Groups. A group is a non-empty sub-queue (requests with the same scope
-- names). Its place is in P..gl: 'r' in the ready set, 't' in the timed
-- set (blocked by a delay until its score), 'p'..scope parked on that
-- scope's concurrency. Ready and parked sets order groups by head
-- priority, then least recently served (P..gs holds the stamp of each
-- group's last send).
local function gscore(g, headScore)
  local p = tonumber(headScore) -- the head's score is -priority
  if p > 1048575 then p = 1048575 elseif p < -1048575 then p = -1048575 end
  return p * TWO32 + (tonumber(redis.call('HGET', P .. 'gs', g)) or 0)
end

local function unfile(g, loc)
  if loc == 'r' then redis.call('ZREM', P .. 'ready', g)
  elseif loc == 't' then redis.call('ZREM', P .. 'timed', g)
  elseif loc then redis.call('ZREM', P .. 'pk:' .. string.sub(loc, 2), g) end
end

-- refile puts group g where it belongs after its sub-queue changed: a new
-- group becomes ready; a ready or parked group is re-scored by its head;
-- an emptied group is forgotten.
local function refile(g)
  local h = redis.call('ZRANGE', P .. 'q:' .. g, 0, 0, 'WITHSCORES')
  local loc = redis.call('HGET', P .. 'gl', g)
  if #h == 0 then
    if loc then
      unfile(g, loc)
      redis.call('HDEL', P .. 'gl', g)
      redis.call('HDEL', P .. 'gs', g)
    end
    return
  end
  if not loc then
    redis.call('HSET', P .. 'gl', g, 'r')
    redis.call('ZADD', P .. 'ready', num(gscore(g, h[2])), g)
  elseif loc == 'r' then
    redis.call('ZADD', P .. 'ready', num(gscore(g, h[2])), g)
  elseif loc ~= 't' then
    redis.call('ZADD', P .. 'pk:' .. string.sub(loc, 2), num(gscore(g, h[2])), g)
  end
end

-- to_ready moves group g (out of wherever it is) into the ready set.
local function to_ready(g, loc)
  local h = redis.call('ZRANGE', P .. 'q:' .. g, 0, 0, 'WITHSCORES')
  unfile(g, loc)
  if #h == 0 then
    redis.call('HDEL', P .. 'gl', g)
    redis.call('HDEL', P .. 'gs', g)
    return
  end
  redis.call('HSET', P .. 'gl', g, 'r')
  redis.call('ZADD', P .. 'ready', num(gscore(g, h[2])), g)
end

-- enqueue puts a member (ID + body) into its sub-queue. The group is
-- filed again only when it is new or the member is its new head (a group
-- waiting until a time keeps waiting).
local function enqueue(m)
  local prio, _, _, g = decode(m)
  local q = P .. 'q:' .. g
  redis.call('ZADD', q, num(-prio), m)
  bump('w', 1)
  local loc = redis.call('HGET', P .. 'gl', g)
  if loc == 't' or (loc and redis.call('ZRANK', q, m) ~= 0) then return end
  refile(g)
end

-- promote moves up to limit delayed entries due at now into their
-- sub-queues and returns them with their not-before times.
local function promote(now, limit)
  local due = redis.call('ZRANGEBYSCORE', P .. 'd', '-inf', num(now), 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #due, 2 do
    redis.call('ZREM', P .. 'd', due[i])
    enqueue(due[i])
  end
  return due
end

-- Gates: throttling.Gate (gate.go, quota.go) in Lua, field for field.
-- The admission state of scope s lives in the hash P..s:s. The parameters
-- are written by the scope's policy in Go (pwrite, or the first push of
-- the scope): d delay ms, jl/jh jitter range, c concurrency (0 =
-- unlimited), bu blocked until (ms), q quota, w quota window (ms), vu when
-- they go stale (0 = never), vo the ok count at which they go stale (0 =
-- never), sl / su the send budget (RateLimit remaining: no send while ns -
-- ot >= sl, until su ms; su 0 = none). The state is written only by the operations
-- below: a in flight, ls last send (ms: its admission, which names it),
-- lw when it reached its connection (GateState.Wired: 0 = not reported;
-- the delay counts from lw when set, see last_on_wire, and a send with
-- lw set keeps its turn),
-- jf jitter factor of the gap after it, qu quota used, ws quota window
-- start, lr the reservation that made the last send with pls / pjf the
-- send before it (when it reached the wire) and its jf (GateState.PrevSent,
-- HasPrev: lr is cleared once its turn is given back; pls is '' after a
-- send in another's turn, which has no send before it); and the counters
-- the policy reads, which only grow: ns sends, nt sends in another's turn
-- (GateState.TurnSends), ok / rf (refused: backoff triggers) /
-- ot completions, lsum / ln latency sum (ms) and count of ok completions,
-- ifs request-seconds in flight and fs seconds with every slot taken (up
-- to aa), bs / bc / bp the current one-second bucket of sends, its sends
-- and those of the bucket before. The policy's own state is the JSON in
-- p, versioned by pv (pread, pwrite).
local GF = {'d', 'jl', 'jh', 'c', 'bu', 'q', 'w', 'vu', 'vo', 'sl', 'su', 'a', 'ls', 'jf', 'qu', 'ws', 'ifs', 'fs', 'aa', 'bs', 'bc', 'ok',
  'ns', 'ot', 'lw'}
local GF_JF = 14 -- index of 'jf' in GF (its default is 1, not 0)

-- take_start_token takes a token of the start-rate bucket (rate tokens a
-- second, burst at most) at now; it returns 0, or how many ms until one is
-- available (nothing taken).
local function take_start_token(now, rate, burst)
  local v = redis.call('HMGET', P .. 'sr', 'tk', 'lt')
  local tk, lt = tonumber(v[1]), tonumber(v[2])
  if not tk then tk, lt = burst, now end
  if now > lt then
    tk = math.min(burst, tk + (now - lt) / 1000 * rate)
    lt = now
  end
  local wait = 0
  if tk >= 1 then tk = tk - 1 else wait = (1 - tk) / rate * 1000 end
  redis.call('HSET', P .. 'sr', 'tk', num(tk), 'lt', num(lt))
  return wait
end

local function gkey(s) return P .. 's:' .. s end

local function gate_load(s)
  local v = redis.call('HMGET', gkey(s), unpack(GF))
  if not v[1] then return nil end
  local g = {}
  for i, f in ipairs(GF) do g[f] = tonumber(v[i]) or 0 end
  g.jf = tonumber(v[GF_JF]) or 1
  return g
end

-- last_on_wire is GateState.LastOnWire: when the last send reached the
-- server as far as the gate knows (lw when reported, else ls; 0 before
-- the first send). The delay and the gaps between sends count from it.
local function last_on_wire(g)
  if g.lw > 0 then return g.lw end
  return g.ls
end

local function stale(g, now)
  return g == nil or (g.vu > 0 and g.vu <= now) or (g.vo > 0 and g.ok >= g.vo)
end

local function quota_open(g, now) return g.q > 0 and g.ws > 0 and now < g.ws + g.w end

-- can_send is Gate.CanSend (CanSendWithoutSlot with noSlot): SLOT when
-- the concurrency is used up, else the wait in ms (0 = now): the latest
-- of the hard minimum, the jittered delay after the last send, the end
-- of a quota window the amount does not fit in and the end of a send
-- budget used up.
local function can_send(g, now, amount, noSlot)
  if not noSlot and g.c > 0 and g.a >= g.c then return SLOT end
  local w = 0
  if g.bu > now then w = g.bu - now end
  local last = last_on_wire(g)
  if last > 0 then
    local nx = last + g.d * g.jf
    if nx - now > w then w = nx - now end
  end
  if quota_open(g, now) and g.qu > 0 and g.qu + amount > g.q then
    if g.ws + g.w - now > w then w = g.ws + g.w - now end
  end
  if g.su > now and g.ns - g.ot >= g.sl then
    if g.su - now > w then w = g.su - now end
  end
  return w
end

-- advance is Gate.advance: the in-flight integrals up to now, as fields
-- to write.
local function advance(g, now, f)
  if g.aa > 0 and now > g.aa then
    local dt = (now - g.aa) / 1000
    table.insert(f, 'ifs'); table.insert(f, num(g.ifs + g.a * dt))
    if g.c > 0 and g.a >= g.c then
      table.insert(f, 'fs'); table.insert(f, num(g.fs + dt))
    end
  end
  if g.aa == 0 or now > g.aa then
    table.insert(f, 'aa'); table.insert(f, num(now))
  end
end

-- record_sent is Gate.RecordSent with u uniform in [0, 1) drawn by the
-- caller, for reservation id8: the send before it is the last one as it
-- reached the wire (last_on_wire), and the new one is not on the wire yet.
local function record_sent(s, g, now, amount, u, id8)
  local k = gkey(s)
  local f = {}
  advance(g, now, f)
  local jf = 1 + g.jl + u * (g.jh - g.jl)
  if jf < 0 then jf = 0 end
  table.insert(f, 'a'); table.insert(f, num(g.a + 1))
  table.insert(f, 'pls'); table.insert(f, num(last_on_wire(g)))
  table.insert(f, 'pjf'); table.insert(f, num(g.jf))
  table.insert(f, 'lr'); table.insert(f, id8)
  table.insert(f, 'ls'); table.insert(f, num(now))
  table.insert(f, 'lw'); table.insert(f, '0')
  table.insert(f, 'jf'); table.insert(f, num(jf))
  -- rollBucket, then one more send in the current bucket
  if g.bs == 0 or now - g.bs >= 2000 then
    table.insert(f, 'bs'); table.insert(f, num(now))
    table.insert(f, 'bp'); table.insert(f, '0')
    table.insert(f, 'bc'); table.insert(f, '1')
  elseif now - g.bs >= 1000 then
    table.insert(f, 'bs'); table.insert(f, num(g.bs + 1000))
    table.insert(f, 'bp'); table.insert(f, num(g.bc))
    table.insert(f, 'bc'); table.insert(f, '1')
  else
    table.insert(f, 'bc'); table.insert(f, num(g.bc + 1))
  end
  if g.q > 0 then
    local ws, qu = g.ws, g.qu
    if not quota_open(g, now) then ws, qu = now, 0 end
    table.insert(f, 'ws'); table.insert(f, num(ws))
    table.insert(f, 'qu'); table.insert(f, num(qu + amount))
    g.ws, g.qu = ws, qu + amount
  end
  redis.call('HSET', k, unpack(f))
  redis.call('HINCRBY', k, 'ns', 1)
  g.a, g.ls, g.lw, g.jf, g.ns = g.a + 1, now, 0, jf, g.ns + 1
end

local woke = 0 -- groups moved from a parking to the ready set by this call

-- notify tells the workers that groups became ready (they subscribe to
-- P..wake and try this shard again at once rather than at their next
-- poll).
local function notify()
  if woke > 0 then redis.call('PUBLISH', P .. 'wake', '1') end
end

-- wake offers the free slots of scope s to the groups parked on it, best
-- first: one group per free slot moves to the ready set.
local function wake(s)
  local v = redis.call('HMGET', gkey(s), 'c', 'a')
  local c, a = tonumber(v[1]) or 0, tonumber(v[2]) or 0
  local n = 1000000
  if c > 0 then n = c - a end
  if n <= 0 then return end
  local got = redis.call('ZPOPMIN', P .. 'pk:' .. s, n)
  for i = 1, #got, 2 do
    redis.call('HSET', P .. 'gl', got[i], 'r')
    redis.call('ZADD', P .. 'ready', got[i + 1], got[i])
    woke = woke + 1
  end
end

-- give_back is Gate.GiveBack for reservation id8 (amount: its quota
-- amount): if it made the last send of s, has a send before it and did
-- not reach the wire (lw), the send before it becomes the last again and
-- its quota amount is returned.
local function give_back(s, g, id8, amount, f)
  local v = redis.call('HMGET', gkey(s), 'lr', 'pls', 'pjf')
  if v[1] ~= id8 or v[2] == '' or g.lw > 0 then return end
  table.insert(f, 'ls'); table.insert(f, v[2] or '0')
  table.insert(f, 'jf'); table.insert(f, v[3] or '1')
  table.insert(f, 'lr'); table.insert(f, '')
  if g.q > 0 and g.ws > 0 and g.ls >= g.ws then
    table.insert(f, 'qu'); table.insert(f, num(math.max(0, g.qu - amount)))
  end
end

-- record_done is Gate.RecordDone: one slot of s is free again, and the
-- completion is counted by class ('o' ok, with its latency in ms; 'r'
-- refused; 't' other; 'u' not sent: other, and reservation id8 gives its
-- turn back (amount: its quota amount); '' not counted: a lease given up).
local function record_done(s, class, latency, now, id8, amount)
  local g = gate_load(s)
  if g == nil then return end
  local k = gkey(s)
  local f = {}
  advance(g, now, f)
  if class == 'u' then give_back(s, g, id8, amount, f) end
  if g.a > 0 then table.insert(f, 'a'); table.insert(f, num(g.a - 1)) end
  if #f > 0 then redis.call('HSET', k, unpack(f)) end
  if class == 'o' then
    redis.call('HINCRBY', k, 'ok', 1)
    if latency > 0 then
      redis.call('HINCRBYFLOAT', k, 'lsum', num(latency))
      redis.call('HINCRBY', k, 'ln', 1)
    end
  elseif class == 'r' then
    redis.call('HINCRBY', k, 'rf', 1)
  elseif class == 't' or class == 'u' then
    redis.call('HINCRBY', k, 'ot', 1)
  end
  wake(s)
end

-- reconcile is Gate.Reconcile: the quota used in the current window,
-- corrected by a delta (consumed) or from what the server says is left
-- (remaining, which wins); '' for an absent value.
local function reconcile(s, consumed, remaining, now)
  local g = gate_load(s)
  if g == nil or g.q <= 0 or (consumed == '' and remaining == '') then return end
  local ws, qu = g.ws, g.qu
  if not quota_open(g, now) then ws, qu = now, 0 end
  if remaining ~= '' then
    qu = math.max(0, g.q - tonumber(remaining))
  else
    qu = math.max(0, qu + tonumber(consumed))
  end
  redis.call('HSET', gkey(s), 'ws', num(ws), 'qu', num(qu))
end

-- set_params writes gate parameters "d,jl,jh,c,bu,q,w,vu,vo,sl,su" to scope s.
local function set_params(s, params)
  local f, i = {}, 1
  for v in string.gmatch(params, '[^,]+') do
    table.insert(f, GF[i]); table.insert(f, v)
    i = i + 1
  end
  redis.call('HSET', gkey(s), unpack(f))
end

-- Reservations. P..r maps an ID to flags .. owner length .. owner ..
-- member; P..l holds the lease expiry of each; P..wc counts the
-- reservations of each owner. Flag 1: the gate of each scope recorded the
-- send (a slot is held); flag 2: an admission lease of a request sent
-- outside the queue (no entry to put back).
local function reserve(id8, flags, owner, m, expiry)
  redis.call('HSET', P .. 'r', id8, string.char(flags, #owner) .. owner .. m)
  redis.call('ZADD', P .. 'l', num(expiry), id8)
  redis.call('HINCRBY', P .. 'wc', owner, 1)
end

-- unreserve forgets reservation id8 and returns its flags, owner and
-- member, or nil when it is not reserved.
local function unreserve(id8)
  local v = redis.call('HGET', P .. 'r', id8)
  if not v then return nil end
  redis.call('HDEL', P .. 'r', id8)
  redis.call('ZREM', P .. 'l', id8)
  local flags, n = string.byte(v, 1, 2)
  local owner = string.sub(v, 3, 2 + n)
  if redis.call('HINCRBY', P .. 'wc', owner, -1) <= 0 then redis.call('HDEL', P .. 'wc', owner) end
  return flags, owner, string.sub(v, 3 + n)
end

-- wired is Gate.RecordWired for reservation id8, whose request reached
-- its connection age ms before the worker built this call: in each of
-- its scopes where it is still the last send, lw records now - age when
-- that is later than what the gate knew (its admission, or an earlier
-- mark; the admission itself for a first mark no later): the delay to the
-- next send counts from there, with the same jitter factor, and so does
-- the gap to the next send (its pls); the turn can no
-- longer be given back. ls keeps the admission, which names the request
-- in its outcome, and the send before it stays known (pls, lr): the rate
-- controller's gap bounds read both. The call runs after it was built, so
-- now - age is never earlier than the write: the next send waits at least
-- the delay after the request reached the server. Only the worker's
-- clock's rate matters (age is a duration), not its offset from Redis's.
local function wired(id8, now, age)
  local v = redis.call('HGET', P .. 'r', id8)
  if not v then return end
  local n = string.byte(v, 2)
  local _, names = decode(string.sub(v, 3 + n))
  for _, s in ipairs(names) do
    local k = gkey(s)
    local g = redis.call('HMGET', k, 'lr', 'ls', 'lw')
    if g[1] == id8 then
      local at = now - math.max(0, age)
      local ls, lw = tonumber(g[2]) or 0, tonumber(g[3]) or 0
      -- a mark no later than the admission (Redis's clock ticks in
      -- microseconds, a fake one in steps) records the admission: the
      -- delay is unchanged, but the send is on the wire and keeps its turn
      if lw <= 0 or at > lw then redis.call('HSET', k, 'lw', num(math.max(at, ls))) end
    end
  end
end

-- release_slots frees the scope slots of reservation id8 if it still
-- holds them (flag 1), counting the completion in each scope's gate:
-- classes has one letter per scope of the entry, in its order ('o', 'r',
-- 't', 'u'; a missing or '-' letter counts nothing). Returns the reservation's
-- flags, owner and member, or nil when id8 is not reserved.
local function release_slots(id8, classes, latency, now)
  local v = redis.call('HGET', P .. 'r', id8)
  if not v then return nil end
  local flags, n = string.byte(v, 1, 2)
  local owner = string.sub(v, 3, 2 + n)
  local m = string.sub(v, 3 + n)
  if flags % 2 == 1 then
    local _, names, amounts = decode(m)
    for i, s in ipairs(names) do
      local c = string.sub(classes, i, i)
      if c == '-' then c = '' end
      record_done(s, c, latency, now, id8, amounts[i])
    end
    flags = flags - 1
    redis.call('HSET', P .. 'r', id8, string.char(flags, n) .. owner .. m)
  end
  return flags, owner, m
end

-- finish forgets reservation id8 after releasing its slots; unless done
-- (acknowledged) or an admission lease (flag 2), its entry goes back in
-- line. It returns false when id8 is not reserved.
local function finish(id8, classes, latency, done, now)
  local flags = release_slots(id8, classes, latency, now)
  if not flags then return false end
  local _, owner, m = unreserve(id8)
  if not done and math.floor(flags / 2) % 2 == 0 then enqueue(m) end
  return true
end

-- reclaim puts back up to limit reservations whose lease expired.
local function reclaim(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', P .. 'l', '-inf', num(now), 'LIMIT', 0, limit)
  for _, id8 in ipairs(ids) do
    if finish(id8, '', 0, false, now) then bump('reclaimed', 1) end
  end
  return #ids
end

-- counts returns what the shard holds: waiting in sub-queues, delayed,
-- reserved, and the number of entries ever stored (finish detection).
local function counts()
  local c = redis.call('HMGET', P .. 'c', 'w', 'pushed')
  return {tonumber(c[1]) or 0, redis.call('ZCARD', P .. 'd'), redis.call('HLEN', P .. 'r'), tonumber(c[2]) or 0}
end

-- seen reports whether fingerprint fp (16 bytes) was recorded, recording
-- it: in the set P..seen (mode 's'), or in the Bloom filter P..bloom of
-- bits bits with hashes hash functions (mode 'b'), whose k positions come
-- from double hashing the fingerprint's first two 32-bit words (Kirsch and
-- Mitzenmacher); P..bloomn counts the fingerprints added to it.
local function seen(fp, mode, bits, hashes)
  if mode == 's' then
    return redis.call('SADD', P .. 'seen', fp) == 0
  end
  local h1, h2 = struct.unpack('>I4I4', fp)
  if h2 % 2 == 0 then h2 = h2 + 1 end
  local pos, all = {}, true
  for j = 0, hashes - 1 do
    pos[j + 1] = (h1 + j * h2) % bits
    if all and redis.call('GETBIT', P .. 'bloom', pos[j + 1]) == 0 then all = false end
  end
  if all then return true end
  for _, p in ipairs(pos) do redis.call('SETBIT', P .. 'bloom', p, 1) end
  redis.call('INCR', P .. 'bloomn')
  return false
end
