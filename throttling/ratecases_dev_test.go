package throttling_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
)

// TestRateCasesTable prints every case on fake time (GOCRAWL_RATE_TABLE=1),
// 5 runs each: median and minimum of the ok rate as a share of the limit,
// median and maximum of the refused share, and the case's own figures.
func TestRateCasesTable(t *testing.T) {
	if os.Getenv("GOCRAWL_RATE_TABLE") == "" {
		t.Skip("set GOCRAWL_RATE_TABLE=1 to print the table")
	}
	only := os.Getenv("GOCRAWL_RATE_CASE")
	runs := 5
	if n, err := strconv.Atoi(os.Getenv("GOCRAWL_RATE_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for _, c := range devCases() {
		if only != "" && only != c.name {
			continue
		}
		var share, steady, refused, extra []float64
		viol := 0
		for range runs {
			synctest.Test(t, func(t *testing.T) {
				r := runRateCaseLocal(t, c)
				limit := c.rate
				if c.capacity > 0 {
					limit = float64(c.capacity) / c.latency.Fixed.Seconds()
					extra = append(extra, r.inFlight)
				}
				if c.schedule != nil {
					limit = c.schedule[len(c.schedule)-1].Rate
				}
				share = append(share, r.okRate/limit)
				steady = append(steady, r.okRateIn(10, int(r.seconds))/limit)
				refused = append(refused, r.refusedShare)
				viol += r.violations
				if c.schedule != nil {
					at := int(c.schedule[0].After.Seconds())
					if c.schedule[0].Rate < c.rate { // drop: rate 10-20 s after, refusals in the 20 s after
						n := 0
						extra = append(extra, r.okRateIn(at+10, at+20), float64(r.refusedIn(at, at+20)))
						_ = n
					} else {
						extra = append(extra, float64(r.reachedAt(at, 0.9*c.schedule[0].Rate)-at))
					}
				}
				if os.Getenv("GOCRAWL_RATE_SERIES") != "" {
					t.Logf("%s per second: %v", c.name, r.perSecond)
					t.Logf("%s refused at (s): %.3v", c.name, r.refusedAt)
				}
			})
		}
		sm, sl := medianMin(share)
		tm, tl := medianMin(steady)
		rm, _ := medianMin(refused)
		rmax := slices.Max(refused)
		t.Logf("%-18s ok %5.1f%% med %5.1f%% min | steady %5.1f%% %5.1f%% | refused %.2f%% med %.2f%% max | %d in RA | %v",
			c.name, 100*sm, 100*sl, 100*tm, 100*tl, 100*rm, 100*rmax, viol, fmtExtra(extra))
	}
}

func fmtExtra(x []float64) string {
	var b strings.Builder
	for i, v := range x {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.3g", v)
	}
	return b.String()
}

func devCases() []rateCase {
	d := 120 * time.Second
	return []rateCase{
		{name: "R2", rate: 2, duration: d},
		{name: "R10", rate: 10, duration: d},
		{name: "R50", rate: 50, duration: d},
		{name: "R2-500p", rate: 2, pages: 500},
		{name: "R10-500p", rate: 10, pages: 500},
		{name: "R50-2500p", rate: 50, pages: 2500},
		{name: "bare429", rate: 10, bare: true, duration: d},
		{name: "bare429-rampup", rate: 10, bare: true, duration: d, settings: []any{"THROTTLING_SCOPES", map[string]any{"strict": map[string]any{"rampup": true}}}},
		{name: "bare503-rampup", rate: 10, bare: true, status: 503, duration: d, settings: []any{"THROTTLING_SCOPES", map[string]any{"strict": map[string]any{"rampup": true}}}},
		{name: "headers-separate", rate: 10, headers: simsite.RateLimitSeparate, duration: d},
		{name: "headers-structured", rate: 10, headers: simsite.RateLimitStructured, duration: d},
		{name: "drop10to4", rate: 10, schedule: []simsite.RateChange{{After: 40 * time.Second, Rate: 4}}, duration: 80 * time.Second},
		{name: "capacity4", capacity: 4, latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 50 * time.Millisecond}, duration: 60 * time.Second},
		{name: "capacity4-off", capacity: 4, latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 50 * time.Millisecond}, duration: 60 * time.Second,
			settings: []any{"THROTTLING_LATENCY_CONTROL", false}},
		{name: "R10-B20", rate: 10, burst: 20, duration: d},
		{name: "R100-B60", rate: 100, burst: 60, duration: d},
		{name: "rise4to10", rate: 4, schedule: []simsite.RateChange{{After: 40 * time.Second, Rate: 10}}, duration: 120 * time.Second},
	}
}

// TestRateCaseRecords prints a case's first records (GOCRAWL_RATE_RECORDS=name).
func TestRateCaseRecords(t *testing.T) {
	name := os.Getenv("GOCRAWL_RATE_RECORDS")
	if name == "" {
		t.Skip("set GOCRAWL_RATE_RECORDS=case")
	}
	for _, c := range devCases() {
		if c.name != name {
			continue
		}
		c.duration = 15 * time.Second
		synctest.Test(t, func(t *testing.T) {
			srv, err := simsite.NewLocal(c.site())
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			crawlRateCase(t, c, map[string]string{strictHost: srv.URL(strictHost)}, engine.Options{Transport: srv.Transport()})
			recs := srv.Records().Host(strictHost)
			t0 := recs[0].Start
			for i, r := range recs {
				if i > 60 {
					break
				}
				t.Logf("%8.3f %8.3f %d %s ra=%v", r.Start.Sub(t0).Seconds(), r.End.Sub(t0).Seconds(), r.Status, r.Path, r.RetryAfterUntil.Sub(t0).Seconds())
			}
		})
	}
}
