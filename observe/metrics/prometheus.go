package metrics

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gocrawl/gocrawl/observe/stats"
)

// OtherScope is the scope label value that sums every scope past the label
// limit.
const OtherScope = "other"

// Exporter is a prometheus.Collector that reads a Recorder (and optionally
// the throttler and the stats) at scrape time, so the crawl's hot path does
// no Prometheus work at all. It exports:
//
//	gocrawl_inflight                        gauge    requests in flight
//	gocrawl_inflight_per_scope{scope}       gauge
//	gocrawl_admissions_total                counter  requests started (retries and redirects included)
//	gocrawl_responses_total{scope,status}   counter  responses by status code
//	gocrawl_http_429_total{scope}           counter
//	gocrawl_download_errors_total{kind}     counter  download errors by downloader error kind
//	gocrawl_scope_delay_seconds{scope}      gauge    the throttler's current delay
//	gocrawl_scope_backoff_level{scope}      gauge    the throttler's backoff level
//	gocrawl_scope_blocked_seconds{scope}    gauge    time left of a Retry-After (or other hard delay)
//	gocrawl_queue_size                      gauge    requests waiting in the scheduler
//	gocrawl_items_total                     counter  items scraped
//
// Scope label cardinality is bounded: the first limit scopes (chosen by
// requests among the scopes present at the scrapes that still had free
// labels) keep their own label for the whole crawl, and every later scope
// is summed under scope="other" (max for delay, backoff level and blocked
// time). A scope
// never moves between labels, so every counter series stays monotonic.
type Exporter struct {
	rec    *Recorder
	states ThrottleStates
	stats  *stats.Collector
	queue  func() int
	limit  int

	mu       sync.Mutex
	labelled map[string]bool

	inflight, inflightScope, admissions, responses, http429, dlErrors, delay, level, blocked, queueSize, items *prometheus.Desc
	recrawlPages, recrawlNotModified, recrawlOldestDue                                                         *prometheus.Desc
}

// ExporterOptions are the optional sources of an Exporter.
type ExporterOptions struct {
	// States gives the scopes' delay and backoff level (the throttler).
	States ThrottleStates
	// Stats gives gocrawl_items_total (item_scraped_count) and, without
	// Queue, gocrawl_queue_size (scheduler/enqueued - scheduler/dequeued).
	Stats *stats.Collector
	// Queue returns the scheduler's queue length.
	Queue func() int
	// ScopeLimit bounds the scope label values (METRICS_SCOPE_LABEL_LIMIT);
	// <= 0 means 20.
	ScopeLimit int
}

// NewExporter returns an Exporter of rec.
func NewExporter(rec *Recorder, opts ExporterOptions) *Exporter {
	if opts.ScopeLimit <= 0 {
		opts.ScopeLimit = 20
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("gocrawl_"+name, help, labels, nil)
	}
	return &Exporter{
		rec: rec, states: opts.States, stats: opts.Stats, queue: opts.Queue, limit: opts.ScopeLimit,
		labelled:      map[string]bool{},
		inflight:      d("inflight", "Requests in flight (sent, not finished)."),
		inflightScope: d("inflight_per_scope", "Requests in flight per throttling scope.", "scope"),
		admissions:    d("admissions_total", "Requests started: first attempts, retries and redirects."),
		responses:     d("responses_total", "Responses received, by throttling scope and status code.", "scope", "status"),
		http429:       d("http_429_total", "HTTP 429 (Too Many Requests) responses per throttling scope.", "scope"),
		dlErrors:      d("download_errors_total", "Download errors (timeouts, connection failures) by error kind.", "kind"),
		delay:         d("scope_delay_seconds", "Current delay between requests of a throttling scope.", "scope"),
		level:         d("scope_backoff_level", "Current backoff level of a throttling scope (0 = not backing off).", "scope"),
		blocked:       d("scope_blocked_seconds", "Time left before a throttling scope may send again after a Retry-After, RateLimit-Reset or DelayScope.", "scope"),
		queueSize:     d("queue_size", "Requests waiting in the scheduler."),
		items:         d("items_total", "Items scraped."),

		recrawlPages:       d("recrawl_pages_total", "Responses by what they tell of the page since its last visit (docs/recrawl.md).", "change"),
		recrawlNotModified: d("recrawl_not_modified_total", "Revisits answered 304 Not Modified."),
		recrawlOldestDue:   d("recrawl_oldest_due_age_seconds", "Freshness in continuous mode: how long the most overdue URL has been due (0: none is overdue)."),
	}
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{e.inflight, e.inflightScope, e.admissions, e.responses, e.http429,
		e.dlErrors, e.delay, e.level, e.blocked, e.queueSize, e.items, e.recrawlPages, e.recrawlNotModified, e.recrawlOldestDue} {
		ch <- d
	}
}

