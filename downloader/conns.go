package downloader

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Connections on a broad crawl.
//
// A polite crawl of many hosts asks each host about once per delay (a
// second by default in new projects), so a connection is idle for most of
// its life. The tuned transport keeps one idle connection per host for
// DOWNLOAD_IDLE_TIMEOUT (at least three times DOWNLOAD_DELAY), and up to
// the crawl's connection budget of them in all: the open-file limit
// (RLIMIT_NOFILE, raised to its hard limit at start) minus a reserve for
// the rest of the process, or DOWNLOAD_MAX_CONNECTIONS.
//
// The design is one net/http Transport with a counting dialer (connTracker)
// rather than a transport per host:
//
//   - the budget is a semaphore taken by every dial and given back when the
//     connection closes, so open connections never exceed it: a dial that
//     finds it full waits (once logged) instead of failing with "too many
//     open files". The transport's MaxIdleConns is the budget less the
//     crawl's concurrency, so when the budget is full, a request completing
//     pushes the least recently used idle connection out and frees a place;
//   - the tracker knows each open connection's host, so the connections of
//     a host whose throttling scope was evicted (idle for
//     THROTTLING_SCOPE_MAX_IDLE, or beyond THROTTLING_SCOPE_LIMIT) are
//     closed at once (CloseHost), while http.Transport can only close every
//     idle connection of every host.
//
// A connection is closed by CloseHost only when nothing was written on it
// since the close was asked: an eviction means no request of the host is in
// flight, and a request that picks the connection at that very moment finds
// its first write refused with nothing sent, which net/http answers by
// retrying the request on a new connection.
type connTracker struct {
	budget int           // most open connections; 0 = no limit
	sem    chan struct{} // one token per open connection (nil: no limit)
	log    zerolog.Logger

	mu     sync.Mutex
	byHost map[string]map[*trackedConn]struct{} // by host name (no port)

	dials   atomic.Int64
	open    atomic.Int64
	peak    atomic.Int64
	waits   atomic.Int64
	closed  atomic.Int64 // by CloseHost
	logOnce sync.Once
	// starved is called when a dial has waited starveAfter for a place:
	// the transport's CloseIdleConnections, for connections MaxIdleConns
	// does not count (HTTP/2).
	starved     func()
	starveAfter time.Duration
}

func newConnTracker(budget int, log zerolog.Logger) *connTracker {
	t := &connTracker{budget: budget, log: log, byHost: map[string]map[*trackedConn]struct{}{}, starveAfter: 5 * time.Second}
	if budget > 0 {
		t.sem = make(chan struct{}, budget)
	}
	return t
}

// ConnStats are the downloader's connection counters.
type ConnStats struct {
	// Budget is the most connections open at once (0: no limit).
	Budget int
	// Dials counts the connections opened so far.
	Dials int64
	// Open is the number of connections open now, Peak the most open at
	// once so far.
	Open, Peak int64
	// Waits counts the dials that waited for a place in the budget.
	Waits int64
	// ClosedIdle counts the connections closed because their host's
	// throttling scope was evicted.
	ClosedIdle int64
}

func (t *connTracker) stats() ConnStats {
	return ConnStats{Budget: t.budget, Dials: t.dials.Load(), Open: t.open.Load(), Peak: t.peak.Load(), Waits: t.waits.Load(), ClosedIdle: t.closed.Load()}
}

// acquire takes a place in the budget for a new connection to addr,
// waiting for one when the budget is full.
func (t *connTracker) acquire(ctx context.Context, addr string) error {
	if t.sem == nil {
		return nil
	}
	select {
	case t.sem <- struct{}{}:
		return nil
	default:
	}
	t.waits.Add(1)
	t.logOnce.Do(func() {
		t.log.Warn().Int("budget", t.budget).Str("addr", addr).
			Msg("connection budget reached: new connections wait for an open one to close (DOWNLOAD_MAX_CONNECTIONS, bounded by the open-file limit: ulimit -n)")
	})
	timer := time.NewTimer(t.starveAfter)
	defer timer.Stop()
	for {
		select {
		case t.sem <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			if t.starved != nil {
				t.starved()
			}
			timer.Reset(t.starveAfter)
		}
	}
}

func (t *connTracker) release() {
	if t.sem != nil {
		<-t.sem
	}
}

// dialer wraps dial: every connection takes a place in the budget and is
// tracked by host until it closes.
func (t *connTracker) dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := t.acquire(ctx, addr); err != nil {
			return nil, err
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			t.release()
			return nil, err
		}
		t.dials.Add(1)
		n := t.open.Add(1)
		for p := t.peak.Load(); n > p && !t.peak.CompareAndSwap(p, n); p = t.peak.Load() {
		}
		host, port, _ := net.SplitHostPort(addr)
		tc := &trackedConn{Conn: c, t: t, host: strings.ToLower(host), port: port, lr: newLazyReader(c)}
		t.mu.Lock()
		set := t.byHost[tc.host]
		if set == nil {
			set = map[*trackedConn]struct{}{}
			t.byHost[tc.host] = set
		}
		set[tc] = struct{}{}
		t.mu.Unlock()
		return tc, nil
	}
}

