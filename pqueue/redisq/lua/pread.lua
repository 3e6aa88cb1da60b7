-- pread: the read half of a policy update: {now, gate hash as a flat
-- field/value list} of scope ARGV[1].
return {num(now_ms()), redis.call('HGETALL', gkey(ARGV[1]))}
