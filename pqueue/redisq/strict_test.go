package redisq_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// A strict host as the engine reaches it, crawled by one process or by
// three workers sharing Redis, on the same script and the same clock:
// robots.txt first, in its seed's turn (the host does not count it); every
// request written to its connection a few ms after its admission
// (Throttler.Wired); a token bucket of 0.5/s with a burst of 1 that
// answers 429 with Retry-After: 2. The script's time is the host's and
// Redis's; the workers' clock drifts a few hundred µs against it, so that
// the clock offset each pop measures changes from one call to the next.

// strictSent is a request on its way to the strict host.
type strictSent struct {
	p      *pqueue.Popped
	worker int
	done   time.Time // its answer (the script's clock)
	ok     bool
}

// strictCrawler is how the script sends: the in-memory throttler, or
// workers of a shared job.
type strictCrawler interface {
	// set moves the clocks to the script's time at.
	set(at time.Time)
	// pop admits the next page if the scope allows it now.
	pop(t *testing.T) *strictSent
	// robots fetches robots.txt in the turn of s (admitted, not sent),
	// which goes back to the queue.
	robots(t *testing.T, s *strictSent)
	// wired reports that s reached its connection.
	wired(s *strictSent)
	// flushWire delivers the wire marks (shared: the outbox).
	flushWire(t *testing.T)
	// respond completes s with status and headers.
	respond(t *testing.T, s *strictSent, status int, h http.Header)
	// policy is the scope's policy state now.
	policy(t *testing.T) throttling.PolicyState
}

// strictScript are the variants of the script.
type strictScript struct {
	// wire is how long after its admission a request reaches its
	// connection; markLate: the wire mark reaches the gate only with the
	// answer's acknowledgement, after the feedback (shared: the outbox is
	// not flushed before the answer).
	wire     time.Duration
	markLate bool
}

// strictResult is what a crawl of the strict host saw.
type strictResult struct {
	ok, refused, inside int
	lastOK              time.Duration // from the first page's arrival
	burst               float64       // the policy's burst after the first refusal
	hiAt                int           // the refusal (1-based) whose gap first bounded the limit from above; 0 = none
	loSeen              bool          // a lower bound was set (at a step)
	st                  throttling.PolicyState
}

const strictHost = "h.test"

func crawlStrictHost(t *testing.T, c strictCrawler, sc strictScript, pages int) strictResult {
	t.Helper()
	const (
		rate  = 0.5
		ra    = 2 * time.Second
		tick  = 10 * time.Millisecond
		limit = 3 * time.Minute
	)
	var res strictResult
	now := t0.Add(time.Second)
	c.set(now)
	tokens, last := 1.0, now
	var until, first time.Time // the host's latest Retry-After window's end; the first page's arrival
	var inflight []*strictSent
	robots := true
	for end := now.Add(limit); res.ok < pages; {
		if now.After(end) {
			t.Fatalf("%d of %d pages in %v (%d refused)", res.ok, pages, limit, res.refused)
		}
		// The answers due.
		rest := inflight[:0]
		for _, s := range inflight {
			if s.done.After(now) {
				rest = append(rest, s)
				continue
			}
			if s.ok {
				c.respond(t, s, http.StatusOK, nil)
				if !res.loSeen {
					res.loSeen = c.policy(t).RateGapLo > 0
				}
			} else {
				c.respond(t, s, http.StatusTooManyRequests, http.Header{"Retry-After": {strconv.Itoa(int(ra / time.Second))}})
				st := c.policy(t)
				if res.refused == 1 {
					res.burst = st.RateBurst
				}
				if res.hiAt == 0 && res.refused > 1 && st.RateGapHi > 0 {
					res.hiAt = res.refused
				}
			}
		}
		inflight = rest
		// The pages the scope admits now.
		for {
			s := c.pop(t)
			if s == nil {
				break
			}
			if robots {
				robots = false
				c.robots(t, s)
				continue
			}
			if sc.wire > 0 {
				now = now.Add(sc.wire)
				c.set(now)
			}
			c.wired(s)
			if !sc.markLate {
				c.flushWire(t)
			}
			if first.IsZero() {
				first = now
			}
			if now.Before(until) {
				res.inside++
			}
			tokens = min(1, tokens+now.Sub(last).Seconds()*rate)
			last = now
			s.ok = tokens >= 1
			if s.ok {
				tokens--
				res.ok++
				res.lastOK = now.Sub(first)
				s.done = now.Add(10 * time.Millisecond)
			} else {
				res.refused++
				s.done = now.Add(time.Millisecond)
				until = s.done.Add(ra)
			}
			inflight = append(inflight, s)
			if !res.loSeen {
				res.loSeen = c.policy(t).RateGapLo > 0 // set at a step (the pop's refresh)
			}
		}
		now = now.Add(tick)
		c.set(now)
	}
	res.st = c.policy(t)
	return res
}

