package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// fetch, view, parse and shell look at one page the way a crawl sees it:
// they run the engine on one start request, with the project's settings
// (and a spider's, with --spider), so the request goes through the
// downloader middlewares (robots.txt, retries, redirects, cookies, the
// HTTP cache), throttling and the spider middlewares like any other.
// Only the reporting is left out: no progress line, live display,
// metrics endpoint, stats dump or summary.

// probeSettings adjusts s for a one-page crawl: no periodic reporting, and
// logs at WARNING unless LOG_LEVEL was set.
func probeSettings(s *settings.Settings, command string) error {
	over := map[string]any{"LOGSTATS_INTERVAL": 0, "PROGRESS_DISPLAY": "off", "METRICS_ADDR": "", "STATS_DUMP_FILE": ""}
	if v, _ := s.Origin("LOG_LEVEL"); v.Source == settings.SourceDefault {
		over["LOG_LEVEL"] = "WARNING"
	}
	for k, v := range over {
		if err := s.Set(k, v, settings.SourceCommandLine, "gocrawl "+command); err != nil {
			return err
		}
	}
	return nil
}

// probe runs one crawl of sp starting with the requests of start, with
// settings s and logs l, turning signals into a graceful stop as `run`
// does. The crawl's feeds are none; what the callbacks produce is up to
// them (fetch keeps the response, parse records and filters the output).
func (a *App) probe(ctx context.Context, sp spider.Spider, s *settings.Settings, l *Logs, start ...*spider.Request) (*engine.Result, error) {
	starts := func(yield func(*spider.Request, error) bool) {
		for _, r := range start {
			if !yield(r, nil) {
				return
			}
		}
	}
	return a.Crawl(ctx, CrawlSpec{Spider: sp, Settings: s, Log: l.Logger, Options: engine.Options{StartRequests: iter.Seq2[*spider.Request, error](starts)}})
}

// fetchSpider keeps the response (or error) of the request it is given.
// Its Parse and Failed methods are the request's callback and errback.
type fetchSpider struct {
	name string
	// keepRedirects lets 3xx responses reach Parse (--no-redirect).
	keepRedirects bool

	mu  sync.Mutex
	res *spider.Response
	err error
}

func (s *fetchSpider) Name() string { return s.name }

// Start is never used: probe gives the start request.
func (s *fetchSpider) Start(context.Context) iter.Seq2[*spider.Request, error] {
	return func(func(*spider.Request, error) bool) {}
}

// HandleHTTPStatusList lets every status reach Parse (fetch shows 404s
// and 503s too), except the redirects the redirect middleware follows.
func (s *fetchSpider) HandleHTTPStatusList() []int {
	var out []int
	for code := 100; code < 600; code++ {
		switch code {
		case 301, 302, 303, 307, 308:
			if !s.keepRedirects {
				continue
			}
		}
		out = append(out, code)
	}
	return out
}

// Parse keeps the response.
func (s *fetchSpider) Parse(_ context.Context, res *spider.Response, _ spider.Output) error {
	s.mu.Lock()
	s.res = res
	s.mu.Unlock()
	return nil
}

// Failed keeps the error.
func (s *fetchSpider) Failed(_ context.Context, _ *spider.Request, err error, _ spider.Output) error {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	return nil
}

// fetchOptions shape the request of fetch, view and shell.
type fetchOptions struct {
	// NoRedirect keeps a 3xx response instead of following it.
	NoRedirect bool
	// SpiderName names the crawl (and so its robots.txt user agent's
	// logs); "" is "fetch".
	SpiderName string
}

// fetchPage fetches rawURL through the crawl's machinery and returns the
// response, whatever its status. An error means no response: the URL is
// invalid, a download failed after its retries, or a middleware dropped
// the request (robots.txt, offsite), with a message saying what to do.
func (a *App) fetchPage(ctx context.Context, rawURL string, s *settings.Settings, l *Logs, o fetchOptions) (*spider.Response, error) {
	sp := &fetchSpider{name: o.SpiderName, keepRedirects: o.NoRedirect}
	if sp.name == "" {
		sp.name = "fetch"
	}
	req, err := spider.NewRequest(rawURL, nil)
	if err != nil {
		return nil, UsageErrorf("%v; give an absolute http(s) URL such as https://example.com/", err)
	}
	if o.NoRedirect {
		req.Set(middleware.MetaDontRedirect, true)
	}
	req.DontFilter = true
	req.Callback, req.Errback = sp.Parse, sp.Failed
	if _, err := a.probe(ctx, sp, s, l, req); err != nil {
		return nil, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case sp.res != nil:
		return sp.res, nil
	case sp.err != nil:
		return nil, explainFailure(rawURL, sp.err)
	}
	return nil, fmt.Errorf("no response for %s (the crawl was stopped)", rawURL)
}

// explainFailure says why a fetch got no response, and what to do.
func explainFailure(rawURL string, err error) error {
	var drop *middleware.DropError
	if errors.As(err, &drop) {
		switch drop.Reason {
		case middleware.DropReasonRobotsTxt:
			if errors.Is(err, middleware.ErrRobotsTxtUnreachable) {
				return fmt.Errorf("%s: its robots.txt could not be fetched, so the site is treated as disallowed (RFC 9309); -s ROBOTSTXT_OBEY=false fetches anyway", rawURL)
			}
			return fmt.Errorf("%s: robots.txt disallows it; -s ROBOTSTXT_OBEY=false fetches anyway", rawURL)
		case "offsite":
			return fmt.Errorf("%s: not in the spider's allowed domains (%v)", rawURL, drop.Err)
		}
		return fmt.Errorf("%s: dropped (%s): %v", rawURL, drop.Reason, drop.Err)
	}
	return fmt.Errorf("%s: %w", rawURL, err)
}
