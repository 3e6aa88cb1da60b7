package throttling_test

// BenchmarkRateControl measures the rate controller's cases on
// the wall clock, server-side: a crawl with the defaults (concurrency 50)
// against devtools/simsite on 127.0.0.1, 5 runs of each case side by side
// (each with its own site and engine; the crawls are light), judged from
// the site's records. Run it alone, with -benchtime 1x (about 20 minutes):
//
//	go test -run '^$' -bench RateControl -benchtime 1x -timeout 60m -v ./throttling/
//
// Each case logs one row of the table in docs/performance.md and reports
// its main figures as metrics. The same cases run on fake time in the
// default test run (ratecontrol_e2e_test.go).

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

const benchRuns = 5

func benchCases() []rateCase {
	rampup := []any{"THROTTLING_SCOPES", map[string]any{"strict": map[string]any{"rampup": true}}}
	return []rateCase{
		{name: "R=2, Retry-After", rate: 2, pages: 500},
		{name: "R=10, Retry-After", rate: 10, pages: 500},
		{name: "R=50, Retry-After", rate: 50, pages: 2500},
		{name: "R=10, bare 429, defaults", rate: 10, bare: true, duration: 60 * time.Second},
		{name: "R=10, bare 429, rampup", rate: 10, bare: true, pages: 500, settings: rampup},
		{name: "R=10, bare 503, defaults", rate: 10, bare: true, status: 503, duration: 60 * time.Second},
		{name: "R=10, bare 503, rampup", rate: 10, bare: true, status: 503, pages: 500, settings: rampup},
		{name: "R=10, RateLimit-Limit/-Remaining/-Reset", rate: 10, pages: 500, headers: simsite.RateLimitSeparate},
		{name: "R=10, RateLimit + RateLimit-Policy", rate: 10, pages: 500, headers: simsite.RateLimitStructured},
		{name: "R drops 10 -> 4 at 30 s", rate: 10, schedule: []simsite.RateChange{{After: 30 * time.Second, Rate: 4}}, duration: 60 * time.Second},
		{name: "R rises 4 -> 10 at 30 s", rate: 4, schedule: []simsite.RateChange{{After: 30 * time.Second, Rate: 10}}, duration: 120 * time.Second},
		{name: "capacity 4 x 50 ms, latency control", capacity: 4, duration: 30 * time.Second,
			latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 50 * time.Millisecond}},
		{name: "capacity 4 x 50 ms, latency control off", capacity: 4, duration: 30 * time.Second,
			latency:  simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 50 * time.Millisecond},
			settings: []any{"THROTTLING_LATENCY_CONTROL", false}},
	}
}

// runParallel runs c benchRuns times side by side.
func runParallel(b *testing.B, c rateCase) []rateResult {
	out := make([]rateResult, benchRuns)
	errs := make([]error, benchRuns)
	var wg sync.WaitGroup
	for i := range benchRuns {
		wg.Go(func() { out[i], errs[i] = runRateCaseWall(c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func BenchmarkRateControl(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rs := runParallel(b, c)
				row, metrics := summarize(c, rs)
				b.Logf("| %s | %s |", c.name, row)
				for k, v := range metrics {
					b.ReportMetric(v, k)
				}
			}
		})
	}
	b.Run("lenient second host", func(b *testing.B) {
		for b.Loop() {
			var with, alone []float64
			for range benchRuns { // one at a time: the lenient host is CPU-bound
				r, err := runRateCaseWall(rateCase{rate: 10, pages: 200, lenient: 500})
				if err != nil {
					b.Fatal(err)
				}
				a, err := runRateCaseWall(rateCase{alone: true, lenient: 500})
				if err != nil {
					b.Fatal(err)
				}
				with, alone = append(with, r.lenientSeconds), append(alone, a.lenientSeconds)
			}
			var ratio []float64
			for i := range with {
				ratio = append(ratio, with[i]/alone[i])
			}
			rm, _ := medianMin(ratio)
			b.Logf("| lenient host, 500 pages, with the R=10 host (200 pages) / alone | finish %s s / %s s, ratio median %.2f, max %.2f |",
				fmtList(with, "%.2f"), fmtList(alone, "%.2f"), rm, slices.Max(ratio))
			b.ReportMetric(rm, "ratio-median")
		}
	})
}

// summarize is a case's table row and metrics over its runs.
func summarize(c rateCase, rs []rateResult) (string, map[string]float64) {
	limit := c.rate
	if c.capacity > 0 {
		limit = float64(c.capacity) / c.latency.Fixed.Seconds()
	}
	if c.schedule != nil {
		limit = c.schedule[len(c.schedule)-1].Rate
	}
	var whole, steady, refused, inFlight []float64
	viol := 0
	for _, r := range rs {
		whole = append(whole, 100*r.okRate/limit)
		steady = append(steady, 100*r.okRateIn(10, int(r.seconds))/limit)
		refused = append(refused, 100*r.refusedShare)
		inFlight = append(inFlight, r.inFlight)
		viol += r.violations
	}
	wm, wl := medianMin(whole)
	sm, sl := medianMin(steady)
	rm, _ := medianMin(refused)
	m := map[string]float64{"%ok-median": wm, "%ok-min": wl, "%refused-median": rm, "inside-retry-after": float64(viol)}
	row := fmt.Sprintf("%.1f %% / %.1f %% | %.1f %% / %.1f %% | %.2f %% / %.2f %% | %d",
		wm, wl, sm, sl, rm, slices.Max(refused), viol)
	switch {
	case c.capacity > 0:
		im, _ := medianMin(inFlight)
		row += fmt.Sprintf(" | %.1f in flight (median)", im)
		m["in-flight"] = im
	case c.schedule != nil && c.schedule[0].Rate < c.rate:
		at := int(c.schedule[0].After.Seconds())
		var after, extra []float64
		for _, r := range rs {
			after = append(after, r.okRateIn(at+10, at+20))
			extra = append(extra, float64(r.refusedIn(at, at+20)))
		}
		am, al := medianMin(after)
		row += fmt.Sprintf(" | ok/s 10-20 s after the drop: %.2f median, %.2f min; refusals in the 20 s after: %s", am, al, fmtList(extra, "%.0f"))
		m["ok/s-after-drop"] = am
	case c.schedule != nil:
		at := int(c.schedule[0].After.Seconds())
		var reach []float64
		for _, r := range rs {
			reach = append(reach, float64(r.reachedAt(at, 0.9*limit)-at))
		}
		row += fmt.Sprintf(" | seconds to 90 %% of the new limit (5 s windows): %s", fmtList(reach, "%.0f"))
		rm, _ := medianMin(reach)
		m["s-to-90%"] = rm
	}
	return row, m
}

func fmtList(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, " · ")
}
