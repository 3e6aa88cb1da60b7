package redisq_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// fixedGates gives every scope the parameters of params (or def).
type fixedGates struct {
	mu        sync.Mutex
	params    map[string]throttling.GateParams
	def       throttling.GateParams
	store     *redisq.Store
	refreshed []string
}

func (g *fixedGates) InitialParams(scope string) throttling.GateParams {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.params[scope]; ok {
		return p
	}
	return g.def
}

func (g *fixedGates) RefreshScope(ctx context.Context, scope string) error {
	g.mu.Lock()
	g.refreshed = append(g.refreshed, scope)
	g.mu.Unlock()
	p := g.InitialParams(scope)
	p.ValidUntil = time.Time{}
	return g.store.SetGate(ctx, scope, p)
}

// world is one job's Redis state seen by several workers on a fake clock
// (Redis's clock is the job's testclock key; the local clocks are fake too
// and equal to it).
type world struct {
	t     *testing.T
	c     redis.UniversalClient
	l     *redisq.Layout
	clk   *clock.Fake
	gates *fixedGates
	lease time.Duration
}

func newWorld(t *testing.T, shards int, def throttling.GateParams, params map[string]throttling.GateParams) *world {
	w := &world{t: t, c: dial(t), l: layout(t, shards), clk: clock.NewFake(t0), lease: 30 * time.Second}
	w.gates = &fixedGates{params: params, def: def}
	w.gates.store = newStore(t, w.c, w.l, "gates")
	w.setClock(t0)
	return w
}

// setClock sets Redis's clock (every shard) and the local one.
func (w *world) setClock(at time.Time) {
	w.t.Helper()
	ms := strconv.FormatFloat(float64(at.UnixMicro())/1000, 'f', 3, 64)
	for k := range w.l.Shards() {
		if err := w.c.Set(context.Background(), w.l.ShardKey(k, "testclock"), ms, 0).Err(); err != nil {
			w.t.Fatal(err)
		}
	}
	if d := at.Sub(w.clk.Now()); d > 0 {
		w.clk.Advance(d)
	}
}

func (w *world) advance(d time.Duration) { w.setClock(w.clk.Now().Add(d)) }

