package simsite

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A rate schedule changes the bucket's refill at the given times after
// the host's first request, keeping the tokens already in it.
func TestLimiterSchedule(t *testing.T) {
	const ms = time.Millisecond
	runSteps(t, LimitConfig{Rate: 10, Burst: 1, Schedule: []RateChange{{After: time.Second, Rate: 2}}}, []step{
		{at: 0, allowed: true},
		{at: 100 * ms, allowed: true},                   // 10/s: a token every 100 ms
		{at: 150 * ms, allowed: false, wait: 50 * ms},   // half a token
		{at: 1000 * ms, allowed: true},                  // full again (burst 1)
		{at: 1100 * ms, allowed: false, wait: 400 * ms}, // now 2/s: 0.2 of a token
		{at: 1500 * ms, allowed: true},                  // 500 ms at 2/s
	})
	l := newLimiter(LimitConfig{Rate: 10, Burst: 5, Schedule: []RateChange{{After: time.Second, Rate: 2}, {After: 2 * time.Second, Rate: 4}}})
	t0 := newFakeClock().Now()
	l.admit("a", t0)
	if got := l.refill(t0.Add(500*ms), t0.Add(2500*ms)); got != 10*0.5+2*1+4*0.5 {
		t.Fatalf("refill across two changes = %v, want 9", got)
	}
}

func TestStructuredRateLimitHeaders(t *testing.T) {
	h := http.Header{}
	cfg := LimitConfig{RateLimitHeaders: true, RateLimitFormat: RateLimitStructured}
	retryAfter(h, cfg, decision{allowed: true, limit: 5, remaining: 3, reset: 1500 * time.Millisecond, policyQ: 10, policyW: 1}, time.Now())
	if got := h.Get("RateLimit-Policy"); got != `"default";q=10;w=1` {
		t.Errorf("RateLimit-Policy = %q", got)
	}
	if got := h.Get("RateLimit"); got != `"default";r=3;t=2` {
		t.Errorf("RateLimit = %q", got)
	}
	if h.Get("RateLimit-Limit") != "" {
		t.Error("the structured format also sent the older fields")
	}
	for _, tt := range []struct {
		rate float64
		q, w int64
	}{{10, 10, 1}, {2.5, 5, 2}, {0.5, 1, 2}, {1.0 / 3, 1, 3}} {
		if q, w := policyOfRate(tt.rate); q != tt.q || w != tt.w {
			t.Errorf("policyOfRate(%v) = %d per %d s, want %d per %d s", tt.rate, q, w, tt.q, tt.w)
		}
	}
}

func TestScheduleAndFormatValidation(t *testing.T) {
	h := HostConfig{Name: "x", Limit: LimitConfig{Rate: 10, RateLimitFormat: "xml",
		Schedule: []RateChange{{After: 2 * time.Second, Rate: 5}, {After: time.Second, Rate: 0}}}, Latency: LatencyConfig{Capacity: -1}}
	err := h.Validate()
	for _, want := range []string{"limit.ratelimit_format", "limit.schedule[1].rate", "limit.schedule[1].after", "latency.capacity"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want an error naming %s", err, want)
		}
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Error("not an ErrInvalidConfig")
	}
	if err := (HostConfig{Name: "x", Limit: LimitConfig{Schedule: []RateChange{{Rate: 1}}}}).Validate(); err == nil {
		t.Error("a schedule without a rate was accepted")
	}
}

// A local site serves in-process, on fake time inside a bubble: a host
// with capacity 2 and 100 ms latency answers 4 concurrent requests in
// 200 ms (twice as slow), never refusing.
func TestLocalSiteCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := NewLocal(Config{Hosts: []HostConfig{{Name: "slow.test",
			Latency: LatencyConfig{Kind: LatencyFixed, Fixed: 100 * time.Millisecond, Capacity: 2}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		client := &http.Client{Transport: srv.Transport()}
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var took []time.Duration
		for range 4 {
			wg.Go(func() {
				res, err := client.Get(srv.URL("slow.test") + "/")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		slowest := took[0]
		for _, d := range took {
			slowest = max(slowest, d)
		}
		if slowest != 200*time.Millisecond {
			t.Fatalf("4 requests on capacity 2: slowest took %v, want 200ms", slowest)
		}
		if st := srv.Stats()["slow.test"]; st.Requests != 4 || st.Limited != 0 {
			t.Fatalf("stats %+v", st)
		}
		res, err := client.Get("http://unknown.test/")
		if err != nil || res.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("unknown host: %v %v", res, err)
		}
	})
	if _, err := NewLocal(Config{Hosts: []HostConfig{{Name: "x", Faults: []FaultConfig{{Kind: FaultReset, Probability: 1}}}}}); err == nil {
		t.Fatal("NewLocal accepted a reset fault")
	}
}
