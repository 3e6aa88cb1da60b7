package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

type robotsDelays struct {
	mu  sync.Mutex
	got map[string]time.Duration
}

func (d *robotsDelays) SetRobotsDelay(scope string, crawlDelay time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got[scope] = crawlDelay
	return true
}

func (d *robotsDelays) DelayScope(string, time.Duration) {}

// robotsSite serves robots.txt with the given status and body, counting fetches;
// release, when non-nil, holds robots.txt responses until closed. fetched
// is closed when robots.txt is first requested.
type robotsSite struct {
	srv       *httptest.Server
	fetches   atomic.Int64
	status    atomic.Int64
	body      string
	release   chan struct{}
	fetched   chan struct{}
	onFetched sync.Once
}

func newRobotsSite(t *testing.T, status int, body string) *robotsSite {
	s := &robotsSite{body: body, fetched: make(chan struct{})}
	s.status.Store(int64(status))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			s.fetches.Add(1)
			s.onFetched.Do(func() { close(s.fetched) })
			if s.release != nil {
				<-s.release
			}
			w.WriteHeader(int(s.status.Load()))
			io.WriteString(w, s.body)
			return
		}
		io.WriteString(w, "page")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func robotsDownload(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return &spider.Response{URL: req.URL, Status: res.StatusCode, Header: res.Header, Body: b, Request: req}, err
}

func newRobotsMiddleware(t *testing.T, kv ...any) (*RobotsTxt, *robotsDelays, *stats.Collector) {
	t.Helper()
	s := settings.New()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := s.Set(kv[i].(string), kv[i+1], settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	d := &robotsDelays{got: map[string]time.Duration{}}
	st := stats.New()
	m, err := NewRobotsTxt(&spider.Crawler{Settings: s, Stats: st, Throttler: d, Download: robotsDownload})
	if err != nil {
		t.Fatal(err)
	}
	return m, d, st
}

func robotsCheck(m *RobotsTxt, url string) error {
	return m.Check(context.Background(), spider.MustRequest(url, nil))
}

const robotsRules = `User-agent: *
Disallow: /private
Allow: /private/ok
Crawl-delay: 2.5

User-agent: gocrawl
Disallow: /nogocrawl
Crawl-delay: 4
`

func TestRobotsRulesAndCrawlDelay(t *testing.T) {
	s := newRobotsSite(t, 200, robotsRules)
	m, d, st := newRobotsMiddleware(t)
	// The first request was admitted before the Crawl-delay was known: it
	// is rescheduled once, not sent.
	var resched *RescheduleError
	if err := robotsCheck(m, s.srv.URL+"/"); !errors.As(err, &resched) || len(resched.Requests) != 1 || !resched.Requests[0].DontFilter {
		t.Fatalf("first request: %v, want a reschedule of itself", err)
	}
	tests := []struct {
		path    string
		allowed bool
	}{
		{"/", true},
		{"/private/x", true}, // the gocrawl group applies, not *
		{"/nogocrawl/x", false},
		{"/nogocrawl?q=1", false},
	}
	for _, tt := range tests {
		err := robotsCheck(m, s.srv.URL+tt.path)
		var drop *DropError
		if tt.allowed != (err == nil) || (err != nil && (!errors.As(err, &drop) || drop.Reason != DropReasonRobotsTxt || !errors.Is(err, ErrRobotsTxtDisallowed))) {
			t.Errorf("%s: error %v, want allowed %v", tt.path, err, tt.allowed)
		}
	}
	if n := s.fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", n)
	}
	host := spider.MustRequest(s.srv.URL, nil).Host()
	if got := d.got[host]; got != 4*time.Second {
		t.Errorf("Crawl-delay for %s = %v, want 4s (the gocrawl group)", host, got)
	}
	if st.Get("robotstxt/forbidden") != 2 {
		t.Errorf("robotstxt/forbidden = %v, want 2", st.Get("robotstxt/forbidden"))
	}
}

