-- release: frees the scope slots of reservation ARGV[1] now, counting
-- its completion (ARGV[2] classes, ARGV[3] latency ms), without
-- forgetting it (its acknowledgement does). A request whose outcome
-- changes its scopes' policies is released this way before the policy
-- update, as the in-memory throttler counts a completion before applying
-- its feedback. Returns 1, or 0 if it is not reserved.
local now = now_ms()
local flags = release_slots(ARGV[1], ARGV[2], tonumber(ARGV[3]), now)
notify()
if flags then return 1 end
return 0
