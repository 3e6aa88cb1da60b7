package hostile

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A response costs at most its cap plus a constant,
// however much the server sends or however well it compresses, and the
// crawl-wide memory budget bounds many of them at once. Memory is the
// child's peak RSS, compared with a crawl of one small page.

// baselineRSS is the peak RSS of a crawl of one small page.
func baselineRSS(t *testing.T, srv *Server) int64 {
	t.Helper()
	r := gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/1")
	if r.code != 0 {
		t.Fatalf("baseline crawl: exit %d\n%s", r.code, tail(r.stderr))
	}
	return r.maxRSS
}

func TestOneHugeBodyCostsItsCap(t *testing.T) {
	const capBytes = 64 * mib
	srv := newServer(t, "", 4*capBytes)
	base := baselineRSS(t, srv)
	for _, path := range []string{"/endless", "/bomb/gzip", "/bomb/deflate", "/bomb/br"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			r := gocrawl(t, 2*time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+path,
				"-s", "DOWNLOAD_MAXSIZE="+strconv.Itoa(capBytes))
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
			}
			if got := r.stats["downloader/exception_type_count/ResponseTooLargeError"]; got != 1 {
				t.Errorf("ResponseTooLargeError count = %v, want 1 (stats %v)", got, r.stats)
			}
			// The cap plus a constant: the decoder's window (up to 16 MiB
			// for brotli) and the runtime's slack.
			limit := base + capBytes + 32*mib
			t.Logf("%s: peak RSS %s (baseline %s, cap %s, limit %s)", path, mb(r.maxRSS), mb(base), mb(capBytes), mb(limit))
			if r.maxRSS > limit {
				t.Errorf("peak RSS %s is above %s", mb(r.maxRSS), mb(limit))
			}
		})
	}
}

func TestMemoryBudgetBoundsConcurrentBodies(t *testing.T) {
	const (
		capBytes = 64 * mib
		budget   = 160 * mib
		n        = 8
	)
	srv := newServer(t, "", 4*capBytes)
	base := baselineRSS(t, srv)
	var urls []string
	for i := range n {
		kind := []string{"/endless", "/bomb/gzip", "/bomb/br", "/bomb/deflate"}[i%4]
		urls = append(urls, fmt.Sprintf("%s%s?i=%d", srv.URL, kind, i))
	}
	crawl := func(budgetSetting string) run {
		r := gocrawl(t, 6*time.Minute, "run", "follow", "-a", "start_urls="+strings.Join(urls, ","),
			"-s", "DOWNLOAD_MAXSIZE="+strconv.Itoa(capBytes), "-s", "DOWNLOAD_MEMORY_BUDGET="+budgetSetting,
			"-s", "CONCURRENT_REQUESTS=8", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
		}
		if got := r.stats["downloader/exception_type_count/ResponseTooLargeError"]; got != n {
			t.Errorf("ResponseTooLargeError count = %v, want %d (stats %v)", got, n, r.stats)
		}
		return r
	}
	free := crawl(strconv.Itoa(8 << 30)) // a budget that never binds
	r := crawl(strconv.Itoa(budget))
	// Without a budget that binds, eight bodies hold up to 8 × 64 MiB.
	limit := base + budget + 32*mib
	t.Logf("%d bodies at once: peak RSS %s with a %s budget, %s with 8 GiB (baseline %s, limit %s)",
		n, mb(r.maxRSS), mb(budget), mb(free.maxRSS), mb(base), mb(limit))
	if r.maxRSS > limit {
		t.Errorf("peak RSS %s is above %s", mb(r.maxRSS), mb(limit))
	}
}

// TestDefaultCapEndlessBody: with the default DOWNLOAD_MAXSIZE (1 GiB) an
// endless body peaked at 4.2 GB before the fix.
func TestDefaultCapEndlessBody(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 GiB; skipped with -short")
	}
	srv := newServer(t, "", 0)
	base := baselineRSS(t, srv)
	r := gocrawl(t, 6*time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/endless")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if got := r.stats["downloader/exception_type_count/ResponseTooLargeError"]; got != 1 {
		t.Errorf("ResponseTooLargeError count = %v, want 1", got)
	}
	limit := base + 1024*mib + 48*mib
	t.Logf("default cap: peak RSS %s (baseline %s, limit %s)", mb(r.maxRSS), mb(base), mb(limit))
	if r.maxRSS > limit {
		t.Errorf("peak RSS %s is above %s", mb(r.maxRSS), mb(limit))
	}
}
