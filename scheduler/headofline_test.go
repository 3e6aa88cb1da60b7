package scheduler_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Head-of-line blocking, end to end (issue 4, item 5), scaled down for CI:
// host S has a 0.2 s delay and 20 queued requests ahead of host F's 200
// requests (20 ms each, no delay), with 8 global slots. The spec's shape is
// 2 s, 100 and 2,000; what matters is that S's queue takes several times
// longer to drain than F's.
const (
	holSlowN     = 20
	holSlowDelay = 0.2
	holFastN     = 200
	holFastTime  = 20 * time.Millisecond
)

type holSpider struct {
	spider.Base
	fastHost string
	stop     func()
	start    time.Time
	fastDone atomic.Int64
	mu       sync.Mutex
	fastEnd  time.Duration
}

func (*holSpider) Name() string { return "hol" }

func (s *holSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if res.Request.Host() != s.fastHost {
		return nil
	}
	if s.fastDone.Add(1) == holFastN {
		s.mu.Lock()
		s.fastEnd = time.Since(s.start)
		s.mu.Unlock()
		s.stop() // S's remaining queue is not what we measure
	}
	return nil
}

// runHOL crawls F's requests (and S's when withSlow) and returns how long
// F took to finish, and the crawl's log.
func runHOL(t *testing.T, sched string, withSlow bool, slow, fast *httptest.Server) (time.Duration, string) {
	t.Helper()
	sHost, fHost := spider.MustRequest(slow.URL, nil).Host(), spider.MustRequest(fast.URL, nil).Host()
	s := settings.New()
	err := s.SetMap(map[string]any{
		"SCHEDULER":                       sched,
		"ROBOTSTXT_OBEY":                  false,
		"CONCURRENT_REQUESTS":             8,
		"DELAYED_REQUESTS_WARN_THRESHOLD": 6,
		"THROTTLING_SCOPES": map[string]any{
			sHost: map[string]any{"delay": holSlowDelay, "jitter": 0, "concurrency": 8},
			fHost: map[string]any{"delay": 0, "concurrency": 8},
		},
	}, settings.SourceCommandLine, "test")
	if err != nil {
		t.Fatal(err)
	}
	sp := &holSpider{fastHost: fHost}
	if withSlow {
		for i := range holSlowN {
			sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/s/%d", slow.URL, i))
		}
	}
	for i := range holFastN {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/f/%d", fast.URL, i))
	}
	var logs bytes.Buffer
	e, err := engine.New(sp, s, engine.Options{Log: zerolog.New(&logs).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	sp.stop = func() { e.Stop("fast_done") }
	sp.start = time.Now()
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := sp.fastDone.Load(); n != holFastN {
		t.Fatalf("%s: %d of %d fast responses", sched, n, holFastN)
	}
	return sp.fastEnd, logs.String()
}

func TestHeadOfLineBlocking(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three small crawls (about 5 s)")
	}
	page := func(d time.Duration) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>ok</body></html>")
		}
	}
	slow := httptest.NewServer(page(0))
	defer slow.Close()
	fast := httptest.NewServer(page(holFastTime))
	defer fast.Close()

	alone, _ := runHOL(t, scheduler.ThrottlingAware, false, slow, fast)
	aware, awareLog := runHOL(t, scheduler.ThrottlingAware, true, slow, fast)
	gated, gatedLog := runHOL(t, scheduler.EngineGated, true, slow, fast)
	ra, rg := aware.Seconds()/alone.Seconds(), gated.Seconds()/alone.Seconds()
	t.Logf("F alone %v; with S queued first: throttling-aware %v (%.2fx), engine-gated %v (%.2fx)", alone, aware, ra, gated, rg)

	// The issue asks for 1.25x; the margin absorbs a loaded CI machine.
	if ra > 1.6 {
		t.Errorf("throttling-aware: F took %.2fx its time alone, want at most about 1.25x", ra)
	}
	// Engine-gated, S's requests hold the slots while they wait: F cannot
	// start before most of S's queue is admitted, (20-8)*0.2 s = 2.4 s.
	if rg < 2.5 || rg < 1.8*ra {
		t.Errorf("engine-gated: F took %.2fx its time alone (throttling-aware %.2fx); the head-of-line slowdown does not show", rg, ra)
	}
	if !strings.Contains(gatedLog, "ThrottlingAwareScheduler") {
		t.Errorf("engine-gated: no DELAYED_REQUESTS_WARN_THRESHOLD warning suggesting the throttling-aware scheduler; log:\n%s", gatedLog)
	}
	if strings.Contains(awareLog, "held back") {
		t.Errorf("throttling-aware: delayed-requests warning logged, but no request waits in a slot; log:\n%s", awareLog)
	}
}
