package simsite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeGeneratedPages(t *testing.T) {
	s := startT(t, Config{Hosts: []HostConfig{
		{Name: "a", Pages: PagesConfig{Count: 30, Fanout: 5, Size: 3000}},
		{Name: "b", Pages: PagesConfig{Count: 5, Graph: GraphChain}},
	}})
	if s.URL("a") == s.URL("b") || !strings.HasPrefix(s.URL("a"), "http://127.0.0.1:") {
		t.Fatalf("URLs %q and %q: want distinct 127.0.0.1 origins", s.URL("a"), s.URL("b"))
	}
	if s.URL("nope") != "" {
		t.Errorf("URL(unknown) = %q, want empty", s.URL("nope"))
	}
	tests := []struct {
		host, path string
		status     int
		contains   string
	}{
		{"a", "/", 200, "<title>a page 0</title>"},
		{"a", "/page/29", 200, "<title>a page 29</title>"},
		{"a", "/page/30", 404, ""},
		{"a", "/robots.txt", 404, ""},
		{"b", "/page/3", 200, `href="/page/4"`},
		{"b", "/page/4", 200, "<title>b page 4</title>"},
	}
	for _, tt := range tests {
		resp, body := get(t, s.URL(tt.host)+tt.path)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("%s %s: %d %.80q; want %d containing %q", tt.host, tt.path, resp.StatusCode, body, tt.status, tt.contains)
		}
		if tt.host == "a" && tt.status == 200 && len(body) != 3000 {
			t.Errorf("%s %s: body %d bytes, want padded to 3000", tt.host, tt.path, len(body))
		}
	}
	st := s.Stats()
	if st["a"].Requests != 4 || st["b"].Requests != 2 || st["a"].ByStatus[404] != 2 {
		t.Errorf("stats a=%+v b=%+v", st["a"], st["b"])
	}
}

func TestSharedListenerRoutesByHostHeader(t *testing.T) {
	s := startT(t, Config{Shared: true, Hosts: []HostConfig{{Name: "one.test"}, {Name: "two.test"}}})
	for _, host := range []string{"one.test", "TWO.test:80", "three.test"} {
		req, _ := http.NewRequest("GET", s.SharedURL()+"/", nil)
		req.Host = host
		resp, err := newClient(5 * time.Second).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		name := strings.ToLower(strings.TrimSuffix(host, ":80"))
		if name == "three.test" {
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("unknown host: status %d, want 421", resp.StatusCode)
			}
			continue
		}
		if want := "<title>" + name + " page 0</title>"; !strings.Contains(string(body), want) {
			t.Errorf("Host %s: body lacks %q", host, want)
		}
	}
}

// limitedGet fetches path from the host several times and returns the
// responses (bodies read).
func limitedGets(t *testing.T, url string, n int) []*http.Response {
	t.Helper()
	var out []*http.Response
	for range n {
		resp, _ := get(t, url)
		out = append(out, resp)
	}
	return out
}

func TestLimitedAnswers(t *testing.T) {
	clk := newFakeClock()
	tests := []struct {
		name       string
		limit      LimitConfig
		status     int
		retryAfter func(string) bool
		body       string
	}{
		{"429 with seconds", LimitConfig{Rate: 1, Burst: 1}, 429,
			func(v string) bool { return v == "1" }, "Too Many Requests"},
		{"503 with http-date", LimitConfig{Rate: 1, Burst: 1, Status: 503, RetryAfter: RetryAfterHTTPDate}, 503,
			func(v string) bool {
				at, err := http.ParseTime(v)
				return err == nil && at.Equal(clk.Now().Add(time.Second))
			}, "Service Unavailable"},
		{"no Retry-After", LimitConfig{Rate: 1, Burst: 1, RetryAfter: RetryAfterNone}, 429,
			func(v string) bool { return v == "" }, "Too Many Requests"},
		{"soft block", LimitConfig{Rate: 1, Burst: 1, SoftBlock: true}, 200,
			func(v string) bool { return v == "1" }, "Under maintenance"},
		{"fixed window with fixed Retry-After", LimitConfig{Window: time.Minute, WindowLimit: 1, RetryAfterValue: 7 * time.Second}, 429,
			func(v string) bool { return v == "7" }, "Too Many Requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startT(t, Config{Now: clk.Now, Hosts: []HostConfig{{Name: "h", Limit: tt.limit}}})
			rs := limitedGets(t, s.URL("h")+"/", 3)
			if rs[0].StatusCode != 200 || rs[0].Header.Get("Retry-After") != "" {
				t.Errorf("first request: %d Retry-After %q, want 200 without", rs[0].StatusCode, rs[0].Header.Get("Retry-After"))
			}
			for _, r := range rs[1:] {
				if r.StatusCode != tt.status || !tt.retryAfter(r.Header.Get("Retry-After")) {
					t.Errorf("limited: %d Retry-After %q, want %d", r.StatusCode, r.Header.Get("Retry-After"), tt.status)
				}
			}
			_, body := get(t, s.URL("h")+"/page/1")
			if !strings.Contains(body, tt.body) {
				t.Errorf("limited body %.100q lacks %q", body, tt.body)
			}
			recs := s.Records()
			if got := recs.Limited(); got != 3 {
				t.Errorf("Limited() = %d, want 3", got)
			}
			clk.Advance(time.Minute)
			if r, _ := get(t, s.URL("h")+"/"); r.StatusCode != 200 || r.Header.Get("Retry-After") != "" {
				t.Errorf("after the window: %d, want 200", r.StatusCode)
			}
		})
	}
}

