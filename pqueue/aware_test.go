package pqueue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newAware(t testing.TB, g pqueue.Gate) *pqueue.ThrottlingAware {
	t.Helper()
	q, err := pqueue.NewThrottlingAware(pqueue.NewMemoryStore(), g, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return q
}

// sc builds scopes from names, with "name=amount" for quota amounts.
func sc(names ...string) throttling.Scopes {
	var out throttling.Scopes
	for _, n := range names {
		var amt float64
		if name, a, ok := strings.Cut(n, "="); ok {
			n = name
			fmt.Sscanf(a, "%g", &amt)
		}
		out = throttling.AddScope(out, n, amt)
	}
	return out
}

func push(t testing.TB, q pqueue.PriorityQueue, now time.Time, path string, prio int, scopes throttling.Scopes) {
	t.Helper()
	r := spider.MustRequest("https://example.com/"+path, nil)
	if _, err := q.Push(context.Background(), now, r, scopes, prio); err != nil {
		t.Fatal(err)
	}
}

func pop(t testing.TB, q pqueue.PriorityQueue, now time.Time) (string, time.Duration, *pqueue.Popped) {
	t.Helper()
	p, w, err := q.Pop(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		return "", w, nil
	}
	if !p.Admitted || !p.SentAt.Equal(now) {
		t.Fatalf("popped %s not admitted at now (%v, %v)", p.Req.URL, p.Admitted, p.SentAt)
	}
	return strings.TrimPrefix(p.Req.URL.Path, "/"), w, p
}

func TestAwareOrder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(g *fakeGate)
		push  func(t *testing.T, q pqueue.PriorityQueue)
		want  []string
	}{
		{
			name: "priority first among ready",
			push: func(t *testing.T, q pqueue.PriorityQueue) {
				push(t, q, t0, "a0", 0, sc("a"))
				push(t, q, t0, "b5", 5, sc("b"))
				push(t, q, t0, "a9", 9, sc("a"))
			},
			want: []string{"a9", "b5", "a0"},
		},
		{
			name: "FIFO within a scope",
			push: func(t *testing.T, q pqueue.PriorityQueue) {
				for i := range 4 {
					push(t, q, t0, fmt.Sprint("a", i), 0, sc("a"))
				}
			},
			want: []string{"a0", "a1", "a2", "a3"},
		},
		{
			name: "round-robin across scopes of equal priority",
			push: func(t *testing.T, q pqueue.PriorityQueue) {
				for i := range 3 {
					push(t, q, t0, fmt.Sprint("a", i), 0, sc("a"))
				}
				for i := range 3 {
					push(t, q, t0, fmt.Sprint("b", i), 0, sc("b"))
				}
				push(t, q, t0, "c0", 0, sc("c"))
			},
			want: []string{"a0", "b0", "c0", "a1", "b1", "a2", "b2"},
		},
		{
			name:  "throttled scope does not block others (no head-of-line blocking)",
			setup: func(g *fakeGate) { g.block("slow", t0.Add(time.Hour)) },
			push: func(t *testing.T, q pqueue.PriorityQueue) {
				for i := range 3 {
					push(t, q, t0, fmt.Sprint("slow", i), 100, sc("slow"))
				}
				push(t, q, t0, "fast0", 0, sc("fast"))
				push(t, q, t0, "fast1", 0, sc("fast"))
			},
			want: []string{"fast0", "fast1"},
		},
		{
			name:  "multi-scope request needs every scope",
			setup: func(g *fakeGate) { g.block("ip", t0.Add(time.Hour)) },
			push: func(t *testing.T, q pqueue.PriorityQueue) {
				push(t, q, t0, "both", 10, sc("host", "ip"))
				push(t, q, t0, "host", 0, sc("host"))
			},
			want: []string{"host"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGate()
			if tc.setup != nil {
				tc.setup(g)
			}
			q := newAware(t, g)
			tc.push(t, q)
			var got []string
			for {
				p, _, _ := pop(t, q, t0)
				if p == "" {
					break
				}
				got = append(got, p)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAwareQuotaShareBreaksTies(t *testing.T) {
	g := newFakeGate()
	g.scope("api").share = 0.01 // each unit is 1% of what is left
	q := newAware(t, quotaGate{g})
	push(t, q, t0, "small", 0, sc("api=1", "small"))
	push(t, q, t0, "big", 0, sc("api=50", "big"))
	push(t, q, t0, "urgent", 1, sc("api=1", "urgent"))
	var got []string
	for {
		p, _, _ := pop(t, q, t0)
		if p == "" {
			break
		}
		got = append(got, p)
	}
	if want := "[urgent big small]"; fmt.Sprint(got) != want {
		t.Fatalf("order = %v, want %v (priority, then larger quota share)", got, want)
	}
}

func TestAwareWake(t *testing.T) {
	g := newFakeGate()
	g.set("d", 0, 2*time.Second)
	g.set("c", 1, 0)
	q := newAware(t, g)
	push(t, q, t0, "d0", 0, sc("d"))
	push(t, q, t0, "d1", 0, sc("d"))
	push(t, q, t0, "c0", 0, sc("c"))
	push(t, q, t0, "c1", 0, sc("c"))

	first, _, _ := pop(t, q, t0)
	second, _, cp := pop(t, q, t0)
	if first == "" || second == "" {
		t.Fatalf("both scopes ready at start: got %q %q", first, second)
	}
	if cp.Scopes[0].Name != "c" {
		_, _, cp = pop(t, q, t0) // order between d and c is round-robin; find c's
	}
	now := t0.Add(500 * time.Millisecond)
	if p, w, _ := pop(t, q, now); p != "" || w != 1500*time.Millisecond {
		t.Fatalf("Pop = %q, wake %v; want nothing until d's delay ends in 1.5s", p, w)
	}
	// c is blocked on concurrency only: once d is drained, wake is 0.
	now = t0.Add(2 * time.Second)
	if p, _, _ := pop(t, q, now); p != "d1" {
		t.Fatalf("Pop at delay end = %q, want d1", p)
	}
	if p, w, _ := pop(t, q, now); p != "" || w != 0 {
		t.Fatalf("Pop = %q, wake %v; want nothing and 0 (until a slot frees)", p, w)
	}
	g.done(cp.Scopes)
	if p, _, _ := pop(t, q, now); p != "c1" {
		t.Fatalf("Pop after c's slot freed = %q, want c1", p)
	}
}

func TestAwareBackoffReportedByWatch(t *testing.T) {
	g := newFakeGate()
	q := newAware(t, g)
	push(t, q, t0, "a0", 0, sc("a"))
	push(t, q, t0, "a1", 0, sc("a"))
	g.block("a", t0.Add(10*time.Second))
	if p, w, _ := pop(t, q, t0); p != "" || w != 10*time.Second {
		t.Fatalf("Pop = %q, wake %v; want nothing for 10s", p, w)
	}
	g.block("a", t0.Add(30*time.Second)) // the backoff grows
	if p, w, _ := pop(t, q, t0.Add(10*time.Second)); p != "" || w != 20*time.Second {
		t.Fatalf("Pop = %q, wake %v; want the new backoff (20s more)", p, w)
	}
	g.block("a", t0.Add(15*time.Second)) // and shrinks (e.g. a config change)
	if p, w, _ := pop(t, q, t0.Add(11*time.Second)); p != "" || w != 4*time.Second {
		t.Fatalf("Pop = %q, wake %v; want 4s", p, w)
	}
	if p, _, _ := pop(t, q, t0.Add(15*time.Second)); p != "a0" {
		t.Fatalf("Pop = %q, want a0", p)
	}
}

func TestAwareThrottlingDelay(t *testing.T) {
	g := newFakeGate()
	q := newAware(t, g)
	r := spider.MustRequest("https://example.com/later", nil).Set(throttling.MetaDelay, 5.0)
	if _, err := q.Push(context.Background(), t0, r, sc("a"), 100); err != nil {
		t.Fatal(err)
	}
	push(t, q, t0, "now", 0, sc("a"))
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}
	if p, _, _ := pop(t, q, t0); p != "now" {
		t.Fatalf("Pop = %q, want now (the delayed request waits)", p)
	}
	if p, w, _ := pop(t, q, t0.Add(time.Second)); p != "" || w != 4*time.Second {
		t.Fatalf("Pop = %q, wake %v; want nothing for 4s", p, w)
	}
	p, _, popped := pop(t, q, t0.Add(5*time.Second))
	if p != "later" {
		t.Fatalf("Pop = %q, want later", p)
	}
	if !throttling.DelayTaken(popped.Req) || throttling.TakeRequestDelay(popped.Req) != 0 {
		t.Fatal("throttling_delay not marked taken after the request was admitted: the engine or a retry would wait again")
	}

	bad := spider.MustRequest("https://example.com/bad", nil).Set(throttling.MetaDelay, -1)
	if _, err := q.Push(context.Background(), t0, bad, sc("a"), 0); err == nil || !strings.Contains(err.Error(), "throttling_delay") {
		t.Fatalf("negative throttling_delay: err = %v, want an error naming the meta key", err)
	}
}

func TestAwareAckNack(t *testing.T) {
	g := newFakeGate()
	q := newAware(t, g)
	push(t, q, t0, "a0", 0, sc("a"))
	push(t, q, t0, "a1", 0, sc("a"))
	_, _, p := pop(t, q, t0)
	g.done(p.Scopes)
	if err := q.Nack(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 2 {
		t.Fatalf("Len after Nack = %d, want 2", q.Len())
	}
	got, _, p2 := pop(t, q, t0)
	if got != "a0" || p2.ID != p.ID {
		t.Fatalf("after Nack popped %q (id %d), want a0 again (id %d)", got, p2.ID, p.ID)
	}
	if err := q.Ack(context.Background(), p2.ID); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(context.Background(), p2.ID); err == nil {
		t.Fatal("second Ack succeeded")
	}
}

// TestAwareMultiScopeNotStarved: a request needing scopes h and c, each
// with concurrency 1 and a stream of single-scope requests, is sent even
// though h and c never free up at the same moment.
func TestAwareMultiScopeNotStarved(t *testing.T) {
	starveTest(t, nil)
}

// TestAwareHoldReleasedOnDelay: once the scope a holder waits for backs
// off, the scopes it holds serve others again.
func TestAwareHoldReleasedOnDelay(t *testing.T) {
	var g *fakeGate
	starveTest(t, func(inflight map[string]*pqueue.Popped, drain func()) bool {
		hBusy := false
		for name := range inflight {
			hBusy = hBusy || strings.HasPrefix(name, "h")
		}
		if hBusy {
			return false // not held yet
		}
		// h is idle: held for "both". Back c off, complete its request.
		g = lastGate
		g.block("c", t0.Add(time.Hour))
		for name, p := range inflight {
			g.done(p.Scopes)
			delete(inflight, name)
		}
		drain()
		for name := range inflight {
			if strings.HasPrefix(name, "h") {
				return true
			}
		}
		t.Fatalf("h stays held while the request holding it waits for a backoff; in flight: %v", keys(inflight))
		return true
	})
	if g == nil {
		t.Fatal("the hold never happened")
	}
}

var lastGate *fakeGate

func starveTest(t *testing.T, stalled func(map[string]*pqueue.Popped, func()) bool) {
	g := newFakeGate()
	lastGate = g
	g.set("h", 1, 0)
	g.set("c", 1, 0)
	q := newAware(t, g)
	push(t, q, t0, "h-first", 0, sc("h"))
	push(t, q, t0, "c-first", 0, sc("c"))
	push(t, q, t0, "both", 0, sc("c", "h"))
	for i := range 50 {
		push(t, q, t0, fmt.Sprint("h", i), 0, sc("h"))
		push(t, q, t0, fmt.Sprint("c", i), 0, sc("c"))
	}
	inflight := map[string]*pqueue.Popped{}
	drain := func() {
		for {
			name, _, p := pop(t, q, t0)
			if name == "" {
				return
			}
			inflight[name] = p
		}
	}
	drain()
	// Complete h's and c's requests alternately, one at a time, so the two
	// scopes are never free together.
	for round := 0; round < 40; round++ {
		if _, ok := inflight["both"]; ok {
			return
		}
		if stalled != nil && stalled(inflight, drain) {
			return
		}
		for name, p := range inflight {
			if (round%2 == 0) == strings.HasPrefix(name, "h") {
				g.done(p.Scopes)
				delete(inflight, name)
				break
			}
		}
		drain()
	}
	t.Fatalf("the multi-scope request was starved; in flight: %v", keys(inflight))
}

func keys(m map[string]*pqueue.Popped) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAwareMatchesBruteForce drives the queue with random pushes, pops,
// completions and backoffs over single-scope requests and checks every
// answer against a scan of all queued requests: a popped request is ready
// and has the highest priority among ready ones; when nothing is popped,
// nothing is ready and the wake time is the earliest moment one could be.
func TestAwareMatchesBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	g := newFakeGate()
	const nScopes = 12
	for i := range nScopes {
		g.set(fmt.Sprint("s", i), rnd.IntN(3), time.Duration(rnd.IntN(3))*time.Second)
	}
	q := newAware(t, g)
	type queued struct {
		prio  int
		scope string
	}
	pending := map[string]queued{}
	var inflight []*pqueue.Popped
	now := t0
	for step := range 4000 {
		switch op := rnd.IntN(10); {
		case op < 4:
			s := fmt.Sprint("s", rnd.IntN(nScopes))
			name := fmt.Sprint("r", step)
			prio := rnd.IntN(3)
			push(t, q, now, name, prio, sc(s))
			pending[name] = queued{prio, s}
		case op < 7:
			best := -1
			for _, p := range pending {
				if g.ready(now, sc(p.scope)) && p.prio > best {
					best = p.prio
				}
			}
			name, wake, p := pop(t, q, now)
			if name == "" {
				if best >= 0 {
					t.Fatalf("step %d: nothing popped but a request of priority %d is ready", step, best)
				}
				if wake < 0 {
					t.Fatalf("negative wake %v", wake)
				}
				break
			}
			got := pending[name]
			if got.prio != best {
				t.Fatalf("step %d: popped priority %d, best ready is %d", step, got.prio, best)
			}
			delete(pending, name)
			inflight = append(inflight, p)
		case op < 9:
			if len(inflight) > 0 {
				i := rnd.IntN(len(inflight))
				g.done(inflight[i].Scopes)
				inflight = append(inflight[:i], inflight[i+1:]...)
			}
			now = now.Add(time.Duration(rnd.IntN(800)) * time.Millisecond)
		default:
			g.block(fmt.Sprint("s", rnd.IntN(nScopes)), now.Add(time.Duration(rnd.IntN(5))*time.Second))
		}
	}
	// Drain: with completions and time, everything comes out.
	for i := 0; len(pending) > 0 && i < 100000; i++ {
		for _, p := range inflight {
			g.done(p.Scopes)
		}
		inflight = inflight[:0]
		name, wake, p := pop(t, q, now)
		if name == "" {
			now = now.Add(max(wake, time.Millisecond))
			continue
		}
		delete(pending, name)
		inflight = append(inflight, p)
	}
	if len(pending) > 0 || q.Len() != 0 {
		t.Fatalf("%d requests never came out (Len %d)", len(pending), q.Len())
	}
}

func TestAwareRequestWithoutScopes(t *testing.T) {
	g := newFakeGate()
	g.block("a", t0.Add(time.Hour))
	q := newAware(t, g)
	push(t, q, t0, "a", 0, sc("a"))
	push(t, q, t0, "cached", 0, nil)
	if p, _, _ := pop(t, q, t0); p != "cached" {
		t.Fatalf("Pop = %q, want the scope-less request", p)
	}
}

func TestAwareChanged(t *testing.T) {
	g := newFakeGate()
	g.set("a", 1, 0)
	q := newAware(t, g)
	push(t, q, t0, "a0", 0, sc("a"))
	push(t, q, t0, "a1", 0, sc("a"))
	push(t, q, t0, "b0", 0, sc("b"))
	_, _, p := pop(t, q, t0)
	for {
		if name, _, _ := pop(t, q, t0); name == "" {
			break
		}
	}
	select { // drain what the sends signalled
	case <-q.Changed():
	default:
	}
	g.done(throttling.Scopes{{Name: "b"}}) // nobody waits on b
	select {
	case <-q.Changed():
		t.Fatal("Changed fired for a scope no request waits on")
	default:
	}
	g.done(p.Scopes) // a's slot frees: a1 may go
	select {
	case <-q.Changed():
	default:
		t.Fatal("Changed did not fire when a blocking scope freed a slot")
	}
	if name, _, _ := pop(t, q, t0); name != "a1" {
		t.Fatalf("Pop = %q, want a1", name)
	}
}

// A change that a Pop has looked at does not wake the caller again: the
// signal it left is dropped when Pop finds nothing more to send.
func TestAwareChangedSeenByPop(t *testing.T) {
	g := newFakeGate()
	g.set("a", 1, 0)
	q := newAware(t, g)
	for _, n := range []string{"a0", "a1", "a2"} {
		push(t, q, t0, n, 0, sc("a"))
	}
	_, _, p := pop(t, q, t0)
	if name, _, _ := pop(t, q, t0); name != "" {
		t.Fatalf("Pop = %q with a's slot taken, want nothing", name)
	}
	g.done(p.Scopes) // signals: a1 waits on a
	if name, _, _ := pop(t, q, t0); name != "a1" {
		t.Fatalf("Pop = %q, want a1", name)
	}
	if name, _, _ := pop(t, q, t0); name != "" {
		t.Fatalf("Pop = %q with a's slot taken, want nothing", name)
	}
	select {
	case <-q.Changed():
		t.Fatal("Changed still pending for a change the last Pop had seen")
	default:
	}
}

// TestAwareRandomMultiScope drives the queue with random multi-scope
// requests, completions, time and backoffs, checking the index after every
// operation, that every popped request was ready (fakeGate.Sent panics
// otherwise), and that everything is eventually sent: holds never
// deadlock.
func TestAwareRandomMultiScope(t *testing.T) {
	seeds := 3
	if s := os.Getenv("PQUEUE_SEEDS"); s != "" {
		fmt.Sscan(s, &seeds)
	}
	for seed := range uint64(seeds) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		g := newFakeGate()
		const nScopes = 8
		for i := range nScopes {
			g.set(fmt.Sprint("s", i), 1+rnd.IntN(2), time.Duration(rnd.IntN(2))*time.Second)
		}
		q := newAware(t, g)
		check := func(step int) {
			if err := q.CheckInvariants(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		pending := 0
		var inflight []*pqueue.Popped
		now := t0
		for step := range 3000 {
			switch op := rnd.IntN(10); {
			case op < 4:
				var names []string
				for range 1 + rnd.IntN(3) {
					names = append(names, fmt.Sprint("s", rnd.IntN(nScopes)))
				}
				push(t, q, now, fmt.Sprint("r", step), rnd.IntN(2), sc(names...))
				pending++
			case op < 7:
				if name, _, p := pop(t, q, now); name != "" {
					pending--
					inflight = append(inflight, p)
				}
			case op < 9:
				if len(inflight) > 0 {
					i := rnd.IntN(len(inflight))
					g.done(inflight[i].Scopes)
					inflight = append(inflight[:i], inflight[i+1:]...)
				}
				now = now.Add(time.Duration(rnd.IntN(700)) * time.Millisecond)
			default:
				g.block(fmt.Sprint("s", rnd.IntN(nScopes)), now.Add(time.Duration(rnd.IntN(4))*time.Second))
			}
			check(step)
		}
		for i := 0; pending > 0; i++ {
			if i > 100000 {
				t.Fatalf("seed %d: %d requests never came out", seed, pending)
			}
			if len(inflight) > 0 && rnd.IntN(2) == 0 {
				g.done(inflight[0].Scopes)
				inflight = inflight[1:]
			}
			name, wake, p := pop(t, q, now)
			check(-i)
			if name == "" {
				if len(inflight) == 0 && wake == 0 {
					t.Fatalf("seed %d: nothing in flight, nothing ready, and no wake time: stuck with %d queued", seed, pending)
				}
				now = now.Add(max(wake, time.Millisecond))
				continue
			}
			pending--
			inflight = append(inflight, p)
		}
	}
}

// The throttler is what the queues are built for.
var (
	_ pqueue.Gate        = (*throttling.Throttler)(nil)
	_ pqueue.QuotaSharer = (*throttling.Throttler)(nil)
)
