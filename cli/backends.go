package cli

// The backends a crawl run from the command line may ask for by its
// settings, linked into every cli.Main program so that it behaves as the
// gocrawl command does: the engine itself imports neither.
import (
	// Headless Chromium for requests that ask to be rendered (the render
	// meta, RENDER_JS, RENDER_SCOPES): registers the "render" download
	// handler.
	_ "github.com/gocrawl/gocrawl/downloader/render"
	// The HTTP cache's store on disk (HTTPCACHE_ENABLED).
	_ "github.com/gocrawl/gocrawl/middleware/httpcache/pebblecache"
	// Feeds written to S3-compatible object storage (-o s3://bucket/key):
	// registers the "s3" feed storage.
	_ "github.com/gocrawl/gocrawl/pipeline/feed/s3feed"
	// Item feeds into PostgreSQL (-o postgresql://...) and SQLite
	// (-o sqlite:///path/items.db): register the feed sinks.
	_ "github.com/gocrawl/gocrawl/pipeline/feed/pgsink"
	_ "github.com/gocrawl/gocrawl/pipeline/feed/sqlitesink"
	// The queue that spills to disk past SCHEDULER_MEMORY_MAX_REQUESTS in
	// a crawl without JOBDIR: registers the scheduler's spill storage.
	_ "github.com/gocrawl/gocrawl/pqueue/spillq"
)
