package middleware

import (
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// FuzzRefresh: a Refresh header or meta refresh content never gives a
// negative delay (a huge one is huge, not an overflow to "now") or an
// empty target.
func FuzzRefresh(f *testing.F) {
	for _, s := range []string{"5; url=/next", "0, /x", "10000000000; url=/x", "1e300;url=/x", "5 url='/a b'",
		"; url=/x", "3.5;URL=\"/q\"", "99999999999999999999999999, /x", ".;url=x", "0;url="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, u, ok := parseRefresh(v)
		if ok && (d < 0 || u == "") {
			t.Fatalf("parseRefresh(%q) = %v, %q", v, d, u)
		}
	})
}

// FuzzRedirectRetryAfter: the Retry-After of a 3xx never gives a negative
// delay.
func FuzzRedirectRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1e300", "-5", "NaN", "Inf", "Wed, 21 Oct 2026 07:28:00 GMT", "0x10", "1_000"} {
		f.Add(s, "Wed, 21 Oct 2026 07:00:00 GMT")
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v, date string) {
		if d, ok := parseRetryAfter(v, date, now); ok && d < 0 {
			t.Fatalf("parseRetryAfter(%q, %q) = %v", v, date, d)
		}
	})
}

// FuzzRobotsTxt: any robots.txt body parses without crashing the crawl
// (the parser's panics are caught), and any path gets a stable answer.
func FuzzRobotsTxt(f *testing.F) {
	f.Add([]byte(robotsRules), "/private/x?y=1", "gocrawl")
	f.Add([]byte("User-agent: *\nDisallow: /\nAllow: /$\nCrawl-delay: 1e400\n"), "/", "*")
	f.Add([]byte("\x00\xff<html>Disallow /\n\n::::\x01User-agent"), "//x", "bot")
	f.Add([]byte("User-agent: a\nUser-agent: b\nDisallow: /*.php$\nSitemap: http://x/\n"), "/a.php", "b")
	f.Fuzz(func(t *testing.T, body []byte, path, agent string) {
		data, err := parseRobots(body)
		if err != nil {
			data = robotsAllowAll
		}
		m := &RobotsTxt{agent: RobotsAgent(agent, "gocrawl/1.0")}
		req, rerr := spider.NewRequest("http://a.test"+sanitizePath(path), nil)
		if rerr != nil {
			return
		}
		first := m.allowed(data, req)
		if again := m.allowed(data, req); again != first {
			t.Fatalf("the answer for %q changed", path)
		}
		if g := data.FindGroup(m.agent); g != nil && g.CrawlDelay < 0 {
			t.Fatalf("negative Crawl-delay %v", g.CrawlDelay)
		}
	})
}

func sanitizePath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}
