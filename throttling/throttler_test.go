package throttling

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

func TestRequestWaitsForAllItsScopes(t *testing.T) {
	th, _ := newTestThrottler(t, "THROTTLING_SCOPES", map[string]any{
		"api":   map[string]any{"concurrency": 2},
		"users": map[string]any{"delay": 5.0, "concurrency": 10},
	})
	req := spider.MustRequest("https://api.example/users", nil).Set(MetaScopes, []any{"api", "users"})
	sc, err := th.Scopes(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sc.Names()); got != "[api users]" {
		t.Fatalf("scopes %s, want api and users (the meta replaces the host scope)", got)
	}
	if w := th.Wait(t0, sc); w != 0 {
		t.Fatalf("first wait %v, want 0", w)
	}
	th.Sent(t0, sc)
	if w := th.Wait(t0.Add(sec), sc); w != 4*sec {
		t.Fatalf("wait %v, want the 4s left of users' delay", w)
	}
	th.Sent(t0.Add(5*sec), sc)
	if w := th.Wait(t0.Add(10*sec), sc); w != UntilSlotFree {
		t.Fatalf("wait %v, want UntilSlotFree (api at concurrency 2)", w)
	}
	th.Done(context.Background(), req, sc, t0, nil, nil)
	if w := th.Wait(t0.Add(10*sec), sc); w != 0 {
		t.Fatalf("wait after a completion %v, want 0", w)
	}
}

func TestMetaScopesForms(t *testing.T) {
	tests := []struct {
		v    any
		want string
		err  bool
	}{
		{"api", "[{api 0}]", false},
		{[]string{"b", "a"}, "[{a 0} {b 0}]", false},
		{[]any{"users", "api"}, "[{api 0} {users 0}]", false},
		{map[string]bool{"api": true, "off": false}, "[{api 0}]", false},
		{map[string]float64{"cost": 2.5}, "[{cost 2.5}]", false},
		{map[string]any{"cost": 3, "api": 0}, "[{api 0} {cost 3}]", false},
		{map[string]any{"cost": "lots"}, "", true},
		{[]any{1}, "", true},
		{42, "", true},
		{"", "", true},
		{[]any{"api", ""}, "", true},
		{map[string]any{"": 1}, "", true},
		{map[string]float64{"cost": -1}, "", true},
		{[]any{}, "", true},
		{map[string]bool{"off": false}, "", true},
	}
	for _, tt := range tests {
		req := spider.MustRequest("https://example.com/", nil).Set(MetaScopes, tt.v)
		got, err := MetaScopesOf(req)
		if (err != nil) != tt.err || (err == nil && fmt.Sprint(got) != tt.want) {
			t.Errorf("%#v: %v, %v; want %s (error %v)", tt.v, got, err, tt.want, tt.err)
		}
	}
}

func TestCustomScopesPersistThroughRedirectCopies(t *testing.T) {
	th, _ := newTestThrottler(t)
	req := spider.MustRequest("https://a.example/x", nil).Set(MetaScopes, "api")
	redirected := req.Clone()
	redirected.URL, _ = spider.ParseURL("https://b.example/y")
	sc, err := th.Scopes(context.Background(), redirected)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sc.Names()); got != "[api]" {
		t.Fatalf("scopes after redirect %v, want [api] (the meta is the whole set)", got)
	}
}

func TestDoneAppliesFeedbackUnlessDontTrack(t *testing.T) {
	for _, key := range []string{"", MetaDontTrack, MetaAutoThrottleDontAdjustDelay} {
		t.Run("meta="+key, func(t *testing.T) {
			th, _ := newTestThrottler(t)
			req := spider.MustRequest("https://example.com/", nil)
			if key != "" {
				req.Set(key, true)
			}
			sc, _ := th.Scopes(context.Background(), req)
			th.Sent(t0, sc)
			res := &spider.Response{URL: req.URL, Status: 429, Header: http.Header{}, Request: req}
			th.Done(context.Background(), req, sc, t0, res, nil)
			w := th.Wait(t0, sc)
			if key == "" && w != sec {
				t.Fatalf("wait after a 429: %v, want 1s", w)
			}
			if key != "" && w != 0 {
				t.Fatalf("wait after an untracked 429: %v, want 0", w)
			}
		})
	}
}

