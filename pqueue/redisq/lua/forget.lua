-- forget: the dupefilter.Forgetter's Forget for the set mode (a Bloom
-- filter cannot forget). ARGV: fingerprint.
return redis.call('SREM', P .. 'seen', ARGV[1])
