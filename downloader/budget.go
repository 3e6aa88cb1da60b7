package downloader

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Budget bounds the memory that response bodies hold crawl-wide
// (DOWNLOAD_MEMORY_BUDGET), so that CONCURRENT_REQUESTS responses of
// DOWNLOAD_MAXSIZE bytes each cannot exhaust the machine. Every byte of a
// body buffer is counted from the moment it is allocated until the lease
// holding it is released: the engine releases a job's lease when its
// callback has finished with the response. While a buffer grows, the old
// and the new copy are both counted.
//
// Waiting for budget cannot deadlock: each download may hold up to its
// share (Total / (2 × concurrency)) waiting only for budget, and only one
// download at a time (the one holding the "grow token") may grow beyond
// its share; it needs at most Total/2, which the other downloads, holding
// at most a share each while they wait, always leave it. So bodies larger
// than a share are read one at a time (with the default budget a share is
// tens of megabytes). Downloads outside a job
// (robots.txt, Crawler.Download from a callback) are counted when there is
// room but never wait, because their caller may itself hold budget.
//
// A Budget is safe for concurrent use. The zero value is not usable; call
// NewBudget.
type Budget struct {
	sem   *semaphore.Weighted
	total int64
	share int64
	token chan struct{} // holds one value while a download grows past its share
	held  atomic.Int64  // bytes counted, including over-budget bytes of no-wait leases
	peak  atomic.Int64
}

// NewBudget returns a budget of total bytes for a crawl of at most
// concurrency simultaneous downloads (CONCURRENT_REQUESTS; 0 or less means
// 100).
func NewBudget(total int64, concurrency int) *Budget {
	if concurrency <= 0 {
		concurrency = 100
	}
	total = max(total, minBudget)
	return &Budget{
		sem:   semaphore.NewWeighted(total),
		total: total,
		share: max(total/int64(2*concurrency), 1),
		token: make(chan struct{}, 1),
	}
}

// minBudget is the smallest budget: below it no crawl works.
const minBudget = 1 << 20

// Total returns the budget in bytes.
func (b *Budget) Total() int64 { return b.total }

// MaxBody returns the largest body one response can have under the
// budget: while its buffer doubles the old and new copies are both
// counted, and a growing download may hold at most half the budget.
// DOWNLOAD_MAXSIZE values above it are lowered to it.
func (b *Budget) MaxBody() int64 { return b.maxHold() * 2 / 3 }

func (b *Budget) maxHold() int64 { return b.total / 2 }

// Held returns the bytes counted now and the peak so far.
func (b *Budget) Held() (now, peak int64) { return b.held.Load(), b.peak.Load() }

// Lease returns an empty lease (nil for a nil Budget; a nil *Lease counts
// nothing). A lease that may wait (a job's download) blocks for budget
// when there is none; one that may not (robots.txt, Crawler.Download)
// counts what fits and goes over the budget otherwise.
func (b *Budget) Lease(mayWait bool) *Lease {
	if b == nil {
		return nil
	}
	return &Lease{b: b, wait: mayWait}
}

// Lease is the budget held by one response's body, and by the copy of
// the body as received that a Capture keeps for archiving. Release it when
// the body is no longer used.
type Lease struct {
	b    *Budget
	wait bool

	mu       sync.Mutex
	counted  int64 // acquired from the semaphore
	over     int64 // counted over the budget (no-wait leases only)
	hasToken bool
	body     int64 // what the body buffer needs (ensure, shrink)
	extra    int64 // what a Capture's copy of the raw body needs (hold)
}

// ensure raises what the body buffer holds to at least n bytes, waiting
// for budget when the lease may wait. It fails when ctx is done first, and
// with errBudget when n and the captured body together pass what one
// response may hold.
func (l *Lease) ensure(ctx context.Context, n int64) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.raise(ctx, n+l.extra); err != nil {
		return err
	}
	l.body = max(l.body, n)
	return nil
}

// hold makes the captured copy of the body need n bytes (more or fewer
// than before), waiting for budget as ensure does.
func (l *Lease) hold(ctx context.Context, n int64) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.raise(ctx, l.body+n); err != nil {
		return err
	}
	l.extra = n
	l.lower(l.body + n)
	return nil
}

// raise raises what the lease holds to at least n bytes. Called with l.mu
// held.
func (l *Lease) raise(ctx context.Context, n int64) error {
	have := l.counted + l.over
	if n <= have {
		return nil
	}
	need := n - have
	if !l.wait {
		if l.b.sem.TryAcquire(need) {
			l.counted += need
		} else {
			l.over += need
		}
		l.b.add(need)
		return nil
	}
	if n > l.b.maxHold() {
		// More than the grow token lets one download hold: waiting
		// could never end.
		return errBudget
	}
	if n > l.b.share && !l.hasToken {
		// Past its share a download must hold the grow token: only one
		// download at a time waits while holding more than a share.
		select {
		case l.b.token <- struct{}{}:
			l.hasToken = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := l.b.sem.Acquire(ctx, need); err != nil {
		return err
	}
	l.counted += need
	l.b.add(need)
	return nil
}

// shrink lowers what the body buffer holds to n bytes (the buffer that
// remains after a growth).
func (l *Lease) shrink(n int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.body = n
	l.lower(n + l.extra)
}

// ReleaseCapture gives back what the captured copy of the body held, once
// it is archived; the body's own share stays held.
func (l *Lease) ReleaseCapture() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.extra = 0
	l.lower(l.body)
}

func (l *Lease) lower(n int64) {
	n = max(n, 0)
	if d := min(l.over, l.counted+l.over-n); d > 0 {
		l.over -= d
		l.b.add(-d)
	}
	if d := l.counted + l.over - n; d > 0 {
		l.counted -= d
		l.b.sem.Release(d)
		l.b.add(-d)
	}
}

// doneGrowing gives the grow token back: the body is read, its size no
// longer changes.
func (l *Lease) doneGrowing() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hasToken {
		l.hasToken = false
		<-l.b.token
	}
}

// Release gives back everything the lease holds. It may be called more
// than once.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.body, l.extra = 0, 0
	l.lower(0)
	if l.hasToken {
		l.hasToken = false
		<-l.b.token
	}
}

func (b *Budget) add(n int64) {
	v := b.held.Add(n)
	for {
		p := b.peak.Load()
		if v <= p || b.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

type leaseKey struct{}

// WithLease makes the downloader count the body of the request fetched
// under ctx in l; the caller releases l when it no longer needs the body.
// Without a lease in ctx, Fetch uses a lease of its own that may wait and
// is released when Fetch returns (the caller gets the body uncounted).
func WithLease(ctx context.Context, l *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

func leaseFrom(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}
