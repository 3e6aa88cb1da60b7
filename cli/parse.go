package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gocrawl/gocrawl/internal/callbacks"
	"github.com/gocrawl/gocrawl/internal/reqnames"

	"github.com/PuerkitoBio/goquery"
	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { addCommand(parseCommand) }

func parseCommand(a *App) *cobra.Command {
	var (
		sf         SettingsFlags
		spiderName string
		callback   string
		depth      int
		args       []string
		asJSON     bool
		pipelines  bool
		replay     string
	)
	cmd := &cobra.Command{
		Use:   "parse URL --spider NAME",
		Short: "Run a spider's callback on one URL and print its items and requests",
		Long: `Fetch URL the way a crawl of the spider does (its settings, the downloader and
spider middlewares, throttling), run its callback on the response, and print
what the callback produced: the items, and the requests it asked to follow
with their callbacks. With --depth N the requests are followed N-1 levels
deep and the output of every level is printed.

The callback is the spider's Parse, or --callback METHOD (a method of the
spider with Parse's signature). Spider arguments (-a) are applied as for run;
when none names the start URL, parse passes URL as start_urls, so that
spiders that need a start URL (follow) need no other argument. Items are not
sent to the item pipelines unless --pipelines is given. Logs go to standard
error, at WARNING unless LOG_LEVEL is set.`,
		Example: `  gocrawl parse https://quotes.toscrape.com/ --spider quotes
  gocrawl parse https://quotes.toscrape.com/author/Albert-Einstein/ --spider quotes --callback ParseAuthor
  gocrawl parse https://example.com/ --spider follow --depth 2 --json
  gocrawl parse https://quotes.toscrape.com/ --spider quotes --replay archive/`,
		Args: ExactArgs(1, "one URL"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if spiderName == "" {
				return UsageErrorf("parse needs --spider NAME (see `gocrawl list`)")
			}
			if depth < 1 {
				return UsageErrorf("--depth %d: give 1 (the URL only) or more", depth)
			}
			sp, err := a.Spider(spiderName)
			if err != nil {
				return err
			}
			rawURL := pos[0]
			spArgs, argErr := parseArgs(args)
			if argErr == nil {
				argErr = applyArgsWithStart(sp, spArgs, rawURL)
			}
			s, setErrs := sf.load(a, sp)
			if replay != "" && s != nil {
				setErrs = append(setErrs, s.Set("WARC_REPLAY", replay, settings.SourceCommandLine, "--replay"))
			}
			if err := problems(append([]error{argErr}, setErrs...)...); err != nil {
				return err
			}
			if err := probeSettings(s, "parse"); err != nil {
				return err
			}
			l, err := OpenLogs(s, a.Stderr)
			if err != nil {
				return err
			}
			defer l.Close()
			req, err := spider.NewRequest(rawURL, nil)
			if err != nil {
				return UsageErrorf("%v; give an absolute http(s) URL such as https://example.com/", err)
			}
			if callback != "" {
				if _, err = callbacks.ResolveCallback(sp, callback); err != nil {
					return UsageError(err)
				}
				callbacks.SetStored(req, reqnames.Names{Callback: callback})
			}
			p := &parseRun{sp: sp, maxDepth: depth, pipelines: pipelines}
			req.DontFilter = true
			p.wrap(req, 1)
			if _, err := a.probe(cmd.Context(), sp, s, l, req); err != nil {
				return err
			}
			w := bufio.NewWriter(a.Stdout)
			if asJSON {
				err = p.writeJSON(w)
			} else {
				err = p.writeText(w)
			}
			if err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if p.failed(rawURL) {
				return errReported
			}
			return nil
		},
	}
	sf.Add(cmd)
	f := cmd.Flags()
	f.StringVar(&spiderName, "spider", "", "the spider whose callbacks and settings to use (required)")
	f.StringVarP(&callback, "callback", "c", "", "the spider `METHOD` to call on URL's response (default Parse)")
	f.IntVarP(&depth, "depth", "d", 1, "follow the requests the callbacks produce down to `N` levels")
	f.StringArrayVarP(&args, "arg", "a", nil, "spider argument `NAME=VALUE`; repeatable")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per response instead of text")
	f.BoolVar(&pipelines, "pipelines", false, "also send the items to the spider's ITEM_PIPELINES")
	f.StringVar(&replay, "replay", "", "answer the requests from the web archive `DIR` (WARC files written with WARC_DIR) instead of the network")
	return cmd
}