func TestRobotsOtherAgentUsesStarGroup(t *testing.T) {
	s := newRobotsSite(t, 200, robotsRules)
	m, d, _ := newRobotsMiddleware(t, "ROBOTSTXT_USER_AGENT", "otherbot")
	if err := robotsCheck(m, s.srv.URL+"/private/x"); err == nil {
		t.Error("/private/x allowed for otherbot")
	}
	if err := robotsCheck(m, s.srv.URL+"/private/ok"); err != nil {
		t.Errorf("/private/ok: %v", err)
	}
	if got := d.got[spider.MustRequest(s.srv.URL, nil).Host()]; got != 2500*time.Millisecond {
		t.Errorf("Crawl-delay %v, want 2.5s", got)
	}
}

func TestRobotsConcurrentFirstRequestsShareOneFetch(t *testing.T) {
	s := newRobotsSite(t, 200, robotsRules)
	s.release = make(chan struct{})
	m, _, _ := newRobotsMiddleware(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	admitted := throttling.WithSentAt(context.Background(), time.Now())
	for i := range 20 {
		wg.Go(func() {
			errs <- m.Check(admitted, spider.MustRequest(fmt.Sprintf("%s/p/%d", s.srv.URL, i), nil))
		})
	}
	// Hold robots.txt until it is requested, so that the other checks
	// find the fetch in progress (or done, for those that come later).
	select {
	case <-s.fetched:
	case <-time.After(10 * time.Second):
		close(s.release) // let the server and the checks finish
		wg.Wait()
		t.Fatal("robots.txt not requested within 10 s of 20 concurrent first checks")
	}
	close(s.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		// Every one of them was admitted before the Crawl-delay was known
		// (whether it waited for the fetch or reached the check later).
		var resched *RescheduleError
		if !errors.As(err, &resched) {
			t.Errorf("%v, want a reschedule (Crawl-delay learnt while waiting)", err)
		}
	}
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times for 20 concurrent first requests, want 1", n)
	}
}

func TestRobotsStatusOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		allowed bool
	}{
		{"404 allows all", 404, "", true},
		{"403 allows all", 403, "", true},
		{"500 disallows all", 500, "", false},
		{"503 disallows all", 503, "", false},
		{"429 disallows all", 429, "", false},
		{"empty file allows all", 200, "", true},
		{"malformed file allows all", 200, "\x00\xff<html>Disallow /\n\n::::\x01User-agent", true},
		{"binary junk", 200, string([]byte{0xff, 0xfe, 0x00, 0x01, 0x80}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRobotsSite(t, tt.status, tt.body)
			m, _, _ := newRobotsMiddleware(t)
			err := robotsCheck(m, s.srv.URL+"/page")
			if (err == nil) != tt.allowed {
				t.Fatalf("error %v, want allowed %v", err, tt.allowed)
			}
			if !tt.allowed && !errors.Is(err, ErrRobotsTxtUnreachable) {
				t.Fatalf("error %v, want ErrRobotsTxtUnreachable", err)
			}
		})
	}
}

// wantDeferred checks that err keeps the request for later: a
// *RescheduleError with one copy delayed by about wait.
func wantDeferred(t *testing.T, err error, wait time.Duration) {
	t.Helper()
	var r *RescheduleError
	if !errors.As(err, &r) || !errors.Is(err, ErrRobotsTxtUnreachable) || len(r.Requests) != 1 {
		t.Fatalf("err = %v, want the request rescheduled (robots.txt unreachable)", err)
	}
	again := r.Requests[0]
	d, _ := again.Get(throttling.MetaDelay).(float64)
	if got := time.Duration(d * float64(time.Second)); got < wait-time.Second || got > wait+time.Second {
		t.Errorf("rescheduled with throttling_delay %v, want about %v", got, wait)
	}
	if !again.DontFilter {
		t.Error("the rescheduled copy would be filtered as a duplicate")
	}
}

