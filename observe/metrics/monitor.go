package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Crawl is what a Monitor reads from the running crawl; *engine.Engine
// satisfies it.
type Crawl interface {
	Throttler() *throttling.Throttler
	Crawler() *spider.Crawler
}

// MonitorOptions configure a Monitor beyond its settings.
type MonitorOptions struct {
	// Clock defaults to the real clock; use the crawl's clock.
	Clock clock.Clock
	// Terminal is where the live progress display is drawn (usually
	// os.Stderr). Nil means no live display.
	Terminal io.Writer
}

// Monitor measures one crawl and reports it the ways the settings ask:
// the Recorder observes every request; Start begins the LOGSTATS_INTERVAL
// progress line, the live display (PROGRESS_DISPLAY) and the Prometheus
// endpoint (METRICS_ADDR); Finish stops them, writes the metrics into the
// stats and writes STATS_DUMP_FILE. Typical use:
//
//	mon, err := metrics.NewMonitor(set, metrics.MonitorOptions{Terminal: os.Stderr})
//	logOut := mon.LogWriter(os.Stderr) // log through it: keeps the live line intact
//	eng, err := engine.New(sp, set, engine.Options{Log: log, Observers: []engine.Observer{mon.Recorder()}})
//	if err := mon.Start(eng); err != nil { ... }
//	res, err := eng.Run(ctx)
//	snap, err := mon.Finish(res.Reason)
//	metrics.WriteSummary(os.Stderr, snap, set.Int("METRICS_SUMMARY_SCOPES"))
type Monitor struct {
	set    *settings.Settings
	clock  clock.Clock
	rec    *Recorder
	series *SeriesRecorder
	live   *Live

	crawl  Crawl
	pages  map[string]http.Handler
	cancel context.CancelFunc
	wg     sync.WaitGroup
	srv    *Server
	once   sync.Once
}

// NewMonitor prepares the measurements of one crawl with settings set.
func NewMonitor(set *settings.Settings, opts MonitorOptions) (*Monitor, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	m := &Monitor{set: set, clock: opts.Clock,
		rec: NewRecorder(RecorderOptions{Clock: opts.Clock, BackoffCodes: set.Ints("BACKOFF_HTTP_CODES")})}
	m.series = NewSeriesRecorder(m.rec, SeriesOptions{Interval: set.Seconds("METRICS_SERIES_INTERVAL"),
		Scopes: orNone(set.Int("METRICS_SERIES_SCOPES")), Points: set.Int("METRICS_SERIES_POINTS"), State: m.scopeState})
	if opts.Terminal != nil {
		switch set.String("PROGRESS_DISPLAY") {
		case "on":
			m.live = NewLive(opts.Terminal)
		case "auto":
			if f, ok := opts.Terminal.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
				m.live = NewLive(opts.Terminal)
			}
		}
	}
	return m, nil
}

// Recorder returns the engine observer to pass in engine.Options.Observers.
func (m *Monitor) Recorder() *Recorder { return m.rec }

// LogWriter returns the writer logs to the terminal should use: w itself,
// or, with a live display, a writer that keeps the display's line intact.
func (m *Monitor) LogWriter(w io.Writer) io.Writer {
	if m.live == nil {
		return w
	}
	return m.live.Writer()
}

// Start begins the reporters for crawl c: the progress line, the live
// display and the Prometheus endpoint. Call it after engine.New and before
// Run. An error (METRICS_ADDR cannot be listened on) leaves nothing running.
func (m *Monitor) Start(c Crawl) error {
	m.crawl = c
	cr := c.Crawler()
	if addr := m.set.String("METRICS_ADDR"); addr != "" {
		reg := prometheus.NewRegistry()
		exp := NewExporter(m.rec, ExporterOptions{States: c.Throttler(), Stats: cr.Stats, ScopeLimit: m.set.Int("METRICS_SCOPE_LABEL_LIMIT")})
		for _, c := range []prometheus.Collector{exp, collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
		}
		srv, err := ServePages(addr, reg, m.pages)
		if err != nil {
			return err
		}
		m.srv = srv
		ev := cr.Log.Info().Str("metrics", "http://"+srv.Addr()+"/metrics")
		if _, ok := m.pages["/"]; ok {
			ev = ev.Str("report", "http://"+srv.Addr()+"/")
		}
		ev.Msg("serving Prometheus metrics and the live report")
		if AllInterfaces(addr) {
			cr.Log.Warn().Str("METRICS_ADDR", addr).
				Msg("the metrics endpoint listens on every network interface: anyone who can reach this machine can read the crawl's hosts, stats and live report; use 127.0.0.1:PORT to keep it local")
		}
	}
	now := m.clock.Now()
	m.rec.Begin(now)
	m.series.Begin(now)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sampleSeries(ctx)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		LogProgress(ctx, m.clock, m.set.Seconds("LOGSTATS_INTERVAL"), m.rec, cr.Stats, cr.Log)
	}()
	if m.live != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.live.Run(ctx, m.clock, 250*time.Millisecond, m.rec, cr.Stats)
		}()
	}
	return nil
}

