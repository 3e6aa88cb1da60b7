package redisq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// FrontierOptions configure a Frontier.
type FrontierOptions struct {
	// Store holds the entries; the frontier uses its connection, layout,
	// codec, owner and lease TTL. Required.
	Store *Store
	// Gates gives the parameters of the scopes' gates (the throttler).
	// Required.
	Gates Gates
	// Throttling, when set, is the throttler's shared store of the same
	// job: it shares this frontier's reservations and outbox.
	Throttling *Throttling
	// Clock is the local clock (the engine's); nil means the real one.
	Clock clock.Clock
	// Log receives warnings (Redis unavailable, leases lost).
	Log zerolog.Logger
	// Stats, when set, has its counters added up in Redis (per job, over
	// every worker) about once a second, for `gocrawl jobs inspect`.
	Stats *stats.Collector
	// StartRate and StartBurst are MAX_STARTS_PER_SECOND and
	// MAX_STARTS_BURST, enforced for the whole job by a token bucket per
	// shard (each shard gets 1/Shards of the rate).
	StartRate  float64
	StartBurst int
	// PollInterval bounds how long an idle worker waits before asking
	// Redis again when nothing tells it of a change (default 250 ms).
	PollInterval time.Duration
	// UnavailableTimeout is how long Redis may stay unreachable before
	// Pop fails (the crawl then stops with exit status 1); default 60 s.
	UnavailableTimeout time.Duration
	// PopInterval, when positive, is how long a worker that took
	// everything ready in a shard waits before popping from it again
	// (drawn between half and 1.5 times it, so that workers do not ask
	// together): what becomes ready meanwhile leaves together in the next
	// pop, whatever woke the worker. 0 pops whenever a slot is free and
	// something may be ready. Each request may leave up to this much after
	// its scopes allow it; never earlier.
	PopInterval time.Duration
	// FlushInterval, when positive, is the shortest time between two
	// flushes of the outbox (acknowledgements, pushes, wire marks): what
	// accumulates meanwhile goes in one call. 0 flushes as soon as the
	// previous flush returned.
	FlushInterval time.Duration
}

// Frontier is the crawl frontier of a job shared by worker processes: a
// pqueue.PriorityQueue whose throttling-aware selection runs in Redis (the
// pop script), so that every per-scope rule holds across workers as if
// one process ran the job.
//
// Pop costs one round trip (one script call on one shard). Pushes,
// acknowledgements (which free the request's scope slots and count its
// outcome) and stats go through an outbox that a background flusher sends
// in one script call per shard per flush, batching whatever accumulated:
// at most one more round trip per crawled request, fewer under load. A
// reservation is a lease renewed by this process while it holds the
// request; if the process dies, any worker puts the request back and
// frees its slots once the lease expires.
//
// It implements pqueue.Deduplicator: fingerprints are checked and recorded
// in the same script that stores the request.
type Frontier struct {
	store *Store
	c     redis.UniversalClient
	l     *Layout
	gates Gates
	clk   clock.Clock
	log   zerolog.Logger
	o     FrontierOptions

	out    *outbox
	leases *leases
	rnd    *rand.Rand // jitter draws; used by Pop's goroutine only

	mu       sync.Mutex
	hints    []time.Time // per shard: when it is worth popping from it again
	nextPop  []time.Time // per shard: not before (PopInterval after it was emptied)
	gens     []uint64    // per shard: wake-ups so far
	counts   []Counts    // per shard: as of its last script reply
	rr       int         // next shard to try first
	known    map[string]struct{}
	onPushed func(req *spider.Request, duplicate bool)

	offset atomic.Int64 // Redis clock minus local clock, ns

	unavailMu sync.Mutex
	unavail   time.Time // when Redis stopped answering; zero when it answers
	unavailN  int
	fatal     error

	statsMu   sync.Mutex
	statsLast map[string]float64
	statsAt   time.Time

	changed   chan struct{}
	cancel    context.CancelFunc
	flushDone chan struct{}
	bg        sync.WaitGroup
	opened    bool
}

var (
	_ pqueue.PriorityQueue = (*Frontier)(nil)
	_ pqueue.Deduplicator  = (*Frontier)(nil)
)

