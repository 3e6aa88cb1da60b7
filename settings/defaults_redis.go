package settings

// Settings of the distributed crawl on Redis (package redisjob,
// docs/distributed.md).
func init() {
	for _, d := range []Def{
		{Name: "REDIS_URL", Type: String, Default: "", Doc: "Join a distributed crawl kept in this Redis (redis://[user:password@]host:port[/db], any node of a Redis Cluster): the workers running the same JOB share one frontier, dupefilter and throttling state (empty = crawl alone, in this process)."},
		{Name: "JOB", Type: String, Default: "", Doc: "Name of the distributed job to join with REDIS_URL (letters, digits, '.', '_', '-'; empty = the spider's name)."},
		{Name: "REDIS_KEY_PREFIX", Type: String, Default: "gocrawl", Doc: "Prefix of every Redis key of the distributed jobs."},
		{Name: "REDIS_SHARDS", Type: NonNegative(Int), Default: 0, Doc: "Shards of a new distributed job: its scopes are spread over this many hash tags, hence over the nodes of a Redis Cluster (0 = 1 on a single server, 3 per cluster master on a cluster). An existing job keeps its own."},
		{Name: "REDIS_DUPEFILTER", Type: String, Default: "set", Doc: "How a new distributed job records fingerprints: set (exact, about 60 bytes per URL) or bloom (a Bloom filter sized by REDIS_BLOOM_CAPACITY and REDIS_BLOOM_ERROR_RATE)."},
		{Name: "REDIS_BLOOM_CAPACITY", Type: NonNegative(Int), Default: 100_000_000, Doc: "URLs the Bloom filter of REDIS_DUPEFILTER=bloom is sized for; beyond it the false-positive rate grows."},
		{Name: "REDIS_BLOOM_ERROR_RATE", Type: NonNegative(Float), Default: 0.001, Doc: "False-positive rate of the Bloom filter at REDIS_BLOOM_CAPACITY: the share of new URLs wrongly dropped as duplicates."},
		{Name: "REDIS_LEASE_TTL", Type: NonNegative(Float), Default: 30.0, Doc: "Seconds a request taken by a worker stays leased without renewal: a dead worker's requests (and their throttling slots) come back after this long."},
		{Name: "REDIS_UNAVAILABLE_TIMEOUT", Type: NonNegative(Float), Default: 60.0, Doc: "Seconds Redis may stay unreachable during a distributed crawl (workers start nothing and retry) before the worker exits with status 1."},
		{Name: "REDIS_POLL_INTERVAL", Type: NonNegative(Float), Default: 0.25, Doc: "Longest an idle worker waits before asking Redis for work again when nothing signalled a change."},
		{Name: "REDIS_WORKER_ID", Type: String, Default: "", Doc: "This worker's name in the job (empty = host-pid-random). A worker restarted with the same name takes its unfinished requests back at once instead of when their leases expire."},
		{Name: "REDIS_ITEMS_KEY", Type: String, Default: "", Doc: "With the RedisItems item pipeline: the Redis list items are pushed to as JSON (RPUSH); empty = PREFIX:{JOB}:items unless REDIS_ITEMS_STREAM is set."},
		{Name: "REDIS_ITEMS_STREAM", Type: String, Default: "", Doc: "With the RedisItems item pipeline: a Redis stream to add items to (XADD, field \"item\") instead of a list."},
		{Name: "REDIS_ITEMS_MAXLEN", Type: NonNegative(Int), Default: 0, Doc: "With REDIS_ITEMS_STREAM: trim the stream to about this many entries (0 = keep all)."},
	} {
		Register(d)
	}
}
