package settings

import "fmt"

// The crawl service (`gocrawl serve`, package service).
func init() {
	choice := func(names ...string) Type {
		desc := ""
		for i, n := range names {
			if i > 0 {
				desc += " or "
			}
			desc += fmt.Sprintf("%q", n)
		}
		return NewType(desc, func(v any) (any, error) {
			s, err := String.Convert(v)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				if s == n {
					return s, nil
				}
			}
			return nil, fmt.Errorf("%q is not %s", s, desc)
		})
	}
	for _, d := range []Def{
		{Name: "SERVE_ADDR", Type: String, Default: "127.0.0.1:6800", Doc: "Address `gocrawl serve` listens on (--addr). A non-loopback address refuses to start without SERVE_TOKEN."},
		{Name: "SERVE_DIR", Type: String, Default: "gocrawl-serve", Doc: "Directory of the crawl service (--dir): its SQLite database of jobs and schedules, and one folder per job (JOBDIR, log, items, stats)."},
		{Name: "SERVE_TOKEN", Type: String, Default: "", Secret: true, Doc: "Bearer token the crawl service asks on every API call and page (Authorization: Bearer TOKEN, or the token cookie the page sets); required off loopback. Set it with GOCRAWL_SERVE_TOKEN rather than in a file."},
		{Name: "SERVE_MAX_JOBS", Type: NonNegative(Int), Default: 2, Doc: "Jobs the crawl service runs at once, each as its own process; later jobs wait in the queue (0 = 2)."},
		{Name: "SERVE_RECOVER", Type: choice("resume", "fail"), Default: "resume", Doc: "What a restarted crawl service does with the jobs that were running when it stopped: resume (queue them again on their JOBDIR) or fail (mark them failed)."},
		{Name: "SERVE_MISSED_RUNS", Type: choice("skip", "once"), Default: "skip", Doc: "Schedule runs missed while the crawl service was down: skip them, or run once at start-up for each schedule that missed one or more."},
		{Name: "SERVE_MAX_BODY", Type: NonNegative(Int), Default: 1 << 20, Doc: "Largest request body the crawl service's API reads, in bytes; a larger one gets 413 (0 = 1 MiB)."},
	} {
		Register(d)
	}
}