// scopeAgg is what one scope label value reports.
type scopeAgg struct {
	inflight, r429 int64
	statuses       map[int]int64
	delay, blocked float64
	level          int
}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	s := e.rec.Snapshot(e.states)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(e.inflight, float64(s.Global.InFlight))
	counter(e.admissions, float64(s.Global.Requests))
	for kind, n := range s.ErrorKinds {
		counter(e.dlErrors, float64(n), kind)
	}

	aggs := map[string]*scopeAgg{}
	e.mu.Lock()
	for _, sc := range s.Scopes { // most requested first
		label := sc.Scope
		if !e.labelled[label] {
			if len(e.labelled) < e.limit {
				e.labelled[label] = true
			} else {
				label = OtherScope
			}
		}
		a := aggs[label]
		if a == nil {
			a = &scopeAgg{statuses: map[int]int64{}}
			aggs[label] = a
		}
		a.inflight += sc.InFlight
		a.r429 += sc.HTTP429
		for st, n := range sc.Statuses {
			a.statuses[st] += n
		}
		a.delay = max(a.delay, sc.Delay.Seconds())
		a.level = max(a.level, sc.BackoffLevel)
		a.blocked = max(a.blocked, sc.BlockedFor.Seconds())
	}
	e.mu.Unlock()
	for label, a := range aggs {
		gauge(e.inflightScope, float64(a.inflight), label)
		counter(e.http429, float64(a.r429), label)
		gauge(e.delay, a.delay, label)
		gauge(e.level, float64(a.level), label)
		gauge(e.blocked, a.blocked, label)
		codes := slices.Sorted(maps.Keys(a.statuses))
		for _, code := range codes {
			counter(e.responses, float64(a.statuses[code]), label, strconv.Itoa(code))
		}
	}

	switch {
	case e.queue != nil:
		gauge(e.queueSize, float64(e.queue()))
	case e.stats != nil:
		gauge(e.queueSize, max(0, e.stats.Get("scheduler/enqueued")-e.stats.Get("scheduler/dequeued")))
	}
	if e.stats != nil {
		counter(e.items, e.stats.Get(stats.ItemScrapedCount))
		for _, c := range []string{"new", "changed", "unchanged", "gone"} {
			counter(e.recrawlPages, e.stats.Get("recrawl/"+c), c)
		}
		counter(e.recrawlNotModified, e.stats.Get("recrawl/not_modified"))
		gauge(e.recrawlOldestDue, e.stats.Get("recrawl/oldest_due_age_seconds"))
	}
}

// Server serves a Prometheus registry over HTTP at /metrics.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve listens on addr (METRICS_ADDR, e.g. "127.0.0.1:9410"; port 0 picks
// a free one) and serves reg at /metrics until Close. (Monitor registers
// the Go runtime and process collectors beside the Exporter.)
func Serve(addr string, reg *prometheus.Registry) (*Server, error) { return ServePages(addr, reg, nil) }

// ServePages is Serve with more pages beside /metrics, by path pattern
// (net/http.ServeMux patterns, e.g. "/" for the live report).
func ServePages(addr string, reg *prometheus.Registry, pages map[string]http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for pattern, h := range pages {
		mux.Handle(pattern, h)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns when closed
	}()
	return s, nil
}

// AllInterfaces reports whether a listen address ("host:port") binds every
// network interface: an empty host (":9410"), 0.0.0.0 or [::].
func AllInterfaces(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to 2 s for scrapes in progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
