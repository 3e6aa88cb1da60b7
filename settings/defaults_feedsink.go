package settings

// Item sink settings: feeds whose target is a database URI
// (postgresql://, sqlite://; docs/exports.md).
func init() {
	for _, d := range []Def{
		{Name: "FEED_BATCH_ITEMS", Type: NonNegative(Int), Default: 1000, Doc: "Items a database feed (postgresql://, sqlite://) writes in one batch, one transaction (0 = 1000)."},
		{Name: "FEED_BUFFER_ITEMS", Type: NonNegative(Int), Default: 10000, Doc: "Items a database feed keeps while its server is away (0 = 10000); when it is full the crawl waits: no item is dropped."},
		{Name: "FEED_FLUSH_INTERVAL", Type: NonNegative(Float), Default: 1.0, Doc: "Seconds an item waits at most in a database feed's batch before it is written (0 = 1)."},
		{Name: "FEED_RETRY_TIMEOUT", Type: NonNegative(Float), Default: 600.0, Doc: "Seconds a database feed retries, with backoff, while its server is away, before the crawl stops (0 = 600); a job directory keeps the unwritten items' requests for the resumed run."},
	} {
		Register(d)
	}
}
