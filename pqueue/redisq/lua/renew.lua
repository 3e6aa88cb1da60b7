-- renew: extends the leases of reservations still held. ARGV: lease ms,
-- then IDs. Returns the IDs that are no longer reserved (their lease
-- expired and another worker put them back, or they were acknowledged).
local lease = tonumber(ARGV[1])
local now = now_ms()
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', P .. 'l', ARGV[i]) then
    redis.call('ZADD', P .. 'l', 'XX', num(now + lease), ARGV[i])
  else
    table.insert(lost, ARGV[i])
  end
end
return lost
