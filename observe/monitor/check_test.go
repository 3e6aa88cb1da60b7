package monitor

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		check  Check
		snap   Snapshot
		ok     bool
		detail string // a part of the detail
	}{
		{"min items met", MinItems{Min: 10}, Snapshot{Final: true, Stats: map[string]float64{"item_scraped_count": 10}}, true, "10 items, at least MONITOR_MIN_ITEMS 10"},
		{"min items missed", MinItems{Min: 100}, Snapshot{Final: true, Stats: map[string]float64{"item_scraped_count": 12}}, false, "12 items, fewer than MONITOR_MIN_ITEMS 100"},
		{"min items no stat", MinItems{Min: 1}, Snapshot{Final: true}, false, "0 items"},
		{"min items after a stop by a signal", MinItems{Min: 100}, Snapshot{Final: true, Reason: "shutdown", Stats: map[string]float64{"item_scraped_count": 3}}, true, "not checked: the crawl was stopped before its end (shutdown)"},
		{"min items after a CLOSESPIDER limit", MinItems{Min: 100}, Snapshot{Final: true, Reason: "closespider_timeout", Stats: map[string]float64{"item_scraped_count": 3}}, false, "3 items, fewer"},
		{"min items during the crawl", MinItems{Min: 100}, Snapshot{Stats: map[string]float64{"item_scraped_count": 3}}, true, "checked when the crawl ends"},

		{"errors under", MaxErrorShare(0.1, 0), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/request_count": 100, "downloader/exception_count": 5, "downloader/response_status_count/503": 4,
			"downloader/response_status_count/404": 50}}, true, "9 of 100 requests are failed (9%)"},
		{"errors over", MaxErrorShare(0.05, 0), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/request_count": 100, "downloader/exception_count": 5, "downloader/response_status_count/500": 1}}, false, "6 of 100 requests are failed (6%), more than MONITOR_MAX_ERROR_SHARE 5%"},
		{"errors zero allowed", MaxErrorShare(0, 0), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/request_count": 10, "downloader/exception_count": 1}}, false, "more than MONITOR_MAX_ERROR_SHARE 0%"},
		{"no requests", MaxErrorShare(0, 0), Snapshot{Final: true}, true, "no requests yet"},
		{"errors below the sample during the crawl", MaxErrorShare(0.01, 100), Snapshot{Stats: map[string]float64{
			"downloader/request_count": 10, "downloader/exception_count": 5}}, true, "checked from 100 requests on"},
		{"errors below the sample at the end", MaxErrorShare(0.01, 100), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/request_count": 10, "downloader/exception_count": 5}}, false, "5 of 10 requests"},
		{"errors over the sample during the crawl", MaxErrorShare(0.01, 10), Snapshot{Stats: map[string]float64{
			"downloader/request_count": 10, "downloader/exception_count": 5}}, false, "50%"},

		{"429 over", Max429Share(0.1, 0), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/response_count": 40, "downloader/response_status_count/429": 10}}, false, "10 of 40 responses are 429 Too Many Requests (25%), more than MONITOR_MAX_429_SHARE 10%"},
		{"429 under", Max429Share(0.25, 0), Snapshot{Final: true, Stats: map[string]float64{
			"downloader/response_count": 40, "downloader/response_status_count/429": 10}}, true, "(25%), at most"},

		{"drops over", MaxDropShare(0.2, 0), Snapshot{Final: true, Stats: map[string]float64{
			"item_scraped_count": 7, "item_dropped_count": 3}}, false, "3 of 10 items are dropped (30%)"},
		{"drops under", MaxDropShare(0.5, 0), Snapshot{Final: true, Stats: map[string]float64{
			"item_scraped_count": 7, "item_dropped_count": 3}}, true, "at most MONITOR_MAX_DROP_SHARE 50%"},

		{"duration within", MaxDuration{Max: time.Hour}, Snapshot{Elapsed: 59 * time.Minute}, true, "ran 59m0s, within MONITOR_MAX_DURATION 1h0m0s"},
		{"duration over during the crawl", MaxDuration{Max: time.Minute}, Snapshot{Elapsed: 61 * time.Second}, false, "ran 1m1s, longer than MONITOR_MAX_DURATION 1m0s"},

		{"func check", NewCheck("few_404", func(_ context.Context, s Snapshot) Outcome {
			if n := s.Get("downloader/response_status_count/404"); n > 10 {
				return Fail("%.0f pages not found", n)
			}
			return Pass("ok")
		}), Snapshot{Stats: map[string]float64{"downloader/response_status_count/404": 11}}, false, "11 pages not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.check.Check(ctx, tc.snap)
			if out.OK != tc.ok || !strings.Contains(out.Detail, tc.detail) {
				t.Errorf("%s: got ok=%v %q, want ok=%v containing %q", tc.check.Name(), out.OK, out.Detail, tc.ok, tc.detail)
			}
		})
	}
}

func TestPct(t *testing.T) {
	for in, want := range map[float64]string{0: "0%", 0.05: "5%", 0.125: "12.5%", 1: "100%", 1.0 / 3: "33.33%"} {
		if got := pct(in); got != want {
			t.Errorf("pct(%v) = %q, want %q", in, got, want)
		}
	}
}