// 5xx: complete disallow, the requests wait for robots.txt to be fetched
// again (ROBOTSTXT_ERROR_RETRY, doubling), and are dropped only after
// ROBOTSTXT_UNREACHABLE_TIMEOUT; a later success lets requests through.
func TestRobotsUnreachableIsRetriedLater(t *testing.T) {
	s := newRobotsSite(t, 503, "")
	m, _, st := newRobotsMiddleware(t, "ROBOTSTXT_ERROR_RETRY", 60.0, "ROBOTSTXT_UNREACHABLE_TIMEOUT", 200.0)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	wantDeferred(t, robotsCheck(m, s.srv.URL+"/a"), 60*time.Second)
	now = now.Add(30 * time.Second)
	wantDeferred(t, robotsCheck(m, s.srv.URL+"/a"), 30*time.Second)
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("fetched %d times within the retry period, want 1", n)
	}
	now = now.Add(31 * time.Second) // t=61: second failure, next in 120 s
	wantDeferred(t, robotsCheck(m, s.srv.URL+"/a"), 120*time.Second)
	now = now.Add(121 * time.Second) // t=182: third failure, next at the deadline (t=200)
	wantDeferred(t, robotsCheck(m, s.srv.URL+"/a"), 18*time.Second)
	now = now.Add(19 * time.Second) // t=201: given up
	err := robotsCheck(m, s.srv.URL+"/a")
	var drop *DropError
	if !errors.As(err, &drop) || !errors.Is(err, ErrRobotsTxtUnreachable) {
		t.Fatalf("after ROBOTSTXT_UNREACHABLE_TIMEOUT: %v, want a drop", err)
	}
	if err := robotsCheck(m, s.srv.URL+"/b"); !errors.As(err, &drop) {
		t.Fatalf("while given up: %v, want a drop", err)
	}
	if n := s.fetches.Load(); n != 4 {
		t.Fatalf("fetched %d times, want 4", n)
	}
	if st.Get("robotstxt/unreachable") != 4 || st.Get("robotstxt/unreachable_drops") != 2 ||
		st.Get("robotstxt/deferred") != 4 || st.Get("robotstxt/unreachable_gave_up") != 1 {
		t.Errorf("stats %v", st.Snapshot())
	}
	// It comes back: once the retry is due, requests go through.
	s.status.Store(200)
	now = now.Add(24 * time.Hour)
	if err := robotsCheck(m, s.srv.URL+"/a"); err != nil {
		t.Fatalf("robots.txt reachable again: %v", err)
	}
}

func TestRobotsUnreachableTimeoutZeroDropsAtOnce(t *testing.T) {
	s := newRobotsSite(t, 500, "")
	m, _, _ := newRobotsMiddleware(t, "ROBOTSTXT_UNREACHABLE_TIMEOUT", 0.0)
	var drop *DropError
	if err := robotsCheck(m, s.srv.URL+"/a"); !errors.As(err, &drop) || !errors.Is(err, ErrRobotsTxtUnreachable) {
		t.Fatalf("err = %v, want a drop", err)
	}
}

func TestRobotsUnreachableNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m, _, _ := newRobotsMiddleware(t)
	wantDeferred(t, robotsCheck(m, url+"/a"), 300*time.Second)
}

func TestRobotsCacheIsBounded(t *testing.T) {
	m, _, _ := newRobotsMiddleware(t, "ROBOTSTXT_CACHE_SIZE", 3)
	for range 6 {
		s := newRobotsSite(t, 404, "")
		if err := robotsCheck(m, s.srv.URL+"/"); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != 3 {
		t.Fatalf("cache holds %d origins, want 3", m.Len())
	}
}

func TestRobotsSkips(t *testing.T) {
	s := newRobotsSite(t, 500, "")
	m, _, _ := newRobotsMiddleware(t)
	if err := robotsCheck(m, s.srv.URL+"/robots.txt"); err != nil {
		t.Errorf("robots.txt itself: %v", err)
	}
	req := spider.MustRequest(s.srv.URL+"/x", nil).Set(MetaDontObeyRobotsTxt, true)
	if err := m.Check(context.Background(), req); err != nil {
		t.Errorf("dont_obey_robotstxt: %v", err)
	}
	if s.fetches.Load() != 0 {
		t.Errorf("fetched robots.txt for skipped requests")
	}
}

func TestRobotsAgent(t *testing.T) {
	for _, tt := range [][3]string{
		{"", "gocrawl/1.0 (+https://x)", "gocrawl"},
		{"mybot", "gocrawl/1.0", "mybot"},
		{"", "Mozilla/5.0 (X11)", "Mozilla"},
		{"", "", "*"},
	} {
		if got := RobotsAgent(tt[0], tt[1]); got != tt[2] {
			t.Errorf("RobotsAgent(%q, %q) = %q, want %q", tt[0], tt[1], got, tt[2])
		}
	}
}

func TestRobotsNoSuchHostDoesNotWait(t *testing.T) {
	m, _, st := newRobotsMiddleware(t)
	m.fetchFunc = func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		return nil, fmt.Errorf("download: %w", &net.DNSError{Err: "no such host", Name: req.URL.Hostname(), IsNotFound: true})
	}
	if err := robotsCheck(m, "http://nowhere.invalid/a"); err != nil {
		t.Fatalf("err = %v, want the request to go on (and fail on its own)", err)
	}
	if st.Get("robotstxt/no_such_host") != 1 {
		t.Errorf("stats %v", st.Snapshot())
	}
}