func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	clk := newFakeClock()
	s := startT(t, Config{Now: clk.Now, Hosts: []HostConfig{{Name: "h", Limit: LimitConfig{Rate: 0.5, Burst: 2, RateLimitHeaders: true}}}})
	want := []struct{ status, remaining, reset string }{
		{"200", "1", "2"}, // one token gone: 2 s to refill
		{"200", "0", "2"}, // empty: next token in 2 s
		{"429", "0", "2"},
	}
	for i, w := range want {
		r, _ := get(t, s.URL("h")+"/")
		got := []string{fmt.Sprint(r.StatusCode), r.Header.Get("RateLimit-Remaining"), r.Header.Get("RateLimit-Reset")}
		if got[0] != w.status || got[1] != w.remaining || got[2] != w.reset || r.Header.Get("RateLimit-Limit") != "2" {
			t.Errorf("request %d: status, remaining, reset = %v limit %q; want %v limit 2", i, got, r.Header.Get("RateLimit-Limit"), w)
		}
	}
}

func TestGlobalKeySharesTheBucket(t *testing.T) {
	clk := newFakeClock()
	for _, tt := range []struct {
		key         LimitKey
		wantLimited int
	}{{KeyIP, 0}, {KeyGlobal, 1}} {
		s := startT(t, Config{Now: clk.Now, Hosts: []HostConfig{{Name: "h", Limit: LimitConfig{Rate: 1, Burst: 1, Key: tt.key}}}})
		// Two clients with distinct remote IPs on the loopback range.
		get(t, s.URL("h")+"/")
		tr := &http.Transport{DisableKeepAlives: true, DialContext: dialFrom("127.0.0.2")}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(s.URL("h") + "/")
		if err != nil {
			t.Skipf("cannot dial from 127.0.0.2: %v", err)
		}
		resp.Body.Close()
		if got := s.Records().Limited(); got != tt.wantLimited {
			t.Errorf("key %s: %d limited, want %d (clients %v)", tt.key, got, tt.wantLimited, clientsOf(s.Records()))
		}
	}
}

func clientsOf(rs Records) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Client)
	}
	return out
}

func TestRobots(t *testing.T) {
	content := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "custom %s", r.URL.Path)
	})
	tests := []struct {
		name    string
		robots  RobotsConfig
		content http.Handler
		status  int
		body    string
	}{
		{"none", RobotsConfig{}, nil, 404, ""},
		{"empty allow-all", RobotsConfig{Status: 200}, nil, 200, "User-agent: *\nDisallow:\n"},
		{"crawl-delay and disallow", RobotsConfig{CrawlDelay: 1500 * time.Millisecond, Disallow: []string{"/page/4", "/private/"}, Allow: []string{"/page/42"}},
			nil, 200, "User-agent: *\nCrawl-delay: 1.5\nAllow: /page/42\nDisallow: /page/4\nDisallow: /private/\n"},
		{"verbatim body", RobotsConfig{Body: "User-agent: bot\nDisallow: /\n"}, nil, 200, "User-agent: bot\nDisallow: /\n"},
		{"404", RobotsConfig{Status: 404, CrawlDelay: time.Second}, nil, 404, "Not Found\n"},
		{"500", RobotsConfig{Status: 500}, nil, 500, "Internal Server Error\n"},
		{"unconfigured goes to Content", RobotsConfig{}, content, 200, "custom /robots.txt"},
		{"configured wins over Content", RobotsConfig{UserAgent: "x", Disallow: []string{"/"}}, content, 200, "User-agent: x\nDisallow: /\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startT(t, Config{Hosts: []HostConfig{{Name: "h", Robots: tt.robots, Content: tt.content}}})
			resp, body := get(t, s.URL("h")+"/robots.txt")
			if resp.StatusCode != tt.status || (tt.body != "" && body != tt.body) {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.status, tt.body)
			}
		})
	}
}

