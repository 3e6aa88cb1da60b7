// Package redisjob runs a crawl job shared by worker processes on Redis:
// `gocrawl run SPIDER -s REDIS_URL=redis://host:6379/0 [-s JOB=name]` on
// each machine joins the job. The workers share one frontier, one
// dupefilter and one throttling state per scope (package pqueue/redisq),
// so every per-scope rule holds across them as if one process ran the job.
//
// A Job is what the engine plugs in (engine.Options.Shared): the frontier
// as the scheduler's storage, the seeding decision (the first worker seeds
// the spider's start requests; if it dies while seeding, another takes
// over, and deduplication makes the repeat harmless), the end of the job
// (its frontier empty and no worker holding a request: every worker then
// exits 0), worker heartbeats and the job's metadata. Inspect and Delete
// serve `gocrawl jobs inspect --redis` and `gocrawl jobs delete --redis`;
// the RedisItems item pipeline pushes items to a Redis list or stream.
//
// See docs/distributed.md for the model, a walkthrough, failure behaviour
// and the key layout.
package redisjob

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// testHooks are added to the connections Open makes (tests count round
// trips with them).
var testHooks []redis.Hook

// FormatVersion is the version of the job's key layout and record
// formats. A job written with another version is refused.
const FormatVersion = 1

// ErrBadJob is the kind of every error Open returns for a job or settings
// that cannot be used (the command line exits with status 2): Redis
// unreachable, a job of another spider or version, settings that cannot
// be shared by workers.
var ErrBadJob = errors.New("distributed job cannot be used")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadJob, fmt.Sprintf(format, args...))
}

// Job is a distributed job joined by this process. It implements
// engine.Shared.
type Job struct {
	c      redis.UniversalClient
	l      *redisq.Layout
	sp     spider.Spider
	set    *settings.Settings
	log    zerolog.Logger
	worker string
	meta   Metadata
	dedupe redisq.Dedupe
	lease  time.Duration
	store  *redisq.Store
	thr    *redisq.Throttling

	frontier *redisq.Frontier // once Storage is called

	seeding  atomic.Bool // this worker holds the seeding lease
	seedDone atomic.Bool // the job's start requests are all stored
	finished atomic.Bool

	mu        sync.Mutex
	checking  bool
	lastCheck time.Time

	stop context.CancelFunc
	bg   sync.WaitGroup
}

var _ engine.Shared = (*Job)(nil)

// Metadata is the job's identity record (PREFIX:{JOB}:meta).
type Metadata struct {
	Version     int
	Spider      string
	Created     time.Time
	Shards      int
	Dupefilter  string // "set" or "bloom"
	BloomBits   uint64
	BloomHashes int
}

