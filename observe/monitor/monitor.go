package monitor

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pipeline"
)

// Options configure a Monitor. FromSettings fills them from the MONITOR_*
// settings; Go programs can build them directly.
type Options struct {
	// Checks run on every run, in this order.
	Checks []Check
	// Items, when not nil, validates the items (its Pipeline stage) and is
	// checked after Checks.
	Items *Items
	// Interval between runs while the crawl runs; 0 = only at its end.
	Interval time.Duration
	// ResultsFile is written after every run; "" = none.
	ResultsFile string
	// WebhookURL receives the Results (POST, JSON) when a check fails;
	// "" = none.
	WebhookURL string
	// WebhookTimeout bounds a webhook call; 0 = 10 s.
	WebhookTimeout time.Duration
	// Client sends the webhook calls; nil = http.DefaultClient.
	Client *http.Client
	// Clock times the runs; nil = the real clock. Use the crawl's.
	Clock clock.Clock
	// Log receives a line per failed check and per webhook problem.
	Log zerolog.Logger
	// Spider is the spider's name, written in the results.
	Spider string
}

// Source gives the crawl's current stats; *stats.Collector is one.
type Source interface {
	Snapshot() map[string]float64
}

// Monitor runs checks on a crawl: every Interval while it runs (Start)
// and once when it has ended (Finish). After each run it writes the
// Results to ResultsFile, and POSTs them to WebhookURL when a check failed
// (during the crawl, only when the set of failing checks changes, so that
// a lasting problem alerts once). Typical use:
//
//	mon := monitor.New(monitor.Options{Checks: []monitor.Check{monitor.MinItems{Min: 100}}, ResultsFile: "monitors.json"})
//	eng, err := engine.New(sp, set, engine.Options{Pipelines: mon.Pipelines()})
//	mon.Start(ctx, eng.Crawler().Stats)
//	res, err := eng.Run(ctx)
//	results := mon.Finish(ctx, res.Reason, res.Stats, res.Elapsed)
//	if !results.OK { ... results.Err() lists the failures ... }
//
// A nil *Monitor does nothing, so that code can call it whether or not
// monitors are configured.
type Monitor struct {
	opts  Options
	clock clock.Clock

	runMu     sync.Mutex // one run at a time
	lastAlert string     // failing checks of the last webhook call during the crawl

	start time.Time
	stop  chan struct{}
	done  chan struct{}

	afterRun func(Results) // tests: called after each run
}

// New returns a Monitor with opts.
func New(opts Options) *Monitor {
	m := &Monitor{opts: opts, clock: opts.Clock}
	if m.clock == nil {
		m.clock = clock.Real
	}
	if m.opts.Client == nil {
		m.opts.Client = http.DefaultClient
	}
	if m.opts.WebhookTimeout <= 0 {
		m.opts.WebhookTimeout = 10 * time.Second
	}
	return m
}

// Checks returns the checks a run makes, in order.
func (m *Monitor) Checks() []Check {
	if m == nil {
		return nil
	}
	cs := slices.Clone(m.opts.Checks)
	if m.opts.Items != nil {
		cs = append(cs, m.opts.Items)
	}
	return cs
}

// ResultsFile returns the file the results are written to, "" for none.
func (m *Monitor) ResultsFile() string {
	if m == nil {
		return ""
	}
	return m.opts.ResultsFile
}

// Pipelines returns the item validation stage (named "monitor_items") to
// add to the crawl's pipelines before the feed exports, or nil.
func (m *Monitor) Pipelines() []pipeline.Named {
	if m == nil || m.opts.Items == nil {
		return nil
	}
	return []pipeline.Named{{Name: "monitor_items", Stage: m.opts.Items}}
}