// TestRobotsParseLimit: rules past RFC 9309's 500 KiB are ignored; those
// before it hold.
func TestRobotsParseLimit(t *testing.T) {
	filler := strings.Repeat("# filler line of a huge robots.txt\n", (RobotsTxtParseLimit/35)+100)
	for _, tc := range []struct {
		name, body string
		allowed    bool
	}{
		{"rule before the limit", "User-agent: *\nDisallow: /secret\n" + filler, false},
		{"rule past the limit", "User-agent: *\n" + filler + "Disallow: /secret\n", true},
	} {
		data, err := parseRobots([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := data.TestAgent("/secret", "gocrawl"); got != tc.allowed {
			t.Errorf("%s: /secret allowed = %v, want %v", tc.name, got, tc.allowed)
		}
	}
}

// robotsRateLimit is a throttler whose scopes read RateLimit headers (or
// not).
type robotsRateLimit struct {
	robotsDelays
	reads bool
}

func (r *robotsRateLimit) ReadsRateLimit(string) bool { return r.reads }

// A robots.txt answer that announces a rate in RateLimit headers paces the
// host from it: the requests that waited for robots.txt are rescheduled
// (sent again through the throttler), not sent together into the quota.
// A remaining count alone does not (it says nothing of the rate), nor do
// headers the host's scope does not read.
func TestRobotsRateLimitReschedules(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		reads   bool
		want    bool
	}{
		{"policy", map[string]string{"RateLimit-Policy": `"default";q=10;w=1`, "RateLimit": `"default";r=4;t=1`}, true, true},
		{"remaining only", map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "1"}, true, false},
		{"not read by the scope", map[string]string{"RateLimit-Policy": `"default";q=10;w=1`}, false, false},
		{"no headers", nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				if r.URL.Path == "/robots.txt" {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				io.WriteString(w, "page")
			}))
			defer srv.Close()
			d := &robotsRateLimit{robotsDelays: robotsDelays{got: map[string]time.Duration{}}, reads: tt.reads}
			st := stats.New()
			m, err := NewRobotsTxt(&spider.Crawler{Settings: settings.New(), Stats: st, Throttler: d, Download: robotsDownload})
			if err != nil {
				t.Fatal(err)
			}
			err = robotsCheck(m, srv.URL+"/a")
			var resched *RescheduleError
			if got := errors.As(err, &resched); got != tt.want {
				t.Fatalf("first request (waited for robots.txt): %v, want a reschedule %v", err, tt.want)
			}
			if tt.want && (resched.Reason != "robots.txt_ratelimit" || st.Get("robotstxt/rescheduled_for_ratelimit") != 1) {
				t.Errorf("reschedule reason %q, stat %v; want robots.txt_ratelimit, 1", resched.Reason, st.Get("robotstxt/rescheduled_for_ratelimit"))
			}
			// The request sent again (admitted after robots.txt was known,
			// even at the same instant) goes.
			admitted := throttling.WithSentAt(context.Background(), time.Now())
			if err := m.Check(admitted, spider.MustRequest(srv.URL+"/a", nil)); err != nil {
				t.Errorf("the request sent again: %v, want it sent", err)
			}
		})
	}
}

// robotsRamp is a throttler whose host scopes pace their first requests
// (the rate controller's start ramp) when the robots.txt answer comes, or
// not.
type robotsRamp struct {
	robotsDelays
	ramps bool
	asked []string
}

func (r *robotsRamp) StartRamps(scope string) bool {
	r.asked = append(r.asked, scope)
	return r.ramps
}