// closeHost closes the connections to scope, a throttling scope's name: a
// host ("example.com", every port) or a host and port ("127.0.0.1:8080",
// "[::1]:8080"). Only connections with nothing written since the call
// began are closed. It returns how many it closed.
func (t *connTracker) closeHost(scope string) int {
	host, port := scope, ""
	if h, p, err := net.SplitHostPort(scope); err == nil {
		host, port = h, p
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	since := time.Now().UnixNano()
	t.mu.Lock()
	var victims []*trackedConn
	for c := range t.byHost[host] {
		if port == "" || c.port == port {
			victims = append(victims, c)
		}
	}
	t.mu.Unlock()
	n := 0
	for _, c := range victims {
		if c.closeIfQuiet(since) {
			n++
		}
	}
	t.closed.Add(int64(n))
	return n
}

// trackedConn is a connection counted in the budget.
type trackedConn struct {
	net.Conn
	t          *connTracker
	host, port string
	lastWrite  atomic.Int64 // UnixNano of the last write's start
	closing    atomic.Bool
	once       sync.Once
	lr         *lazyReader // nil: reads go to Conn (see lazyread.go)
	wire       wireWaiters // requests whose wire report waits for the flush (wire.go)
}

// Read reads through the connection's lazyReader when it has one: no
// buffer is held while the connection waits for data.
func (c *trackedConn) Read(p []byte) (int, error) {
	if c.lr == nil {
		return c.Conn.Read(p)
	}
	return c.lr.read(p)
}

// errClosingIdle refuses a write on a connection CloseHost is closing:
// nothing was written, so net/http retries the request elsewhere.
var errClosingIdle = &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}

func (c *trackedConn) Write(p []byte) (int, error) {
	c.lastWrite.Store(time.Now().UnixNano())
	if c.closing.Load() {
		return 0, errClosingIdle
	}
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.wrote()
	}
	return n, err
}

// closeIfQuiet closes c unless a write began at or after since. With the
// write's order (mark the time, then check closing) and this one (mark
// closing, then check the time), a write and a close cannot both go on.
func (c *trackedConn) closeIfQuiet(since int64) bool {
	c.closing.Store(true)
	if c.lastWrite.Load() >= since {
		c.closing.Store(false)
		return false
	}
	_ = c.Close()
	return true
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.t.mu.Lock()
		if set := c.t.byHost[c.host]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(c.t.byHost, c.host)
			}
		}
		c.t.mu.Unlock()
		c.t.open.Add(-1)
		c.t.release()
	})
	return err
}

// newConns returns the connection tracker of a downloader with opts and the
// transport's MaxIdleConns (0: no limit), logging the budget once per
// process.
func newConns(opts Options) (*connTracker, int) {
	budget := opts.MaxOpenConns
	limit := openFileLimit(opts.Log)
	switch {
	case budget < 0:
		budget = 0
	case budget == 0:
		budget = connBudget(limit)
	case budget == 1:
		budget = 2 // one idle connection and one for a new host
	}
	budgetLogOnce.Do(func() { logBudget(opts.Log, budget, limit, opts.MaxConns) })
	t := newConnTracker(budget, opts.Log)
	idle := 0 // no limit
	if budget > 0 {
		// Room for the requests in flight, so that a completing request
		// pushes the least recently used idle connection out when the
		// budget is full: never the whole budget, or a dial could wait
		// for connections that nothing will close.
		idle = min(max(budget-opts.MaxConns, budget/2), budget-1)
	}
	return t, idle
}

// budgetLogOnce logs the connection budget once per process.
var budgetLogOnce sync.Once

// lowOpenFileLimit is the open-file limit under which the connection
// budget is logged as a warning: a broad crawl outgrows it.
const lowOpenFileLimit = 4096

// logBudget logs the connection budget: as a warning when it is low for
// the crawl's concurrency or the open-file limit is low.
func logBudget(log zerolog.Logger, budget int, limit uint64, maxConns int) {
	if budget > 0 && (budget < 2*maxConns || limit > 0 && limit < lowOpenFileLimit) {
		log.Warn().Int("budget", budget).Uint64("open_file_limit", limit).Int("CONCURRENT_REQUESTS", maxConns).
			Msg("low connection budget: a crawl of more hosts than it holds keeps fewer connections open between requests and dials more; " +
				"new connections wait for a place rather than fail (raise the open-file limit, ulimit -n, or DOWNLOAD_MAX_CONNECTIONS)")
		return
	}
	log.Info().Int("budget", budget).Uint64("open_file_limit", limit).
		Msg("connection budget: the most connections open at once, idle ones included (DOWNLOAD_MAX_CONNECTIONS; 0 derives it from the open-file limit, ulimit -n)")
}

// connBudget is the default connection budget for an open-file limit of
// limit: a quarter of it (at least 256) is kept for everything else the
// process opens (JOBDIR's files, logs, DNS, Redis, a browser's pipes), the
// rest is for connections. 0 means the limit is unknown (no budget).
func connBudget(limit uint64) int {
	if limit == 0 {
		return 0
	}
	reserve := max(limit/4, 256)
	if limit <= reserve+32 {
		return 32
	}
	return int(min(limit-reserve, 1<<20))
}

var fdLimitOnce sync.Once
var fdLimit uint64

// openFileLimit raises the soft open-file limit to the hard limit (once
// per process, where the system allows it) and returns the limit in
// force, 0 when unknown.
func openFileLimit(log zerolog.Logger) uint64 {
	fdLimitOnce.Do(func() {
		cur, before, raised, err := raiseOpenFileLimit()
		fdLimit = cur
		switch {
		case err != nil:
			log.Debug().Err(err).Msg("cannot read or raise the open-file limit")
		case raised:
			log.Info().Uint64("from", before).Uint64("to", cur).Msg("open-file limit raised to its hard limit")
		}
	})
	return fdLimit
}
