package httpcache

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// TestCurrentAgeSaturates: hostile Date and Age headers make an entry as
// old as can be, never a negative (and so forever fresh) age.
func TestCurrentAgeSaturates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := now.Add(-time.Hour)
	for _, tc := range []struct {
		name      string
		age, date string
		want      time.Duration
	}{
		{"plain", "", now.Add(-time.Hour).Format(http.TimeFormat), time.Hour},
		{"age header", "60", stored.Format(http.TimeFormat), time.Hour + time.Minute},
		{"date of year 1", "", "Mon, 01 Jan 0001 00:00:00 GMT", math.MaxInt64},
		{"huge age (saturates at settings.MaxSeconds)", "99999999999999", stored.Format(http.TimeFormat), settings.Duration(1e14) + time.Hour},
		{"date in the future", "", "Fri, 31 Dec 9999 23:59:59 GMT", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Meta{Header: http.Header{"Age": {tc.age}, "Date": {tc.date}}, Stored: stored}
			if got := currentAge(m, now); got != tc.want {
				t.Errorf("currentAge = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestIsFreshHugeRequestDirectives: min-fresh and max-stale of 10^18
// seconds saturate instead of wrapping around.
func TestIsFreshHugeRequestDirectives(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &Meta{Status: 200, Header: http.Header{"Cache-Control": {"max-age=60"}, "Date": {now.Format(http.TimeFormat)}}, Stored: now}
	for _, tc := range []struct {
		cc   string
		want bool
	}{
		{"", true},
		{"min-fresh=1000000000000000000", false},
		{"max-stale=1000000000000000000", true},
	} {
		req := spider.MustRequest("http://example.com/", nil)
		req.Header = http.Header{"Cache-Control": {tc.cc}}
		later := now.Add(10 * time.Second)
		if tc.cc == "max-stale=1000000000000000000" {
			later = now.Add(24 * time.Hour)
		}
		if got := (RFC9111Policy{}).IsFresh(m, req, later); got != tc.want {
			t.Errorf("Cache-Control %q: IsFresh = %v, want %v", tc.cc, got, tc.want)
		}
	}
}