// worker opens a frontier for owner.
func (w *world) worker(owner string, o redisq.FrontierOptions) *redisq.Frontier {
	w.t.Helper()
	s, err := redisq.NewStore(redisq.Options{Client: w.c, Layout: w.l, Codec: codec, Owner: owner, LeaseTTL: w.lease})
	if err != nil {
		w.t.Fatal(err)
	}
	o.Store, o.Gates, o.Clock = s, w.gates, w.clk
	f, err := redisq.NewFrontier(o)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := f.Open(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

func push(t *testing.T, f *redisq.Frontier, url string) {
	t.Helper()
	req := spider.MustRequest(url, nil)
	sc := throttling.Scopes{{Name: req.Host()}}
	if err := f.PushUnique(context.Background(), time.Now(), req, sc, 0, dupefilter.Of(req), true); err != nil {
		t.Fatal(err)
	}
}

func flush(t *testing.T, fs ...*redisq.Frontier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, f := range fs {
		if err := f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func pop(t *testing.T, f *redisq.Frontier, now time.Time) (*pqueue.Popped, time.Duration) {
	t.Helper()
	p, w, err := f.Pop(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	return p, w
}

// popWhenDue advances the clock to 1 ms before d from now, where f must
// pop nothing, then to d, where it must pop a request, which it returns;
// what names the wait (failure messages).
func popWhenDue(t *testing.T, w *world, f *redisq.Frontier, d time.Duration, what string) *pqueue.Popped {
	t.Helper()
	w.advance(d - time.Millisecond)
	if q, _ := pop(t, f, w.clk.Now().Add(time.Hour)); q != nil {
		t.Fatalf("sent 1 ms before the end of %s", what)
	}
	w.advance(time.Millisecond)
	q, _ := pop(t, f, w.clk.Now().Add(time.Hour))
	if q == nil {
		t.Fatalf("not sent at the end of %s", what)
	}
	return q
}

// popReady pops until nothing is ready at now (hints are reset by the
// caller's flushes and wake-ups).
func popAll(t *testing.T, f *redisq.Frontier, now time.Time) []*pqueue.Popped {
	t.Helper()
	var out []*pqueue.Popped
	for {
		p, _ := pop(t, f, now)
		if p == nil {
			return out
		}
		out = append(out, p)
	}
}

func TestFrontierConcurrencyAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{Concurrency: 2}, nil)
	a, b := w.worker("a", redisq.FrontierOptions{}), w.worker("b", redisq.FrontierOptions{})
	for i := range 6 {
		push(t, a, fmt.Sprintf("http://h.test/%d", i))
	}
	flush(t, a)
	got := append(popAll(t, a, w.clk.Now()), popAll(t, b, w.clk.Now())...)
	if len(got) != 2 {
		t.Fatalf("two workers popped %d requests of a scope with concurrency 2", len(got))
	}
	if !got[0].Admitted || got[0].SentAt.IsZero() {
		t.Fatalf("popped job not admitted: %+v", got[0])
	}
	// b waits for a slot: a's acknowledgement frees one and wakes b.
	if err := a.Ack(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	flush(t, a)
	select {
	case <-b.Changed():
	case <-time.After(5 * time.Second):
		t.Fatal("b was not woken when a freed a slot it waits for")
	}
	if p, _ := pop(t, b, w.clk.Now()); p == nil {
		t.Fatal("b got nothing after a slot freed")
	}
	if p, _ := pop(t, b, w.clk.Now()); p != nil {
		t.Fatal("b got a third request in flight")
	}
}

func TestFrontierDelayUsesRedisClock(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{Delay: 2 * time.Second}, nil)
	a, b := w.worker("a", redisq.FrontierOptions{}), w.worker("b", redisq.FrontierOptions{})
	for i := range 3 {
		push(t, a, fmt.Sprintf("http://h.test/%d", i))
	}
	flush(t, a)
	if p, _ := pop(t, a, w.clk.Now()); p == nil {
		t.Fatal("first request not ready")
	}
	p, wait := pop(t, b, w.clk.Now())
	if p != nil {
		t.Fatal("b sent inside the delay a's send started")
	}
	if wait > 2*time.Second || wait <= 0 {
		t.Fatalf("b told to wait %v, want at most the 2s delay (the poll interval caps it)", wait)
	}
	w.advance(1999 * time.Millisecond)
	if p, _ := pop(t, b, w.clk.Now().Add(time.Hour)); p != nil {
		t.Fatal("sent 1 ms before the delay ended")
	}
	w.advance(time.Millisecond)
	if p, _ := pop(t, b, w.clk.Now().Add(time.Hour)); p == nil {
		t.Fatal("not sent when the delay ended")
	}
}

func TestFrontierDedupeAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	a, b := w.worker("a", redisq.FrontierOptions{}), w.worker("b", redisq.FrontierOptions{})
	var mu sync.Mutex
	dups := 0
	count := func(req *spider.Request, dup bool) {
		mu.Lock()
		if dup {
			dups++
		}
		mu.Unlock()
	}
	a.OnPushed(count)
	b.OnPushed(count)
	push(t, a, "http://h.test/x?b=1&a=2")
	push(t, b, "http://H.test:80/x?a=2&b=1#frag")
	flush(t, a, b)
	if got := len(popAll(t, a, w.clk.Now())); got != 1 || dups != 1 {
		t.Fatalf("stored %d, duplicates %d; want 1 and 1", got, dups)
	}
}

func TestFrontierLeaseExpiryGivesBackRequestAndSlot(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{Concurrency: 1}, nil)
	a, b := w.worker("a", redisq.FrontierOptions{}), w.worker("b", redisq.FrontierOptions{})
	push(t, a, "http://h.test/1")
	push(t, a, "http://h.test/2")
	flush(t, a)
	held, _ := pop(t, a, w.clk.Now())
	if held == nil {
		t.Fatal("nothing popped")
	}
	// a dies: it renews nothing from now on (its renewal runs every 10 s
	// of real time; the lease expires in Redis time).
	if p, _ := pop(t, b, w.clk.Now()); p != nil {
		t.Fatal("b got a request while a holds the scope's only slot")
	}
	w.advance(w.lease + time.Millisecond)
	got := popAll(t, b, w.clk.Now().Add(time.Hour))
	if len(got) != 1 || got[0].ID != held.ID {
		t.Fatalf("after the lease expired b got %v; want a's request %d back first (the slot it held freed)", ids(got), held.ID)
	}
	c, err := b.Store().Counts(context.Background())
	if err != nil || c.Waiting != 1 || c.Reserved != 1 {
		t.Fatalf("counts %+v %v; want 1 waiting, 1 reserved", c, err)
	}
}

func ids(ps []*pqueue.Popped) []pqueue.ID {
	out := make([]pqueue.ID, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func TestFrontierCrossShardScopesRefused(t *testing.T) {
	w := newWorld(t, 8, throttling.GateParams{}, nil)
	a := w.worker("a", redisq.FrontierOptions{})
	// find two scopes in different shards
	var x, y string
	for i := 0; x == "" || y == ""; i++ {
		n := fmt.Sprintf("s%d.test", i)
		switch {
		case x == "":
			x = n
		case w.l.ShardOf(n) != w.l.ShardOf(x):
			y = n
		}
	}
	req := spider.MustRequest("http://"+x+"/", nil)
	err := a.PushUnique(context.Background(), time.Now(), req, throttling.Scopes{{Name: x}, {Name: y}}, 0, dupefilter.Of(req), true)
	if err == nil {
		t.Fatal("a request with scopes in two shards was accepted")
	}
	// a common {tag} puts them together
	sc := throttling.Scopes{{Name: "api{" + x + "}"}, {Name: x}}
	if _, err := w.l.ShardOfScopes(sc); err != nil {
		t.Fatalf("scopes sharing a tag: %v", err)
	}
}

func TestFrontierStartRate(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	a := w.worker("a", redisq.FrontierOptions{StartRate: 2, StartBurst: 1})
	b := w.worker("b", redisq.FrontierOptions{StartRate: 2, StartBurst: 1})
	for i := range 10 {
		push(t, a, fmt.Sprintf("http://h%d.test/", i))
	}
	flush(t, a)
	n := len(popAll(t, a, w.clk.Now())) + len(popAll(t, b, w.clk.Now()))
	if n != 1 {
		t.Fatalf("%d starts at once with MAX_STARTS_BURST 1 over two workers", n)
	}
	w.advance(500 * time.Millisecond)
	n = len(popAll(t, b, w.clk.Now().Add(time.Hour))) + len(popAll(t, a, w.clk.Now().Add(time.Hour)))
	if n != 1 {
		t.Fatalf("%d starts after 0.5 s at 2/s, want 1", n)
	}
}

func TestFrontierStaleGateRefreshed(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{ValidUntil: t0.Add(time.Second)}, nil)
	a := w.worker("a", redisq.FrontierOptions{})
	push(t, a, "http://h.test/1")
	push(t, a, "http://h.test/2")
	flush(t, a)
	if p, _ := pop(t, a, w.clk.Now()); p == nil {
		t.Fatal("nothing popped while the gate is valid")
	}
	w.advance(time.Second)
	if p, _ := pop(t, a, w.clk.Now().Add(time.Hour)); p == nil {
		t.Fatal("nothing popped after the gate went stale and was refreshed")
	}
	if len(w.gates.refreshed) != 1 || w.gates.refreshed[0] != "h.test" {
		t.Fatalf("refreshed %v, want [h.test]", w.gates.refreshed)
	}
}
