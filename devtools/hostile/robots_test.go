package hostile

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An unreachable robots.txt (5xx, timeout) means
// complete disallow while it lasts (RFC 9309), but the origin's requests
// are kept and robots.txt is fetched again with backoff; they are dropped,
// with a log line and a counter, only after ROBOTSTXT_UNREACHABLE_TIMEOUT.

// flakyRobots fails the first n fetches (with status, or by hanging when
// status is 0) and then allows everything.
func flakyRobots(n int64, status int) http.HandlerFunc {
	var fetches atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1) <= n {
			if status == 0 {
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			w.WriteHeader(status)
			return
		}
		w.Write([]byte("User-agent: *\nAllow: /\n"))
	}
}

func TestRobotsTxtUnreachableKeepsRequests(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
	}{{"503 twice", http.StatusServiceUnavailable}, {"hangs twice", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, "", 0)
			srv.SetRobots(flakyRobots(2, tt.status))
			r := gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0?links=1_2",
				"-s", "ROBOTSTXT_ERROR_RETRY=0.5", "-s", "ROBOTSTXT_UNREACHABLE_TIMEOUT=60", "-s", "DOWNLOAD_TIMEOUT=1")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
			}
			if got := r.stats["item_scraped_count"]; got != 3 {
				t.Errorf("items = %v, want 3 (the requests were kept until robots.txt came back)\n%s", got, tail(r.stderr))
			}
			if r.stats["robotstxt/deferred"] < 1 || r.stats["engine/dropped/robots.txt"] != 0 {
				t.Errorf("deferred %v, dropped %v", r.stats["robotstxt/deferred"], r.stats["engine/dropped/robots.txt"])
			}
			if n := srv.Count("/robots.txt"); n != 3 {
				t.Errorf("robots.txt fetched %d times, want 3", n)
			}
			t.Logf("crawl took %v", r.elapsed)
		})
	}
}

func TestRobotsTxtUnreachableDropsAfterTimeout(t *testing.T) {
	srv := newServer(t, "", 0)
	srv.SetRobots(flakyRobots(1<<40, http.StatusInternalServerError))
	r := gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0,"+srv.URL+"/page/1",
		"-s", "ROBOTSTXT_ERROR_RETRY=0.5", "-s", "ROBOTSTXT_UNREACHABLE_TIMEOUT=2")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if got := r.stats["engine/dropped/robots.txt"]; got != 2 {
		t.Errorf("engine/dropped/robots.txt = %v, want 2", got)
	}
	if got := r.stats["robotstxt/unreachable_drops"]; got != 2 {
		t.Errorf("robotstxt/unreachable_drops = %v, want 2", got)
	}
	if srv.Count("/page/0")+srv.Count("/page/1") != 0 {
		t.Errorf("pages fetched while robots.txt was unreachable: %v", srv.Hits())
	}
	if !strings.Contains(r.stderr, "ROBOTSTXT_UNREACHABLE_TIMEOUT") {
		t.Errorf("no log line says why the requests were dropped:\n%s", tail(r.stderr))
	}
	if r.elapsed > 20*time.Second {
		t.Errorf("took %v", r.elapsed)
	}
}
