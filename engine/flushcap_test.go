package engine

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
)

// flushCounting is a scheduler whose writes are grouped (a Flusher, as
// with JOBDIR): it counts the jobs handed out whose acknowledgement is not
// written yet (Done records it, Flush writes it), and the most there ever
// were when a job was handed out.
type flushCounting struct {
	scheduler.Scheduler
	mu               sync.Mutex
	out, unwritten   int // handed out and not acknowledged; acknowledged, not written
	peak, flushes    int
	handedOut, acked int
}

func (s *flushCounting) Next(ctx context.Context, now time.Time) (*scheduler.Job, time.Duration, error) {
	job, w, err := s.Scheduler.Next(ctx, now)
	if job != nil {
		s.mu.Lock()
		s.out++
		s.handedOut++
		s.peak = max(s.peak, s.out+s.unwritten)
		s.mu.Unlock()
	}
	return job, w, err
}

func (s *flushCounting) Done(ctx context.Context, job *scheduler.Job) error {
	s.mu.Lock()
	s.out--
	s.unwritten++
	s.acked++
	s.mu.Unlock()
	return s.Scheduler.Done(ctx, job)
}

func (s *flushCounting) Flush(context.Context) error {
	s.mu.Lock()
	s.unwritten = 0
	s.flushes++
	s.mu.Unlock()
	return nil
}

// heldSpider's callbacks wait until held of them are waiting together.
type heldSpider struct {
	base    string
	pages   int
	held    int32
	waiting atomic.Int32
	release chan struct{}
}

func (*heldSpider) Name() string { return "held" }

func (s *heldSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for i := range s.pages {
			if !yield(spider.NewRequest(fmt.Sprintf("%s/p/%d", s.base, i), nil)) {
				return
			}
		}
	}
}

func (s *heldSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if s.waiting.Add(1) == s.held {
		close(s.release)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// The jobs handed out plus the acknowledgements not yet written never
// exceed the cap on unfinished jobs (2 x CONCURRENT_REQUESTS + 16), so a
// crash loses no more acknowledgements than that: the loop writes a turn's
// acknowledgements before it starts new jobs. Callbacks held until the cap
// is reached, then released together, finish many jobs in one turn; a loop
// that started new jobs before writing them (an experiment to overlap the
// write with downloads) went to 22 of 20 here unless it counted them.
func TestUnwrittenAcknowledgementsCountAgainstTheCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>page</body></html>")
	}))
	defer srv.Close()
	// No per-host limit, so that no pacing (the rate controller's start
	// ramp) spaces the starts out: a new job may start in the very turn
	// that acknowledged others.
	const concurrency = 2
	maxActive := 2*concurrency + 16
	sp := &heldSpider{base: srv.URL, pages: 3 * maxActive, held: int32(maxActive), release: make(chan struct{})}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN", 0, "CONCURRENT_REQUESTS_PER_IP", 0, "DOWNLOAD_DELAY", 0.0), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fc := &flushCounting{Scheduler: e.sched}
	e.sched = fc
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if fc.acked != sp.pages || fc.handedOut != sp.pages {
		t.Fatalf("handed out %d, acknowledged %d, want %d", fc.handedOut, fc.acked, sp.pages)
	}
	if fc.peak > maxActive {
		t.Errorf("%d jobs were out or unwritten when a job started, above the cap of %d", fc.peak, maxActive)
	}
	if fc.peak < maxActive {
		t.Errorf("the test never reached the cap (peak %d of %d): it tests nothing", fc.peak, maxActive)
	}
	t.Logf("peak %d of %d, %d flushes", fc.peak, maxActive, fc.flushes)
}