// NewFrontier returns a frontier; call Open before use.
func NewFrontier(o FrontierOptions) (*Frontier, error) {
	if o.Store == nil || o.Gates == nil {
		return nil, errors.New("redisq: FrontierOptions.Store and Gates are required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.UnavailableTimeout <= 0 {
		o.UnavailableTimeout = time.Minute
	}
	n := o.Store.l.shards
	f := &Frontier{store: o.Store, c: o.Store.c, l: o.Store.l, gates: o.Gates, clk: o.Clock, log: o.Log, o: o,
		out: newOutbox(), leases: newLeases(), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		hints: make([]time.Time, n), nextPop: make([]time.Time, n), gens: make([]uint64, n), counts: make([]Counts, n), known: map[string]struct{}{},
		changed: make(chan struct{}, 1), flushDone: make(chan struct{})}
	f.onPushed = func(*spider.Request, bool) {}
	if o.Throttling != nil {
		o.Throttling.attach(f)
	}
	return f, nil
}

// Store returns the frontier's store.
func (f *Frontier) Store() *Store { return f.store }

// Open implements pqueue.PriorityQueue: it loads the scripts, takes back
// the reservations this owner left (Store.Open), reads the counts and
// starts the background work: the outbox flusher, lease renewal, and a
// subscription to the shards' wake-up channels.
func (f *Frontier) Open(ctx context.Context) error {
	if err := loadScripts(ctx, f.c); err != nil {
		return fmt.Errorf("redisq: loading scripts: %w", err)
	}
	if err := f.store.Open(ctx); err != nil {
		return err
	}
	per, err := f.store.ShardCounts(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	copy(f.counts, per)
	f.mu.Unlock()
	ps, chans, err := f.subscribe(ctx)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	f.opened = true
	go f.flushLoop(bctx)
	f.bg.Go(func() { f.renewLoop(bctx) })
	f.bg.Go(func() { f.listen(bctx, ps, chans) })
	return nil
}

// Close implements pqueue.PriorityQueue: it flushes the outbox (waiting
// at most UnavailableTimeout for Redis), puts back at once the requests
// popped and never acknowledged (an aborted crawl), and stops the
// background work. What could not be flushed is not lost: unacknowledged
// requests come back when their leases expire.
func (f *Frontier) Close(ctx context.Context) error {
	if !f.opened {
		return nil
	}
	f.opened = false
	for _, id := range f.leases.unacked() {
		f.leases.markAcking(id)
		f.out.add(&op{kind: opNack, shard: shardOfID(id), ack: ack{id: id}})
	}
	f.flushStats(ctx)
	fctx, cancel := context.WithTimeout(ctx, f.o.UnavailableTimeout)
	ferr := f.out.waitFlushed(fctx)
	cancel()
	f.cancel()
	<-f.flushDone
	f.bg.Wait()
	if ferr != nil {
		return fmt.Errorf("redisq: %d operations not stored (their requests come back when their leases expire): %w", f.pendingOps(), ferr)
	}
	return f.Err()
}

func (f *Frontier) pendingOps() int {
	f.out.mu.Lock()
	defer f.out.mu.Unlock()
	return len(f.out.pending) + len(f.out.carry)
}

// Push implements pqueue.PriorityQueue: the request is stored whatever its
// fingerprint. The ID is not known until the outbox is flushed: it returns
// 0.
func (f *Frontier) Push(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int) (pqueue.ID, error) {
	return 0, f.PushUnique(ctx, now, req, scopes, priority, dupefilter.Fingerprint{}, false)
}

// OnPushed implements pqueue.Deduplicator.
func (f *Frontier) OnPushed(fn func(req *spider.Request, duplicate bool)) {
	f.mu.Lock()
	f.onPushed = fn
	f.mu.Unlock()
}

// PushUnique implements pqueue.Deduplicator. The request goes to the
// outbox; the flusher stores it (unless its fingerprint was seen) in the
// shard of its scopes. Scopes of one request must share a shard
// (ErrCrossShard).
func (f *Frontier) PushUnique(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int, fp dupefilter.Fingerprint, filter bool) error {
	if err := f.Err(); err != nil {
		return err
	}
	k, err := f.l.ShardOfScopes(scopes)
	if err != nil {
		return fmt.Errorf("request %s: %w", req, err)
	}
	nb, err := relativeDelay(req)
	if err != nil {
		return err
	}
	reqb, err := f.store.codec.Encode(req)
	if err != nil {
		return err
	}
	body, err := encodeBody(nil, scopes.Key(), priority, scopes, reqb)
	if err != nil {
		return err
	}
	var inits []gateInit
	f.mu.Lock()
	for _, s := range scopes {
		if _, ok := f.known[s.Name]; !ok {
			inits = append(inits, gateInit{scope: s.Name})
		}
	}
	onPushed := f.onPushed
	f.mu.Unlock()
	for i := range inits {
		inits[i].params = encodeParams(f.gates.InitialParams(inits[i].scope))
	}
	p := push{body: body, notBefore: nb, done: func(id pqueue.ID) { onPushed(req, id == 0) }}
	if filter {
		p.fp = string(fp[:])
	}
	f.out.add(&op{kind: opPush, shard: k, inits: inits, push: p})
	return nil
}

// markKnown records that scope has a gate in Redis. The set is bounded:
// when full it starts over (a scope sent again is not created twice).
func (f *Frontier) markKnown(scope string) {
	f.mu.Lock()
	if len(f.known) >= 100_000 {
		clear(f.known)
	}
	f.known[scope] = struct{}{}
	f.mu.Unlock()
}

// relativeDelay is the throttling_delay req still has to wait
// (throttling.PendingRequestDelay: none once applied) as the scripts want
// it: "+MS" after Redis's now, or "" for none.
func relativeDelay(req *spider.Request) (string, error) {
	d, err := throttling.PendingRequestDelay(req)
	if err != nil || d <= 0 {
		return "", err
	}
	return fmt.Sprintf("+%.3f", float64(d)/float64(time.Millisecond)), nil
}

// Ack implements pqueue.PriorityQueue: the acknowledgement (with the
// outcome class the throttler recorded) goes to the outbox; the flush
// forgets the request and frees its scope slots. The lease is renewed
// until then.
func (f *Frontier) Ack(ctx context.Context, id pqueue.ID) error {
	if shardOfID(id) >= f.l.shards {
		return fmt.Errorf("ack %d: %w", id, pqueue.ErrUnknownID)
	}
	classes, latency := f.leases.outcome(id)
	f.leases.markAcking(id)
	f.out.add(&op{kind: opAck, shard: shardOfID(id), ack: ack{id: id, classes: classes, latency: latency}})
	return nil
}

// Nack implements pqueue.PriorityQueue: the request goes back in line
// (through the outbox) and its scope slots are freed.
func (f *Frontier) Nack(ctx context.Context, id pqueue.ID) error {
	if shardOfID(id) >= f.l.shards {
		return fmt.Errorf("nack %d: %w", id, pqueue.ErrUnknownID)
	}
	f.leases.markAcking(id)
	f.out.add(&op{kind: opNack, shard: shardOfID(id), ack: ack{id: id}})
	return nil
}

// Len implements pqueue.PriorityQueue: the requests waiting or delayed in
// every shard as of the last replies, plus the pushes still in the
// outbox. It makes no round trip.
func (f *Frontier) Len() int {
	f.mu.Lock()
	n := int64(0)
	for _, c := range f.counts {
		n += c.Waiting + c.Delayed
	}
	f.mu.Unlock()
	f.out.mu.Lock()
	n += int64(f.out.pushes)
	f.out.mu.Unlock()
	return int(n)
}

func (f *Frontier) setCounts(k int, c Counts) {
	f.mu.Lock()
	f.counts[k] = c
	f.mu.Unlock()
}

// Changed implements scheduler.Notifier: it fires when a shard may have a
// ready request although no local download ended (a slot freed by
// another worker, an acknowledgement flushed).
func (f *Frontier) Changed() <-chan struct{} { return f.changed }

// wakeShard makes shard k worth trying at once and tells the engine.
func (f *Frontier) wakeShard(k int) {
	f.mu.Lock()
	f.hints[k] = time.Time{}
	f.gens[k]++
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Poke makes the engine call Pop again soon (Changed fires): the job's
// state changed in a way the frontier cannot see (it finished).
func (f *Frontier) Poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Flush waits until everything given to the frontier so far (pushes,
// acknowledgements) is stored in Redis, or ctx ends.
func (f *Frontier) Flush(ctx context.Context) error {
	f.out.kick()
	if err := f.out.waitFlushed(ctx); err != nil {
		return err
	}
	return f.Err()
}

// Idle reports whether this worker holds nothing: no reservation and an
// empty outbox.
func (f *Frontier) Idle() bool { return f.leases.len() == 0 && f.out.empty() }

// Drained reports whether the whole job's frontier is empty: nothing
// waiting, delayed or reserved in any shard, and nothing in this worker's
// outbox. Shards are read twice; the job is drained only if both passes
// find every shard empty and no entry was stored in between (a job
// acknowledged between two shard reads could have pushed children into a
// shard already read). Two pipelined round trips.
func (f *Frontier) Drained(ctx context.Context) (bool, error) {
	if !f.Idle() {
		return false, nil
	}
	first, err := f.store.ShardCounts(ctx)
	if err != nil {
		return false, err
	}
	for _, c := range first {
		if !c.Empty() {
			return false, nil
		}
	}
	second, err := f.store.ShardCounts(ctx)
	if err != nil {
		return false, err
	}
	for k, c := range second {
		if !c.Empty() || c.Stored != first[k].Stored {
			return false, nil
		}
	}
	return f.Idle(), nil
}

// Offset returns the difference between Redis's clock and the local one
// (Redis minus local), as estimated from the last script replies.
func (f *Frontier) Offset() time.Duration { return time.Duration(f.offset.Load()) }

// noteOffset updates the clock offset from a reply stamped redisMS by
// Redis, sent at start and received at end in the local clock.
func (f *Frontier) noteOffset(redisMS float64, start, end time.Time) time.Time {
	mid := start.Add(end.Sub(start) / 2)
	r := msTime(redisMS)
	f.offset.Store(int64(r.Sub(mid)))
	return mid
}

// local converts a Redis time (ms) to the local clock.
func (f *Frontier) local(ms float64) time.Time { return msTime(ms).Add(-f.Offset()) }