// Start begins the runs every Interval, reading the stats from src, until
// Finish or ctx is done. Without an Interval it only notes the start time.
func (m *Monitor) Start(ctx context.Context, src Source) {
	if m == nil {
		return
	}
	m.start = m.clock.Now()
	if m.opts.ResultsFile != "" {
		// The results of an earlier crawl must not pass for this one's.
		os.Remove(m.opts.ResultsFile)
	}
	if m.opts.Interval <= 0 || src == nil {
		return
	}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.loop(ctx, src)
}

func (m *Monitor) loop(ctx context.Context, src Source) {
	defer close(m.done)
	t := m.clock.NewTimer(m.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C():
			m.Run(ctx, Snapshot{Stats: src.Snapshot(), Elapsed: m.clock.Now().Sub(m.start)})
			t.Reset(m.opts.Interval)
		}
	}
}

// Finish stops the runs during the crawl and makes the final run on why
// the crawl ended, its final stats and its duration (engine.Result's
// Reason, Stats and Elapsed).
func (m *Monitor) Finish(ctx context.Context, reason string, stats map[string]float64, elapsed time.Duration) Results {
	if m == nil {
		return Results{OK: true, Final: true, Failures: []Failure{}, Checks: []CheckResult{}}
	}
	m.Stop()
	return m.Run(ctx, Snapshot{Stats: stats, Elapsed: elapsed, Final: true, Reason: reason})
}

// Stop ends the runs during the crawl without a final run (a crawl that
// could not run); Finish calls it.
func (m *Monitor) Stop() {
	if m == nil || m.stop == nil {
		return
	}
	close(m.stop)
	<-m.done
	m.stop = nil
}

// Run runs every check on snap now, writes the results file and calls the
// webhook as configured, and returns the results. Start and Finish call
// it; runs never overlap.
func (m *Monitor) Run(ctx context.Context, snap Snapshot) Results {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	r := Results{
		OK: true, Final: snap.Final, Spider: m.opts.Spider,
		CheckedAt: m.clock.Now().UTC().Truncate(time.Second),
		Failures:  []Failure{}, Checks: []CheckResult{},
	}
	var failing []string
	for _, c := range m.Checks() {
		out := safeCheck(ctx, c, snap)
		r.Checks = append(r.Checks, CheckResult{Monitor: c.Name(), OK: out.OK, Detail: out.Detail})
		if !out.OK {
			r.OK = false
			r.Failures = append(r.Failures, Failure{Monitor: c.Name(), Reason: out.Detail})
			failing = append(failing, c.Name())
			m.opts.Log.Error().Str("monitor", c.Name()).Bool("final", snap.Final).Str("reason", out.Detail).Msg("monitor failed")
		}
	}
	if path := m.opts.ResultsFile; path != "" {
		if err := r.WriteFile(path); err != nil {
			m.opts.Log.Error().Err(err).Str("file", path).Msg("cannot write MONITOR_RESULTS_FILE")
		}
	}
	if r.OK && !snap.Final {
		m.lastAlert = "" // recovered: the next failure alerts again
	}
	if m.opts.WebhookURL != "" && !r.OK {
		key := strings.Join(failing, ",")
		if snap.Final || key != m.lastAlert {
			if !snap.Final {
				m.lastAlert = key
			}
			if err := r.Post(ctx, m.opts.Client, m.opts.WebhookURL, m.opts.WebhookTimeout); err != nil {
				m.opts.Log.Error().Err(err).Msg("monitor webhook failed (MONITOR_WEBHOOK_URL)")
			}
		}
	}
	if r.OK && snap.Final && len(r.Checks) > 0 {
		m.opts.Log.Info().Int("checks", len(r.Checks)).Msg("monitors passed")
	}
	if m.afterRun != nil {
		m.afterRun(r)
	}
	return r
}

// safeCheck runs c, turning a panic into a failure of c.
func safeCheck(ctx context.Context, c Check, snap Snapshot) (out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			out = Fail("the check panicked: %v", v)
		}
	}()
	return c.Check(ctx, snap)
}