func TestExceptionTriggers(t *testing.T) {
	th, _ := newTestThrottler(t)
	req := spider.MustRequest("https://example.com/", nil)
	sc, _ := th.Scopes(context.Background(), req)
	for _, tt := range []struct {
		err     error
		trigger bool
	}{
		{&downloader.Error{Kind: errkind.DownloadTimeout, URL: "u", Err: errors.New("slow")}, true},
		{fmt.Errorf("wrapped: %w", &downloader.Error{Kind: errkind.DownloadFailed, URL: "u", Err: errors.New("reset")}), true},
		{&downloader.Error{Kind: errkind.ResponseTooLarge, URL: "u", Err: errors.New("big")}, false},
		{errors.New("other"), false},
	} {
		fb, err := th.Manager().ExceptionBackoff(context.Background(), req, tt.err, sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := fb["example.com"].Trigger; got != tt.trigger {
			t.Errorf("%v: trigger %v, want %v", tt.err, got, tt.trigger)
		}
	}
}

func TestDelayScopeUncappedAndCountsAsTrigger(t *testing.T) {
	th, fc := newTestThrottler(t, "BACKOFF_MAX_DELAY", 10.0, "THROTTLING_DEBUG", true)
	th.DelayScope("example.com", 600*sec)
	sc := scopesOf("example.com")
	if w := th.Wait(fc.Now(), sc); w != 600*sec {
		t.Fatalf("wait %v, want 600s (not capped at 10s)", w)
	}
	snap := th.Snapshot()
	if len(snap) != 1 || !snap[0].LastTrigger.Equal(t0) {
		t.Fatalf("snapshot %+v: DelayScope not recorded as a trigger", snap)
	}
}

func TestAdmitWaitsOnTheFakeClock(t *testing.T) {
	th, fc := newTestThrottler(t, "DOWNLOAD_DELAY", 2.0)
	sc := scopesOf("example.com")
	ctx := context.Background()
	if at, err := th.Admit(ctx, sc); err != nil || !at.Equal(t0) {
		t.Fatalf("first admit at %v, %v", at, err)
	}
	got := make(chan time.Time)
	go func() {
		at, _ := th.Admit(ctx, sc)
		got <- at
	}()
	waitUntil(t, "the second Admit to wait on a fake-clock timer", func() bool { return fc.Pending() > 0 })
	fc.Advance(2 * sec)
	select {
	case at := <-got:
		if !at.Equal(t0.Add(2 * sec)) {
			t.Fatalf("second admit at %v, want t0+2s", at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second Admit still waiting 10 s after the fake clock passed its delay")
	}
}

func TestAdmitWithoutSlotIgnoresOnlyConcurrency(t *testing.T) {
	th, _ := newTestThrottler(t, "CONCURRENT_REQUESTS_PER_DOMAIN", 1)
	sc := scopesOf("example.com")
	th.Sent(t0, sc)
	ctx, cancel := context.WithTimeout(WithoutSlot(context.Background()), 5*time.Second)
	defer cancel()
	if _, err := th.Admit(ctx, sc); err != nil {
		t.Fatalf("slotless admit blocked by concurrency: %v", err)
	}
	th.DelayScope("example.com", time.Hour)
	ctx2, cancel2 := context.WithCancel(WithoutSlot(context.Background()))
	cancel2()
	if _, err := th.Admit(ctx2, sc); !errors.Is(err, context.Canceled) {
		t.Fatalf("slotless admit ignored a hard delay: %v", err)
	}
}

func TestRobotsDelay(t *testing.T) {
	th, _ := newTestThrottler(t, "THROTTLING_ROBOTSTXT_MAX_DELAY", 10.0, "THROTTLING_SCOPES", map[string]any{
		"fast.example":   map[string]any{"concurrency": 4, "delay": 0.5},
		"silent.example": map[string]any{"concurrency": 4, "ignore_robots_txt": true},
	})
	var logged []string
	th.log = zerolog.New(zerolog.ConsoleWriter{Out: writerFunc(func(p []byte) { logged = append(logged, string(p)) })})
	tests := []struct {
		scope string
		crawl time.Duration
		conc  int
		delay time.Duration
		warn  bool
	}{
		{"polite.example", 3 * sec, 1, 3 * sec, false},
		{"slow.example", 120 * sec, 1, 10 * sec, false}, // capped
		{"fast.example", 3 * sec, 4, sec / 2, true},     // THROTTLING_SCOPES wins, with a warning
		{"silent.example", 3 * sec, 4, 3 * sec, false},  // delay from robots, concurrency kept, no warning
	}
	for _, tt := range tests {
		logged = nil
		th.Wait(t0, scopesOf(tt.scope)) // create the scope first
		if !th.SetRobotsDelay(tt.scope, tt.crawl) {
			t.Fatalf("%s: not applied", tt.scope)
		}
		m := th.scopes[tt.scope].mgr.(*ThrottlingScopeManager)
		if m.Concurrency() != tt.conc || m.Delay() != tt.delay {
			t.Errorf("%s: concurrency %d delay %v, want %d and %v", tt.scope, m.Concurrency(), m.Delay(), tt.conc, tt.delay)
		}
		if (len(logged) > 0) != tt.warn {
			t.Errorf("%s: warnings %q, want warning %v", tt.scope, logged, tt.warn)
		}
	}
	// Recreated after eviction, a scope gets its Crawl-delay back.
	th.mu.Lock()
	th.removeLocked(th.scopes["polite.example"])
	th.mu.Unlock()
	th.Wait(t0, scopesOf("polite.example"))
	if m := th.scopes["polite.example"].mgr.(*ThrottlingScopeManager); m.Delay() != 3*sec || m.Concurrency() != 1 {
		t.Errorf("recreated scope lost its Crawl-delay: %v, %d", m.Delay(), m.Concurrency())
	}
	off, _ := newTestThrottler(t, "THROTTLING_ROBOTSTXT_OBEY", false)
	if off.SetRobotsDelay("x.example", sec) {
		t.Error("applied with THROTTLING_ROBOTSTXT_OBEY false")
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func TestTakeRequestDelayOnce(t *testing.T) {
	req := spider.MustRequest("https://example.com/slow", nil).Set(MetaDelay, 5.0)
	if d := TakeRequestDelay(req); d != 5*sec {
		t.Fatalf("first take %v, want 5s", d)
	}
	retry := req.Clone()
	if d := TakeRequestDelay(retry); d != 0 {
		t.Fatalf("copy (retry/redirect) waits again: %v", d)
	}
	if d := TakeRequestDelay(spider.MustRequest("https://example.com/", nil)); d != 0 {
		t.Fatalf("no meta: %v", d)
	}
	if d := TakeRequestDelay(spider.MustRequest("https://example.com/", nil).Set(MetaDelay, "soon")); d != 0 {
		t.Fatalf("invalid meta: %v", d)
	}
}

// CONCURRENT_REQUESTS_PER_IP: the IP scope comes from the downloader's DNS
// cache (localhost resolves from the hosts file, without the network).
func TestPerIPScopeFromDNSCache(t *testing.T) {
	dns := dnscache.New(10, time.Second)
	req := spider.MustRequest("http://localhost:8080/", nil)
	th, err := New(testSettings(t, "CONCURRENT_REQUESTS_PER_IP", 2), Options{DNS: dns})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := th.Scopes(context.Background(), req)
	if len(sc) != 1 {
		t.Fatalf("scopes before resolution %v, want the host only (never resolving)", sc.Names())
	}
	addrs, err := dns.Lookup(context.Background(), "localhost")
	if err != nil || len(addrs) == 0 {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	sc, _ = th.Scopes(context.Background(), req)
	if len(sc) != 2 || !sc.Has(addrs[0]) || !sc.Has("localhost:8080") {
		t.Fatalf("scopes %v, want localhost:8080 and %s", sc.Names(), addrs[0])
	}
	if c := th.ScopeConfigFor(addrs[0]).Concurrency; c != 2 {
		t.Fatalf("IP scope concurrency %d, want CONCURRENT_REQUESTS_PER_IP 2", c)
	}
}