// strictSettings are the strict host's crawl settings: the broad crawl's
// delay of one second, without jitter (the shared gates draw theirs in
// Redis), robots.txt as the script fetches it.
func strictSettings() map[string]any {
	return map[string]any{"ROBOTSTXT_OBEY": false, "DOWNLOAD_DELAY": 1, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0}
}

// memCrawler is one process: the in-memory throttler.
type memCrawler struct {
	thr    *throttling.Throttler
	clk    *clock.Fake
	scopes throttling.Scopes
	n      int
}

func newMemCrawler(t *testing.T) *memCrawler {
	s := settings.New()
	if err := s.SetMap(strictSettings(), settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	thr, err := throttling.New(s, throttling.Options{Clock: clk, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := thr.Scopes(context.Background(), spider.MustRequest("http://"+strictHost+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	return &memCrawler{thr: thr, clk: clk, scopes: sc}
}

func (m *memCrawler) set(at time.Time) { m.clk.Set(at) }

func (m *memCrawler) pop(*testing.T) *strictSent {
	now := m.clk.Now()
	if m.thr.Wait(now, m.scopes) != 0 {
		return nil
	}
	m.thr.Sent(now, m.scopes)
	m.n++
	req := spider.MustRequest(fmt.Sprintf("http://%s/%d", strictHost, m.n), nil)
	return &strictSent{p: &pqueue.Popped{Req: req, Scopes: m.scopes, Admitted: true, SentAt: now}}
}

// robotsInTurn fetches robots.txt through thr as the engine does for the
// request p: admitted at once in p's turn, answered 200; p is then not
// sent (its turn was robots.txt's).
func robotsInTurn(t *testing.T, thr *throttling.Throttler, p *pqueue.Popped) {
	t.Helper()
	ctx := throttling.WithTurnOf(throttling.WithoutSlot(context.Background()), p.SentAt)
	at, err := thr.Admit(ctx, p.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	robots := spider.MustRequest("http://"+strictHost+"/robots.txt", nil)
	thr.Done(context.Background(), robots, p.Scopes, at, &spider.Response{Request: robots, Status: http.StatusOK, URL: robots.URL}, nil)
	thr.NotSent(context.Background(), p.Req, p.Scopes, p.SentAt)
}

func (m *memCrawler) robots(t *testing.T, s *strictSent) { robotsInTurn(t, m.thr, s.p) }

func (m *memCrawler) wired(s *strictSent) { m.thr.Wired(s.p.Scopes, s.p.SentAt) }

func (m *memCrawler) flushWire(*testing.T) {}

func (m *memCrawler) respond(_ *testing.T, s *strictSent, status int, h http.Header) {
	res := &spider.Response{Request: s.p.Req, Status: status, Header: h, URL: s.p.Req.URL}
	m.thr.Done(context.Background(), s.p.Req, s.p.Scopes, s.p.SentAt, res, nil)
}

func (m *memCrawler) policy(*testing.T) throttling.PolicyState {
	for _, s := range m.thr.Snapshot() {
		if s.Scope == strictHost && s.Policy != nil {
			return *s.Policy
		}
	}
	return throttling.PolicyState{}
}

// sharedCrawler is three workers of a shared job, taking turns to pop;
// their clock drifts against Redis's (drifts, one per set, in turn).
type sharedCrawler struct {
	w       *world
	workers []*tworker
	next    int
	drifts  []time.Duration
	sets    int
}

func newSharedCrawler(t *testing.T, pages int) *sharedCrawler {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	c := &sharedCrawler{w: w, drifts: []time.Duration{0, 300 * time.Microsecond, -200 * time.Microsecond, 450 * time.Microsecond, -350 * time.Microsecond, 150 * time.Microsecond}}
	for _, name := range []string{"a", "b", "c"} {
		// The outbox goes out only when the script flushes it (a wire
		// mark not flushed goes with the answer's acknowledgement).
		c.workers = append(c.workers, w.throttledWith(t, name, strictSettings(), redisq.FrontierOptions{FlushInterval: time.Hour}))
	}
	c.workers[0].push(t, urls(strictHost, pages+20)...)
	return c
}

func (c *sharedCrawler) set(at time.Time) {
	w := c.w
	w.t.Helper()
	ms := strconv.FormatFloat(float64(at.UnixMicro())/1000, 'f', 3, 64)
	for k := range w.l.Shards() {
		if err := w.c.Set(context.Background(), w.l.ShardKey(k, "testclock"), ms, 0).Err(); err != nil {
			w.t.Fatal(err)
		}
	}
	local := at.Add(c.drifts[c.sets%len(c.drifts)])
	c.sets++
	if d := local.Sub(w.clk.Now()); d > 0 {
		w.clk.Advance(d)
	}
}

func (c *sharedCrawler) pop(t *testing.T) *strictSent {
	// The workers take turns; one that finds nothing ready speaks for
	// all (the gate is the job's). now an hour on: every pop asks Redis
	// (no hint of the worker's skips it), so that the script does not
	// depend on when wake-ups arrive.
	i := c.next
	c.next = (c.next + 1) % len(c.workers)
	if p, _ := pop(t, c.workers[i].f, c.w.clk.Now().Add(time.Hour)); p != nil {
		return &strictSent{p: p, worker: i}
	}
	return nil
}

func (c *sharedCrawler) robots(t *testing.T, s *strictSent) {
	tw := c.workers[s.worker]
	robotsInTurn(t, tw.thr, s.p)
	// As the engine: the seed's job is acknowledged and a copy goes back
	// to the queue (the pages pushed are more than the script needs).
	if err := tw.f.Ack(context.Background(), s.p.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, tw.f)
}

func (c *sharedCrawler) wired(s *strictSent) {
	c.workers[s.worker].thr.Wired(s.p.Scopes, s.p.SentAt)
}

func (c *sharedCrawler) flushWire(t *testing.T) {
	for _, tw := range c.workers {
		flush(t, tw.f)
	}
}

func (c *sharedCrawler) respond(t *testing.T, s *strictSent, status int, h http.Header) {
	tw := c.workers[s.worker]
	res := &spider.Response{Request: s.p.Req, Status: status, Header: h, URL: s.p.Req.URL}
	tw.thr.Done(context.Background(), s.p.Req, s.p.Scopes, s.p.SentAt, res, nil)
	if err := tw.f.Ack(context.Background(), s.p.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, tw.f)
}

func (c *sharedCrawler) policy(t *testing.T) throttling.PolicyState {
	key := c.w.l.ShardKey(c.w.l.ShardOf(strictHost), "s:"+strictHost)
	if n, err := c.w.c.HExists(context.Background(), key, "p").Result(); err != nil || !n {
		return throttling.PolicyState{} // not written yet
	}
	return policyOf(t, c.w, strictHost)
}

// The strict host crawled by three workers is crawled as by one process:
// the first refusal reads a burst of one (robots.txt, in its seed's turn,
// left out), the second refusal's gap bounds the limit from above and an
// accepted gap from below (the feedback names its request by the
// admission time Redis recorded, whatever the clock offset; a wire mark
// keeps the send before it), so the estimate settles at the limit with as
// few refusals as in memory, none inside a Retry-After window, and the
// pages take as long.
func TestStrictHostAfterRobotsTxtShared(t *testing.T) {
	const pages = 20
	for _, sc := range []strictScript{
		{wire: 3 * time.Millisecond},
		{wire: 3 * time.Millisecond, markLate: true},
		{wire: 0},
	} {
		t.Run(fmt.Sprintf("wire=%v mark-late=%v", sc.wire, sc.markLate), func(t *testing.T) {
			mem := crawlStrictHost(t, newMemCrawler(t), sc, pages)
			sh := crawlStrictHost(t, newSharedCrawler(t, pages), sc, pages)
			for _, r := range []struct {
				name string
				r    strictResult
			}{{"one process", mem}, {"3 workers", sh}} {
				t.Logf("%s: %d pages in %v, %d refused, %d inside a window; burst %v, upper bound at refusal %d, lower bound %v; estimate %.3f, bounds [%.3f, %.3f]",
					r.name, r.r.ok, r.r.lastOK, r.r.refused, r.r.inside, r.r.burst, r.r.hiAt, r.r.loSeen, r.r.st.RateEstimate, r.r.st.RateGapLo, r.r.st.RateGapHi)
			}
			if mem.burst != 1 || mem.hiAt != 2 || !mem.loSeen || mem.inside != 0 {
				t.Fatalf("the in-memory reference run is off: %+v", mem)
			}
			if sh.burst != 1 {
				t.Errorf("burst %v at the first refusal, want 1 (robots.txt left out)", sh.burst)
			}
			if sh.hiAt != 2 {
				t.Errorf("the first upper gap bound came at refusal %d, want 2", sh.hiAt)
			}
			if !sh.loSeen {
				t.Error("no lower gap bound was ever set")
			}
			if est := sh.st.RateEstimate; est < 0.45 || est > 0.55 {
				t.Errorf("estimate %.3f, want within 10%% of the limit 0.5", est)
			}
			if sh.inside != 0 {
				t.Errorf("%d requests inside a Retry-After window", sh.inside)
			}
			if sh.refused > mem.refused+1 {
				t.Errorf("%d refusals, want at most one more than one process's %d", sh.refused, mem.refused)
			}
			if sh.lastOK > mem.lastOK*103/100 {
				t.Errorf("last page at %v, over 3%% later than one process's %v", sh.lastOK, mem.lastOK)
			}
		})
	}
}
