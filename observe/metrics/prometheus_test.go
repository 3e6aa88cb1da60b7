package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

// gather collects reg and returns "name{label=value,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			if len(m.GetLabel()) > 0 {
				key += "{"
				for i, l := range m.GetLabel() {
					if i > 0 {
						key += ","
					}
					key += l.GetName() + "=" + l.GetValue()
				}
				key += "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestExporterBoundsScopeLabels(t *testing.T) {
	rec := NewRecorder(RecorderOptions{Clock: clock.NewFake(t0)})
	hit := func(host string, n, status int) {
		for i := range n {
			r := req(t, fmt.Sprintf("http://%s/%d", host, i))
			rec.RequestStarted(t0, r, scopesOf(host))
			rec.RequestFinished(t0.Add(time.Millisecond), r, scopesOf(host), &spider.Response{Status: status}, nil)
		}
	}
	st := stats.New()
	st.Set("item_scraped_count", 7)
	st.Set("scheduler/enqueued", 50)
	st.Set("scheduler/dequeued", 38)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(rec, ExporterOptions{Stats: st, ScopeLimit: 2, States: fakeStates{{Scope: "c.example", Delay: 4, BackoffLevel: 2, BlockedUntil: t0.Add(1500 * time.Millisecond)}}}))

	hit("a.example", 5, 200)
	hit("b.example", 3, 429)
	hit("c.example", 1, 429)
	rec.RequestStarted(t0, req(t, "http://c.example/x"), scopesOf("c.example"))
	m := gather(t, reg)
	want := map[string]float64{
		"gocrawl_admissions_total": 10,
		"gocrawl_inflight":         1,
		"gocrawl_items_total":      7,
		"gocrawl_queue_size":       12,
		"gocrawl_responses_total{scope=a.example,status=200}": 5,
		"gocrawl_http_429_total{scope=b.example}":             3,
		"gocrawl_http_429_total{scope=other}":                 1,
		"gocrawl_inflight_per_scope{scope=other}":             1,
		"gocrawl_scope_delay_seconds{scope=other}":            4,
		"gocrawl_scope_backoff_level{scope=other}":            2,
		"gocrawl_responses_total{scope=other,status=429}":     1,
		"gocrawl_inflight_per_scope{scope=a.example}":         0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m["gocrawl_http_429_total{scope=c.example}"]; ok {
		t.Error("a scope past the label limit has its own series")
	}

	// A scope that becomes the busiest later still stays under "other":
	// labels never move, so counters stay monotonic.
	hit("d.example", 100, 200)
	m = gather(t, reg)
	if got := m["gocrawl_responses_total{scope=other,status=200}"]; got != 100 {
		t.Errorf("other 200s = %v, want 100", got)
	}
	if _, ok := m["gocrawl_responses_total{scope=d.example,status=200}"]; ok {
		t.Error("a late scope took a label")
	}
}

func TestAllInterfaces(t *testing.T) {
	for addr, want := range map[string]bool{
		":9411": true, "0.0.0.0:9411": true, "[::]:9411": true,
		"127.0.0.1:9411": false, "localhost:9411": false, "[::1]:0": false, "10.0.0.5:9411": false, "bad": false,
	} {
		if got := AllInterfaces(addr); got != want {
			t.Errorf("AllInterfaces(%q) = %v, want %v", addr, got, want)
		}
	}
}
