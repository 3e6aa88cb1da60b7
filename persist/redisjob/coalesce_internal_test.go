package redisjob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/recrawl"
)

// pipelineGate is a go-redis hook that counts the pipelines of record
// reads and writes and holds the first one until release is closed.
type pipelineGate struct {
	pipelines, cmds atomic.Int64
	first           sync.Once
	release         chan struct{}
}

func (g *pipelineGate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, n, a string) (net.Conn, error) { return next(ctx, n, a) }
}

func (g *pipelineGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return next(ctx, cmd) }
}

func (g *pipelineGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || (cmds[0].Name() != "hget" && cmds[0].Name() != "hset") {
			return next(ctx, cmds) // a new connection's handshake
		}
		g.pipelines.Add(1)
		g.cmds.Add(int64(len(cmds)))
		g.first.Do(func() { <-g.release })
		return next(ctx, cmds)
	}
}

// gatedRecrawlStore is a record store on the shared test Redis, under a key
// of its own (deleted at the end of the test), whose client's first
// pipeline waits for the gate's release.
func gatedRecrawlStore(t *testing.T, name string) (*recrawlStore, *pipelineGate) {
	t.Helper()
	ctx := context.Background()
	c, err := redisq.Dial(ctx, redistest.Shared(t).URL(), redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gate := &pipelineGate{release: make(chan struct{})}
	c.AddHook(gate)
	key := fmt.Sprintf("%s-%p", name, gate)
	t.Cleanup(func() {
		c.Del(ctx, key)
		c.Close()
	})
	return &recrawlStore{c: c, q: &coalescer{c: c}, recs: key}, gate
}

// Record reads and writes made while a pipeline is in flight go together
// in the next one, each caller getting its own answer: n pages cost two
// round trips here, not 2n.
func TestRecrawlStoreCoalesces(t *testing.T) {
	ctx := context.Background()
	s, gate := gatedRecrawlStore(t, "coalesce-test")

	// The first call's pipeline is held; n more calls, made once it is,
	// queue behind it.
	const n = 40
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.Put(ctx, "k0", recordN(0)) }()
	waitUntil(t, "the first call's pipeline to be held", func() bool { return gate.pipelines.Load() == 1 })
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				errs <- s.Put(ctx, fmt.Sprint("k", i), recordN(i))
				return
			}
			_, found, err := s.Get(ctx, fmt.Sprint("missing", i))
			if err == nil && found {
				err = fmt.Errorf("Get(missing%d) found a record", i)
			}
			errs <- err
		}()
	}
	waitUntil(t, fmt.Sprint(n, " calls to queue"), func() bool {
		s.q.mu.Lock()
		defer s.q.mu.Unlock()
		return len(s.q.queue) == n
	})
	close(gate.release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p, cmds := gate.pipelines.Load(), gate.cmds.Load(); p != 2 || cmds != n+1 {
		t.Errorf("%d pipelines of %d commands in all, want 2 of %d", p, cmds, n+1)
	}
	// Each Put is in Redis, under its own key.
	for i := 0; i <= n; i += 2 {
		r, found, err := s.Get(ctx, fmt.Sprint("k", i))
		if err != nil || !found || r.Status != 200+i {
			t.Errorf("Get(k%d) = status %d, found %v, %v; want %d", i, r.Status, found, err, 200+i)
		}
	}
}

// A caller whose context ends stops waiting; the store stays usable.
func TestRecrawlStoreCanceled(t *testing.T) {
	ctx := context.Background()
	s, gate := gatedRecrawlStore(t, "coalesce-cancel")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Get(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a canceled context: %v, want context.Canceled", err)
	}
	close(gate.release)
	if err := s.Put(ctx, "a", recordN(1)); err != nil {
		t.Fatal(err)
	}
	if r, found, err := s.Get(ctx, "a"); err != nil || !found || r.Status != 201 {
		t.Fatalf("Get(a) = %d, %v, %v; want 201", r.Status, found, err)
	}
}

func recordN(i int) recrawl.Record {
	return recrawl.Record{URL: fmt.Sprint("http://127.0.0.1/", i), Status: 200 + i}
}

// waitUntil yields until cond holds, and fails the test if it does not
// within 10 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}