// Open joins the job named by the settings (JOB, or the spider's name) in
// the Redis of REDIS_URL, creating it on first use, registers this worker
// and starts its heartbeat. Every problem is an error of kind ErrBadJob:
// Redis unreachable (the error names the address), a job belonging to
// another spider or format version, settings a distributed crawl cannot
// honour (JOBDIR, custom scope managers, the engine-gated scheduler, per-IP
// scopes over several shards, a bad job name or dupefilter setting).
func Open(ctx context.Context, s *settings.Settings, sp spider.Spider, log zerolog.Logger) (*Job, error) {
	url := s.String("REDIS_URL")
	if url == "" {
		return nil, bad("REDIS_URL is empty")
	}
	if s.String("JOBDIR") != "" {
		return nil, bad("JOBDIR and REDIS_URL cannot be used together: a job is kept either in a job directory or in Redis (unset one of them)")
	}
	if err := checkSettings(s); err != nil {
		return nil, err
	}
	name := s.String("JOB")
	if name == "" {
		name = sp.Name()
	}
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err == nil {
		for _, h := range testHooks {
			c.AddHook(h)
		}
	}
	if err != nil {
		if errors.Is(err, redisq.ErrUnreachable) {
			return nil, bad("cannot reach Redis at %s (REDIS_URL): %v", redisq.Addr(url), err)
		}
		return nil, bad("%v", err)
	}
	j := &Job{c: c, sp: sp, set: s, log: log, lease: s.Seconds("REDIS_LEASE_TTL")}
	if j.lease <= 0 {
		j.lease = redisq.DefaultLeaseTTL
	}
	if err := j.join(ctx, name); err != nil {
		c.Close()
		return nil, err
	}
	j.store, err = redisq.NewStore(redisq.Options{Client: c, Layout: j.l, Codec: reqcodec.Codec{Spider: sp}, Owner: j.worker,
		LeaseTTL: j.lease, Dedupe: j.dedupe})
	if err != nil {
		c.Close()
		return nil, bad("%v", err)
	}
	j.thr = redisq.NewThrottling(j.store)
	if err := j.beginRecrawl(ctx); err != nil {
		c.Close()
		return nil, bad("job %s: beginning the recrawl round: %v", name, err)
	}
	if err := j.heartbeat(ctx); err != nil {
		c.Close()
		return nil, bad("registering worker %s in job %s: %v", j.worker, name, err)
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j.stop = cancel
	j.bg.Go(func() { j.heartbeatLoop(bctx) })
	log.Info().Str("job", name).Str("worker", j.worker).Str("redis", redisq.Addr(url)).Int("shards", j.meta.Shards).
		Bool("seeder", j.seeding.Load()).Bool("seeded", j.seedDone.Load()).Msg("joined the distributed job")
	return j, nil
}

// checkSettings refuses what a distributed crawl cannot honour.
func checkSettings(s *settings.Settings) error {
	if s.String("SCHEDULER") == scheduler.EngineGated {
		return bad("SCHEDULER %s (engine-gated) cannot run on the shared frontier, whose queue admits requests itself; use %s",
			scheduler.EngineGated, scheduler.ThrottlingAware)
	}
	switch s.String("REDIS_DUPEFILTER") {
	case "set", "bloom":
	default:
		return bad("REDIS_DUPEFILTER %q: want set or bloom", s.String("REDIS_DUPEFILTER"))
	}
	cfg, err := throttling.ReadConfig(s)
	if err != nil {
		return bad("%v", err)
	}
	if m := cfg.Scope("example.com").Manager; m != throttling.DefaultScopeManagerName {
		return bad("THROTTLING_SCOPE_MANAGER %q: a custom scope manager keeps its state in one process, which the workers of a "+
			"distributed crawl cannot share; use %s (the default) with REDIS_URL", m, throttling.DefaultScopeManagerName)
	}
	for _, name := range cfg.ConfiguredScopes() {
		if m := cfg.Scope(name).Manager; m != throttling.DefaultScopeManagerName {
			return bad("THROTTLING_SCOPES %q: manager %q keeps its state in one process, which the workers of a distributed "+
				"crawl cannot share; remove the scope's manager key to use %s", name, m, throttling.DefaultScopeManagerName)
		}
	}
	return nil
}

// join reads the job's metadata, creating the job if it does not exist,
// and checks it against the spider and the settings.
func (j *Job) join(ctx context.Context, name string) error {
	s := j.set
	shards := s.Int("REDIS_SHARDS")
	if shards == 0 {
		shards = 1
		if cc, ok := j.c.(*redis.ClusterClient); ok {
			var masters atomic.Int64
			_ = cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { masters.Add(1); return nil })
			shards = 3 * max(int(masters.Load()), 1)
		}
	}
	if shards > redisq.MaxShards {
		return bad("REDIS_SHARDS %d: at most %d", shards, redisq.MaxShards)
	}
	want := Metadata{Version: FormatVersion, Spider: j.sp.Name(), Created: time.Now().UTC(), Shards: shards,
		Dupefilter: s.String("REDIS_DUPEFILTER")}
	if want.Dupefilter == "bloom" {
		d, err := redisq.BloomFor(int64(s.Int("REDIS_BLOOM_CAPACITY")), s.Float("REDIS_BLOOM_ERROR_RATE"), shards)
		if err != nil {
			return bad("REDIS_DUPEFILTER bloom: %v", err)
		}
		want.BloomBits, want.BloomHashes = d.Bits, d.Hashes
	}
	prefix := s.String("REDIS_KEY_PREFIX")
	l0, err := redisq.NewLayout(prefix, name, 1)
	if err != nil {
		if s.String("JOB") == "" {
			return bad("the spider's name %q cannot name a job: set JOB (-s JOB=name): %v", name, err)
		}
		return bad("JOB: %v", err)
	}
	got, created, err := createMeta(ctx, j.c, l0.JobKey("meta"), want)
	if err != nil {
		return bad("reading job %s at %s: %v", name, j.addr(), err)
	}
	switch {
	case got.Version != FormatVersion:
		return bad("job %s was written by format version %d, this gocrawl reads %d; delete it (gocrawl jobs delete --redis URL %s) or use another JOB",
			name, got.Version, FormatVersion, name)
	case got.Spider != j.sp.Name():
		return bad("job %s belongs to spider %q, not %q; use another JOB (-s JOB=name)", name, got.Spider, j.sp.Name())
	}
	if !created {
		if v, _ := s.Origin("REDIS_SHARDS"); v.Source != settings.SourceDefault && s.Int("REDIS_SHARDS") != 0 && s.Int("REDIS_SHARDS") != got.Shards {
			return bad("REDIS_SHARDS %d: job %s has %d shards (a job keeps the shards it was created with)", s.Int("REDIS_SHARDS"), name, got.Shards)
		}
		if v, _ := s.Origin("REDIS_DUPEFILTER"); v.Source != settings.SourceDefault && want.Dupefilter != got.Dupefilter {
			return bad("REDIS_DUPEFILTER %s: job %s records fingerprints in a %s (a job keeps the dupefilter it was created with)", want.Dupefilter, name, got.Dupefilter)
		}
	}
	j.meta = got
	if got.Dupefilter == "bloom" {
		j.dedupe = redisq.Dedupe{Bloom: true, Bits: got.BloomBits, Hashes: got.BloomHashes}
	}
	if j.l, err = redisq.NewLayout(prefix, name, got.Shards); err != nil {
		return bad("%v", err)
	}
	if cfg, _ := throttling.ReadConfig(s); cfg != nil && cfg.PerIP > 0 && got.Shards > 1 {
		return bad("CONCURRENT_REQUESTS_PER_IP with %d shards: an IP scope is shared by hosts of every shard, so its admission cannot "+
			"be atomic; use REDIS_SHARDS=1 for a new job (a job of one shard lives on one Redis node)", got.Shards)
	}
	j.worker = s.String("REDIS_WORKER_ID")
	if j.worker == "" {
		host, _ := os.Hostname()
		j.worker = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
	}
	if len(j.worker) > 200 {
		return bad("REDIS_WORKER_ID: %d bytes, at most 200", len(j.worker))
	}
	return nil
}

