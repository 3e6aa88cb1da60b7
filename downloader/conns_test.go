package downloader

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// acceptServer is a loopback server counting the connections it accepted
// and signalling each one it saw closed.
type acceptServer struct {
	*httptest.Server
	accepts atomic.Int64
	closed  chan struct{}
}

func newAcceptServer(t *testing.T) *acceptServer { return newHoldingServer(t, nil) }

// newHoldingServer is newAcceptServer whose answers wait until hold is
// closed (nil: they do not wait).
func newHoldingServer(t *testing.T, hold <-chan struct{}) *acceptServer {
	t.Helper()
	s := &acceptServer{closed: make(chan struct{}, 100)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold != nil {
			<-hold
		}
		_, _ = w.Write([]byte("ok"))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.accepts.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed <- struct{}{}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func mustGet(t *testing.T, d *Downloader, u string) {
	t.Helper()
	res, err := d.Fetch(context.Background(), spider.MustRequest(u, nil))
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if res.Status != 200 {
		t.Fatalf("GET %s: status %d", u, res.Status)
	}
}

// A broad crawl asks every host in turn: with more hosts than the old
// idle pool (max(2 x CONCURRENT_REQUESTS, 100)), a least-recently-used
// pool dropped every connection before its host came round again. Each
// host must keep its one connection.
func TestConnsOneIdleConnectionPerHost(t *testing.T) {
	const hosts, rounds = 150, 3
	srvs := make([]*acceptServer, hosts)
	for i := range srvs {
		srvs[i] = newAcceptServer(t)
	}
	d := newTestDownloader(t, Options{MaxConns: 4, MaxOpenConns: 1000})
	for range rounds {
		for _, s := range srvs {
			mustGet(t, d, s.URL+"/")
		}
	}
	for i, s := range srvs {
		if n := s.accepts.Load(); n != 1 {
			t.Errorf("host %d accepted %d connections for %d requests, want 1", i, n, rounds)
		}
	}
	if st := d.ConnStats(); st.Dials != hosts || st.Open != hosts {
		t.Errorf("ConnStats = %+v, want %d dials and %d open", st, hosts, hosts)
	}
}

// With a budget of 3 connections, 12 hosts fetched at once never have more
// than 3 connections open, and every request succeeds: dials wait for a
// place instead of failing.
func TestConnsBudgetGatesDials(t *testing.T) {
	const hosts = 12
	hold := make(chan struct{})
	srvs := make([]*acceptServer, hosts)
	for i := range srvs {
		srvs[i] = newHoldingServer(t, hold)
	}
	d := newTestDownloader(t, Options{MaxConns: 2, MaxOpenConns: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 2*hosts)
	for range 2 {
		for _, s := range srvs {
			wg.Go(func() {
				res, err := d.Fetch(context.Background(), spider.MustRequest(s.URL+"/", nil))
				if err == nil && res.Status != 200 {
					err = &net.AddrError{Err: "bad status", Addr: s.URL}
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	// Three requests hold the three connections; the others' dials wait.
	for deadline := time.Now().Add(10 * time.Second); d.ConnStats().Waits == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(hold)
			t.Fatalf("no dial waited for the budget: ConnStats = %+v", d.ConnStats())
		}
	}
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := d.ConnStats()
	if st.Peak > 3 || st.Open > 3 {
		t.Errorf("ConnStats = %+v: more than the budget of 3 open", st)
	}
}

// CloseHost closes the idle connection of the evicted host only: the other
// host's connection is reused, the evicted host's next request dials.
func TestConnsCloseHost(t *testing.T) {
	a, b := newAcceptServer(t), newAcceptServer(t)
	d := newTestDownloader(t, Options{MaxConns: 4, MaxOpenConns: 100})
	mustGet(t, d, a.URL+"/")
	mustGet(t, d, b.URL+"/")
	scopeA := strings.TrimPrefix(a.URL, "http://") // "127.0.0.1:PORT", the host scope
	if n := d.CloseHost(scopeA); n != 1 {
		t.Fatalf("CloseHost(%s) closed %d connections, want 1", scopeA, n)
	}
	<-a.closed // the server saw it close
	if n := d.CloseHost("127.0.0.1:1"); n != 0 {
		t.Errorf("CloseHost of another port closed %d connections", n)
	}
	mustGet(t, d, a.URL+"/")
	mustGet(t, d, b.URL+"/")
	if n := a.accepts.Load(); n != 2 {
		t.Errorf("evicted host accepted %d connections, want 2 (a new one after CloseHost)", n)
	}
	if n := b.accepts.Load(); n != 1 {
		t.Errorf("other host accepted %d connections, want 1 (reused)", n)
	}
	if st := d.ConnStats(); st.ClosedIdle != 1 || st.Open != 2 {
		t.Errorf("ConnStats = %+v, want 1 closed idle and 2 open", st)
	}
	// A host name scope closes the host's connections on every port.
	if n := d.CloseHost("127.0.0.1"); n != 2 {
		t.Errorf("CloseHost(127.0.0.1) closed %d connections, want 2", n)
	}
}

// A connection written to after the close was asked stays open; one asked
// to close refuses a write with nothing written (net/http then retries the
// request on a new connection).
func TestConnsCloseIfQuiet(t *testing.T) {
	tr := newConnTracker(0, zerolog.Nop())
	c1, c2 := net.Pipe()
	defer c2.Close()
	go func() { _, _ = c2.Read(make([]byte, 16)) }()
	tc := &trackedConn{Conn: c1, t: tr, host: "h"}
	tr.open.Add(1)
	since := time.Now().UnixNano()
	tc.lastWrite.Store(since + 1)
	if tc.closeIfQuiet(since) {
		t.Fatal("a connection written to after the close began was closed")
	}
	if _, err := tc.Write([]byte("x")); err != nil {
		t.Fatalf("write after a refused close: %v", err)
	}
	tc.closing.Store(true)
	if n, err := tc.Write([]byte("y")); err == nil || n != 0 {
		t.Errorf("write on a closing connection = %d, %v; want 0 and an error", n, err)
	}
	if !tc.closeIfQuiet(time.Now().Add(time.Hour).UnixNano()) {
		t.Error("a quiet connection was not closed")
	}
	if tr.open.Load() != 0 {
		t.Errorf("open = %d after close", tr.open.Load())
	}
}

func TestConnBudget(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{0, 0},         // unknown: no budget
		{256, 32},      // tiny: a floor
		{1024, 768},    // ulimit -n 1024: 256 kept for the rest
		{20000, 15000}, // a quarter kept
		{1 << 40, 1 << 20},
	} {
		if got := connBudget(c.limit); got != c.want {
			t.Errorf("connBudget(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// The idle lifetime covers the crawl's delay: at least 3 x DOWNLOAD_DELAY.
func TestIdleTimeoutFromSettings(t *testing.T) {
	s := settings.New()
	if got := OptionsFromSettings(s).IdleTimeout; got != 120*time.Second {
		t.Errorf("default idle timeout %v, want 120s", got)
	}
	if err := s.Set("DOWNLOAD_DELAY", 60, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	if got := OptionsFromSettings(s).IdleTimeout; got != 180*time.Second {
		t.Errorf("idle timeout with DOWNLOAD_DELAY 60: %v, want 180s", got)
	}
	d := New(OptionsFromSettings(s))
	defer d.Close()
	if tr := d.rt.(*http.Transport); tr.IdleConnTimeout != 180*time.Second || tr.MaxIdleConns < 1 {
		t.Errorf("transport IdleConnTimeout %v, MaxIdleConns %d", tr.IdleConnTimeout, tr.MaxIdleConns)
	}
}

// The budget is logged as a warning when it is low for the crawl's
// concurrency or the open-file limit is low, as information otherwise.
func TestConnBudgetLogged(t *testing.T) {
	for _, c := range []struct {
		budget   int
		limit    uint64
		maxConns int
		level    string
	}{
		{300, 20000, 256, "warn"},   // under 2 x CONCURRENT_REQUESTS
		{768, 1024, 256, "warn"},    // ulimit -n 1024
		{15000, 20000, 256, "info"}, // room for many hosts
	} {
		var buf strings.Builder
		logBudget(zerolog.New(&buf), c.budget, c.limit, c.maxConns)
		out := buf.String()
		if !strings.Contains(out, `"level":"`+c.level+`"`) || !strings.Contains(out, fmt.Sprintf(`"budget":%d`, c.budget)) {
			t.Errorf("budget %d, limit %d: want a %s line naming the budget, got %s", c.budget, c.limit, c.level, out)
		}
	}
}
