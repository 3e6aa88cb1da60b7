-- promote: the Store's PromoteDue: moves every delayed entry due at
-- ARGV[1] (ms, the caller's clock) into its sub-queue and returns them in
-- not-before order.
return promote(tonumber(ARGV[1]), 1000000000)
