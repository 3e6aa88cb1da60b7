package cli_test

import (
	"testing"
)

// A zero interval, a minimum above the maximum and a budget of 0 stop
// `settings` and `run` with exit status 2 before anything is fetched, each
// problem naming its setting and where it was set.
func TestRecrawlScheduleBadInput(t *testing.T) {
	dir := t.TempDir()
	set := []string{"-s", "RECRAWL_INTERVAL=0", "-s", "RECRAWL_MIN_INTERVAL=2d", "-s", "RECRAWL_MAX_INTERVAL=1d", "-s", "RECRAWL_BUDGET=0/h"}
	want := []string{"gocrawl: 3 ",
		"-s RECRAWL_INTERVAL=0: invalid setting RECRAWL_INTERVAL: an interval of 0 would revisit without pause",
		"-s RECRAWL_MIN_INTERVAL=2d: invalid setting RECRAWL_MIN_INTERVAL: 2d is above RECRAWL_MAX_INTERVAL 1d",
		`-s RECRAWL_BUDGET=0/h: invalid setting RECRAWL_BUDGET: rate "0/h" is 0`}
	for _, args := range [][]string{
		append([]string{"settings"}, set...),
		append([]string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/"}, set...),
	} {
		t.Run(args[0], func(t *testing.T) {
			gocrawl(t, dir, nil, args...).expect(t, 2, nil, want)
		})
	}
	// A good schedule passes.
	gocrawl(t, dir, nil, "settings", "-s", "RECRAWL_INTERVAL=6h", "-s", "RECRAWL_BUDGET=total=1000/h, scope=60/h").
		expect(t, 0, []string{"RECRAWL_INTERVAL", "RECRAWL_BUDGET"}, nil)
}
