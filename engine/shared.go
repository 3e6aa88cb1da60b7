package engine

import (
	"context"

	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Shared is a crawl job that several worker processes run together: a
// distributed crawl (package redisjob implements it on Redis; `gocrawl
// run` uses it when REDIS_URL is set). The engine gets its scheduler's
// storage (a frontier shared by the workers, which also enforces
// MAX_STARTS_PER_SECOND for the whole job) from it, feeds the spider's
// start requests only while it is the job's seeder, and ends the crawl
// when the whole job is finished rather than when its own share is.
type Shared interface {
	// Throttling returns where the scopes' throttling state is kept (the
	// throttler's shared store).
	Throttling() throttling.Shared
	// Storage returns the scheduler's storage for the crawl (its
	// Frontier), built for the crawl's crawler (stats, log, spider).
	Storage(c *spider.Crawler) (*scheduler.Storage, error)
	// Seeding reports whether this process must feed the spider's start
	// requests now: it is the job's seeder (the first worker, or the one
	// that took over from a seeder that died), and seeding is not done.
	// It must be quick; the engine asks on every turn of its loop.
	Seeding() bool
	// Seeded is called once spider.Start has no more requests and all of
	// them were given to the scheduler; the job records that its start
	// requests are stored.
	Seeded(ctx context.Context)
	// Finished reports whether the job is over for every worker: its start
	// requests are stored and no request is queued, delayed or held by any
	// worker. The engine asks when it has nothing running; it must be
	// quick (an answer worked out in the background is fine).
	Finished() bool
}