func TestContentOverrideIsStillWrapped(t *testing.T) {
	clk := newFakeClock()
	content := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><title>quotes</title><body>%s</body></html>", r.URL.Path)
	})
	s := startT(t, Config{Now: clk.Now, Hosts: []HostConfig{{
		Name:    "demo",
		Content: content,
		Limit:   LimitConfig{Rate: 1, Burst: 2},
		Robots:  RobotsConfig{CrawlDelay: time.Second},
		Faults:  []FaultConfig{{Kind: FaultTruncate, PathPrefix: "/broken"}},
	}}})
	if s.Graph("demo") != nil {
		t.Error("Graph of a Content host should be nil")
	}
	if _, body := get(t, s.URL("demo")+"/quotes/1"); body != "<html><title>quotes</title><body>/quotes/1</body></html>" {
		t.Errorf("content body = %q", body)
	}
	if _, body := get(t, s.URL("demo")+"/robots.txt"); !strings.Contains(body, "Crawl-delay: 1") {
		t.Errorf("robots.txt = %q", body)
	}
	if r, _ := get(t, s.URL("demo")+"/quotes/2"); r.StatusCode != 429 {
		t.Errorf("third request: %d, want 429 from the limiter", r.StatusCode)
	}
	clk.Advance(time.Minute)
	resp, err := newClient(5 * time.Second).Get(s.URL("demo") + "/broken/page")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Error("truncate fault on Content: body read without error")
	}
	recs := s.Records()
	if len(recs) != 4 || recs[3].Fault != FaultTruncate || recs[0].Path != "/quotes/1" {
		t.Errorf("records = %+v", recs)
	}
}

func TestLatencyIsAppliedBeforeHeaders(t *testing.T) {
	s := startT(t, Config{Hosts: []HostConfig{{Name: "slow", Latency: LatencyConfig{Kind: LatencyFixed, Fixed: 150 * time.Millisecond}}}})
	get(t, s.URL("slow")+"/")
	r := s.Records()[0]
	// A lower bound only: the server slept at least this long.
	if d := r.End.Sub(r.Start); d < 150*time.Millisecond {
		t.Errorf("request took %v on the server, want >= 150ms", d)
	}
}

func TestStartFailsOnBadConfig(t *testing.T) {
	_, err := Start(context.Background(), Config{Hosts: []HostConfig{{Name: "a", Limit: LimitConfig{Burst: -1}}}})
	if err == nil || !strings.Contains(err.Error(), "hosts[0].limit.burst") {
		t.Errorf("Start error = %v, want one naming hosts[0].limit.burst", err)
	}
}

func TestCloseOnContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Config{Hosts: []HostConfig{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	get(t, s.URL("a")+"/")
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := newClient(time.Second).Get(s.URL("a") + "/"); err != nil {
			return // closed
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("server still answering after its context was cancelled")
}

func TestContentHandlerCanFlushAndFail(t *testing.T) {
	content := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "part one, ")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "part two")
	})
	s := startT(t, Config{Hosts: []HostConfig{{Name: "c", Content: content,
		Faults: []FaultConfig{{Kind: FaultSlow, PathPrefix: "/missing", ChunkSize: 4, Interval: time.Millisecond}}}}})
	if got := s.Hosts(); len(got) != 1 || got[0] != "c" {
		t.Errorf("Hosts() = %v", got)
	}
	if _, body := get(t, s.URL("c")+"/x"); body != "part one, part two" {
		t.Errorf("flushed body = %q", body)
	}
	// A fault keeps the content's status.
	if r, body := get(t, s.URL("c")+"/missing"); r.StatusCode != 404 || body != "404 page not found\n" {
		t.Errorf("slow 404: %d %q", r.StatusCode, body)
	}
}