// applyArgsWithStart applies spider arguments for parse: when none names
// a start URL, URL is offered as start_urls first (a spider like follow
// needs it to know its allowed domains); if the spider refuses that
// argument, the user's arguments alone are applied.
func applyArgsWithStart(sp spider.Spider, args map[string]string, rawURL string) error {
	if _, ok := sp.(spider.ArgsReceiver); !ok {
		return ApplyArgs(sp, args)
	}
	if _, ok := args["start_urls"]; ok {
		return ApplyArgs(sp, args)
	}
	with := maps.Clone(args)
	with["start_urls"] = rawURL
	if err := ApplyArgs(sp, with); err == nil {
		return nil
	}
	return ApplyArgs(sp, args)
}

// parsed is one response (or failure) of a parse run and what its
// callback produced.
type parsed struct {
	Depth    int             `json:"depth"`
	URL      string          `json:"url"`
	Status   int             `json:"status,omitempty"`
	Callback string          `json:"callback"`
	Items    []any           `json:"items"`
	Requests []parsedRequest `json:"requests"`
	Error    string          `json:"error,omitempty"`
	order    int
}

type parsedRequest struct {
	Method   string `json:"method"`
	URL      string `json:"url"`
	Callback string `json:"callback"`
	// Followed is true when parse followed it (below --depth).
	Followed bool `json:"followed"`
}

// parseRun records what the callbacks produce, level by level. Each
// request gets a callback (and errback) that wraps the spider's: the
// wrapper runs the real callback with an Output that records items and
// requests, passes on the requests of levels below the maximum depth
// (wrapped in turn) and keeps the others out of the crawl.
type parseRun struct {
	sp        spider.Spider
	maxDepth  int
	pipelines bool

	mu      sync.Mutex
	results []*parsed
}

func (p *parseRun) add(r *parsed) {
	p.mu.Lock()
	r.order = len(p.results)
	p.results = append(p.results, r)
	p.mu.Unlock()
}

// wrap sets req's callback and errback to recording ones for depth.
func (p *parseRun) wrap(req *spider.Request, depth int) {
	cb, eb, err := callbacks.Callbacks(p.sp, req)
	name := callbackName(p.sp, req)
	if err != nil {
		failure := err
		cb = func(ctx context.Context, res *spider.Response, out spider.Output) error { return failure }
	}
	req.Callback = func(ctx context.Context, res *spider.Response, out spider.Output) error {
		r := &parsed{Depth: depth, URL: res.URL.String(), Status: res.Status, Callback: name, Items: []any{}, Requests: []parsedRequest{}}
		rec := &parseOutput{run: p, rec: r, next: out, depth: depth}
		cerr := cb(ctx, res, rec)
		if cerr != nil {
			r.Error = cerr.Error()
		}
		p.add(r)
		return cerr
	}
	req.Errback = func(ctx context.Context, failed *spider.Request, ferr error, out spider.Output) error {
		r := &parsed{Depth: depth, URL: failed.URL.String(), Callback: name, Items: []any{}, Requests: []parsedRequest{}, Error: ferr.Error()}
		var eerr error
		if eb != nil {
			eerr = eb(ctx, failed, ferr, &parseOutput{run: p, rec: r, next: out, depth: depth})
		}
		p.add(r)
		return eerr
	}
	callbacks.SetStored(req, reqnames.Names{})
}

