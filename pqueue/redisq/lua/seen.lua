-- seen: the dupefilter.Set's Add: ARGV mode, bits, hashes, fingerprint.
-- Returns 1 if the fingerprint was recorded before, else 0 (now recorded).
if seen(ARGV[4], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])) then return 1 end
return 0