// The requests that waited for robots.txt are rescheduled, once, while
// the host's scope is in its start ramp (they then go out at its pace,
// not together); not when the scope does not ramp (any more).
func TestRobotsStartRampReschedules(t *testing.T) {
	for _, ramps := range []bool{true, false} {
		t.Run(fmt.Sprint("ramps=", ramps), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					io.WriteString(w, "User-agent: *\nDisallow: /private\n")
					return
				}
				io.WriteString(w, "page")
			}))
			defer srv.Close()
			d := &robotsRamp{robotsDelays: robotsDelays{got: map[string]time.Duration{}}, ramps: ramps}
			st := stats.New()
			m, err := NewRobotsTxt(&spider.Crawler{Settings: settings.New(), Stats: st, Throttler: d, Download: robotsDownload})
			if err != nil {
				t.Fatal(err)
			}
			err = robotsCheck(m, srv.URL+"/a")
			host := spider.MustRequest(srv.URL, nil).Host()
			if len(d.asked) != 1 || d.asked[0] != host {
				t.Errorf("StartRamps asked for %q, want once for the host %q", d.asked, host)
			}
			var resched *RescheduleError
			if got := errors.As(err, &resched); got != ramps {
				t.Fatalf("first request (waited for robots.txt): %v, want a reschedule %v", err, ramps)
			}
			if n := st.Get("robotstxt/rescheduled_for_start_ramp"); ramps && (resched.Reason != "robots.txt_start_ramp" || n != 1) {
				t.Errorf("reschedule reason %q, stat %v; want robots.txt_start_ramp, 1", resched.Reason, n)
			}
			// Sent again, it goes; robots.txt still holds.
			admitted := throttling.WithSentAt(context.Background(), time.Now())
			if err := m.Check(admitted, spider.MustRequest(srv.URL+"/a", nil)); err != nil {
				t.Errorf("the request sent again: %v, want it sent", err)
			}
			var drop *DropError
			if err := m.Check(admitted, spider.MustRequest(srv.URL+"/private", nil)); !errors.As(err, &drop) {
				t.Errorf("/private: %v, want dropped by robots.txt", err)
			}
		})
	}
}

// robotsSpaced is a throttler whose host scopes have a delay (or not).
type robotsSpaced struct {
	robotsDelays
	delay float64
}

func (r *robotsSpaced) View(scope string) throttling.ScopeView {
	return throttling.ScopeView{Delay: r.delay}
}

// The requests that waited for robots.txt are rescheduled, once, when the
// host's scope has a delay: the robots.txt fetch took their turn, and the
// server would otherwise see the page right after robots.txt. Without a
// delay they go on.
func TestRobotsDelayReschedules(t *testing.T) {
	for _, delay := range []float64{1, 0} {
		t.Run(fmt.Sprint("delay=", delay), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					io.WriteString(w, "User-agent: *\nDisallow: /private\n")
					return
				}
				io.WriteString(w, "page")
			}))
			defer srv.Close()
			d := &robotsSpaced{robotsDelays: robotsDelays{got: map[string]time.Duration{}}, delay: delay}
			st := stats.New()
			m, err := NewRobotsTxt(&spider.Crawler{Settings: settings.New(), Stats: st, Throttler: d, Download: robotsDownload})
			if err != nil {
				t.Fatal(err)
			}
			err = robotsCheck(m, srv.URL+"/a")
			var resched *RescheduleError
			if got := errors.As(err, &resched); got != (delay > 0) {
				t.Fatalf("first request (waited for robots.txt): %v, want a reschedule %v", err, delay > 0)
			}
			if n := st.Get("robotstxt/rescheduled_for_delay"); delay > 0 && (resched.Reason != "robots.txt_delay" || n != 1) {
				t.Errorf("reschedule reason %q, stat %v; want robots.txt_delay, 1", resched.Reason, n)
			}
			// Sent again (robots.txt known), it goes.
			admitted := throttling.WithSentAt(context.Background(), time.Now())
			if err := m.Check(admitted, spider.MustRequest(srv.URL+"/a", nil)); err != nil {
				t.Errorf("the request sent again: %v, want it sent", err)
			}
		})
	}
}