// createMeta creates the metadata record if it does not exist and returns
// the job's record and whether this call created it.
func createMeta(ctx context.Context, c redis.UniversalClient, key string, m Metadata) (Metadata, bool, error) {
	created, err := c.HSetNX(ctx, key, "version", m.Version).Result()
	if err != nil {
		return Metadata{}, false, err
	}
	if created {
		err := c.HSet(ctx, key, "spider", m.Spider, "created", m.Created.Format(time.RFC3339Nano), "shards", m.Shards,
			"dupefilter", m.Dupefilter, "bloom_bits", m.BloomBits, "bloom_hashes", m.BloomHashes, "complete", 1).Err()
		if err != nil {
			return Metadata{}, false, err
		}
		return m, true, nil
	}
	for range 50 { // another worker is creating it: wait for its fields
		v, err := c.HGetAll(ctx, key).Result()
		if err != nil {
			return Metadata{}, false, err
		}
		if v["complete"] == "1" {
			return parseMeta(v), false, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return Metadata{}, false, fmt.Errorf("the job's metadata %s is incomplete (a worker died while creating it?): delete the job", key)
}

func parseMeta(v map[string]string) Metadata {
	n := func(k string) int { x, _ := strconv.Atoi(v[k]); return x }
	created, _ := time.Parse(time.RFC3339Nano, v["created"])
	bits, _ := strconv.ParseUint(v["bloom_bits"], 10, 64)
	return Metadata{Version: n("version"), Spider: v["spider"], Created: created, Shards: n("shards"),
		Dupefilter: v["dupefilter"], BloomBits: bits, BloomHashes: n("bloom_hashes")}
}

// Metadata returns the job's metadata.
func (j *Job) Metadata() Metadata { return j.meta }

// Worker returns this worker's ID.
func (j *Job) Worker() string { return j.worker }

// Layout returns the job's key layout.
func (j *Job) Layout() *redisq.Layout { return j.l }

// Client returns the job's Redis connection.
func (j *Job) Client() redis.UniversalClient { return j.c }

func (j *Job) addr() string { return redisq.Addr(j.set.String("REDIS_URL")) }

// Throttling implements engine.Shared: the scopes' throttling state in
// the job's Redis.
func (j *Job) Throttling() throttling.Shared { return j.thr }

// Storage implements engine.Shared: the job's frontier. The crawler's
// throttler must be the one built over Throttling (it gives the gates'
// parameters).
func (j *Job) Storage(c *spider.Crawler) (*scheduler.Storage, error) {
	gates, ok := c.Throttler.(redisq.Gates)
	if !ok {
		return nil, fmt.Errorf("the crawler's throttler %T cannot give gate parameters to the shared frontier", c.Throttler)
	}
	f, err := redisq.NewFrontier(redisq.FrontierOptions{Store: j.store, Gates: gates, Throttling: j.thr, Log: c.Log, Stats: c.Stats,
		StartRate: j.set.Float("MAX_STARTS_PER_SECOND"), StartBurst: j.set.Int("MAX_STARTS_BURST"),
		PollInterval: j.set.Seconds("REDIS_POLL_INTERVAL"), UnavailableTimeout: j.set.Seconds("REDIS_UNAVAILABLE_TIMEOUT"),
		PopInterval: j.set.Seconds("REDIS_POP_INTERVAL"), FlushInterval: j.set.Seconds("REDIS_FLUSH_INTERVAL")})
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	j.frontier = f
	j.mu.Unlock()
	return &scheduler.Storage{Frontier: f}, nil
}

// Close stops the heartbeat, removes this worker from the job's live
// workers and closes the connection. Call it after the engine returned
// (the frontier is closed with the scheduler).
func (j *Job) Close() error {
	if j.stop != nil {
		j.stop()
	}
	j.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = leaveScript.Run(ctx, j.c, []string{j.l.JobKey("workers")}, j.worker).Err()
	return j.c.Close()
}