// callbackName names req's callback for the output.
func callbackName(sp spider.Spider, req *spider.Request) string {
	if req.Callback != nil {
		if n, err := callbacks.FuncName(sp, req.Callback); err == nil && n != "" {
			return n
		}
		return "(a function)"
	}
	if n := callbacks.Stored(req).Callback; n != "" {
		return n
	}
	return "Parse"
}

// parseOutput records a callback's output at one depth.
type parseOutput struct {
	run   *parseRun
	rec   *parsed
	next  spider.Output
	depth int
	mu    sync.Mutex
}

func (o *parseOutput) Item(item any) {
	o.mu.Lock()
	o.rec.Items = append(o.rec.Items, item)
	o.mu.Unlock()
	if o.run.pipelines {
		o.next.Item(item)
	}
}

func (o *parseOutput) Request(req *spider.Request) {
	if req == nil {
		return
	}
	follow := o.depth < o.run.maxDepth
	o.mu.Lock()
	o.rec.Requests = append(o.rec.Requests, parsedRequest{Method: req.EffectiveMethod(), URL: req.URL.String(),
		Callback: callbackName(o.run.sp, req), Followed: follow})
	o.mu.Unlock()
	if follow {
		o.run.wrap(req, o.depth+1)
		o.next.Request(req)
	}
}

func (o *parseOutput) Follow(res *spider.Response, ref string, cb spider.Callback) {
	req, err := res.NewRequest(ref, cb)
	if err != nil {
		o.next.Follow(res, ref, cb) // let the engine log and count the bad link
		return
	}
	o.Request(req)
}

func (o *parseOutput) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	for _, ref := range spider.Hrefs(sel) {
		o.Follow(res, ref, cb)
	}
}

// sorted returns the results by depth, then URL.
func (p *parseRun) sorted() []*parsed {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.results)
	slices.SortStableFunc(out, func(a, b *parsed) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), strings.Compare(a.URL, b.URL), cmp.Compare(a.order, b.order))
	})
	return out
}

// failed reports whether the start URL itself got no callback run (it
// failed, or the crawl stopped before it).
func (p *parseRun) failed(rawURL string) bool {
	for _, r := range p.sorted() {
		if r.Depth == 1 {
			return r.Status == 0
		}
	}
	return true
}

func (p *parseRun) writeText(w io.Writer) error {
	res := p.sorted()
	if len(res) == 0 {
		fmt.Fprintln(w, "no response: the crawl stopped before the URL was fetched")
		return nil
	}
	var items, reqs int
	for _, r := range res {
		fmt.Fprintf(w, ">>> depth %d: %s", r.Depth, r.URL)
		if r.Status != 0 {
			fmt.Fprintf(w, " (%d), callback %s\n", r.Status, r.Callback)
		} else {
			fmt.Fprintf(w, ", no response\n")
		}
		if r.Error != "" {
			fmt.Fprintf(w, "    error: %s\n", r.Error)
		}
		fmt.Fprintf(w, "# items (%d)\n", len(r.Items))
		for _, it := range r.Items {
			b, err := json.Marshal(it)
			if err != nil {
				b = []byte(fmt.Sprintf("%#v (not JSON: %v)", it, err))
			}
			fmt.Fprintf(w, "%s\n", b)
		}
		fmt.Fprintf(w, "# requests (%d)\n", len(r.Requests))
		for _, q := range r.Requests {
			note := ""
			if q.Followed {
				note = "  (followed)"
			}
			fmt.Fprintf(w, "%s %s  callback %s%s\n", q.Method, q.URL, q.Callback, note)
		}
		fmt.Fprintln(w)
		items += len(r.Items)
		reqs += len(r.Requests)
	}
	fmt.Fprintf(w, "%d responses, %d items, %d requests\n", len(res), items, reqs)
	return nil
}

func (p *parseRun) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	var errs []error
	for _, r := range p.sorted() {
		if err := enc.Encode(r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.URL, err))
		}
	}
	return errors.Join(errs...)
}