// Handle adds a page to the METRICS_ADDR server, beside /metrics (the CLI
// adds the live report at "/"). Call it before Start.
func (m *Monitor) Handle(pattern string, h http.Handler) {
	if m.pages == nil {
		m.pages = map[string]http.Handler{}
	}
	m.pages[pattern] = h
}

// MetricsAddr returns the address of the Prometheus endpoint, "" when off.
func (m *Monitor) MetricsAddr() string {
	if m.srv == nil {
		return ""
	}
	return m.srv.Addr()
}

// Snapshot returns the measurements so far.
func (m *Monitor) Snapshot() Snapshot {
	var ts ThrottleStates
	if m.crawl != nil {
		ts = m.crawl.Throttler()
	}
	return m.rec.Snapshot(ts)
}

// Finish ends the measurements of a crawl that ended with reason: it stops
// the reporters, writes the metrics into the crawl's stats (see WriteStats)
// and, when STATS_DUMP_FILE is set, the JSON and per-scope CSV files. It
// returns the final snapshot; calling it again returns a fresh snapshot
// and does nothing else.
func (m *Monitor) Finish(reason string) (Snapshot, error) {
	var err error
	m.once.Do(func() {
		end := m.clock.Now()
		m.rec.End(end)
		if m.cancel != nil {
			m.cancel()
			m.wg.Wait()
		}
		if m.srv != nil {
			_ = m.srv.Close()
		}
		if m.crawl == nil {
			return
		}
		m.series.Flush(end)
		st := m.crawl.Crawler().Stats
		WriteStats(st, m.Snapshot(), m.set.Int("METRICS_SCOPE_STATS_LIMIT"))
		if path := m.set.String("STATS_DUMP_FILE"); path != "" {
			err = WriteDump(path, m.Dump(reason))
		}
	})
	return m.Snapshot(), err
}

// Dump returns what STATS_DUMP_FILE receives, as of now: the stats, the
// snapshot, the time series and each scope's limits. It is what `gocrawl
// report` renders, and what the live page at METRICS_ADDR shows.
func (m *Monitor) Dump(reason string) Dump {
	snap := m.Snapshot()
	series := m.series.Series()
	d := Dump{Reason: reason, Metrics: snap, Series: &series, Limits: map[string]ScopeLimits{}}
	if m.crawl != nil {
		cr := m.crawl.Crawler()
		d.Stats = cr.Stats.Snapshot()
		if cr.Spider != nil {
			d.Spider = cr.Spider.Name()
		}
	}
	for _, sc := range snap.Scopes {
		if st, ok := m.scopeState(sc.Scope); ok {
			d.Limits[sc.Scope] = ScopeLimits{ConfiguredDelay: st.ConfiguredDelay, ConfiguredConcurrency: st.ConfiguredConcurrency,
				Delay: st.Delay, Concurrency: st.Concurrency, BackoffLevel: st.BackoffLevel}
		}
	}
	return d
}

// sampleSeries samples the time series every interval until ctx ends.
func (m *Monitor) sampleSeries(ctx context.Context) {
	iv := m.series.Interval()
	t := m.clock.NewTimer(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		m.series.Sample(m.clock.Now())
		t.Reset(iv)
	}
}

// orNone maps a 0 setting ("no scope series") to SeriesOptions' "none".
func orNone(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// scopeState is the throttler's view of a scope for the series and the
// limits of the dump.
func (m *Monitor) scopeState(scope string) (ScopeState, bool) {
	if m.crawl == nil || m.crawl.Throttler() == nil {
		return ScopeState{}, false
	}
	return stateOf(m.crawl.Throttler(), scope)
}
