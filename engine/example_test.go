package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// titles follows every link and outputs each page's title.
type titles struct{ spider.Base }

func (*titles) Name() string { return "titles" }

func (s *titles) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(res.Find("title").Text())
	out.FollowAll(res, res.Find("a[href]"), s.Parse)
	return nil
}

// Run a crawl from Go without the command line: settings in, result out.
// Items reach the pipelines in ITEM_PIPELINES and those of Options (here a
// function that collects them; feeds are pipelines too, see package feed).
func Example() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<title>home</title><a href="/a">a</a> <a href="/b">b</a>`)
		case "/a", "/b":
			fmt.Fprintf(w, `<title>page %s</title><a href="/">home</a>`, r.URL.Path[1:])
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	s := settings.New()
	for name, v := range map[string]any{"ROBOTSTXT_OBEY": false, "LOGSTATS_INTERVAL": 0} {
		if err := s.Set(name, v, settings.SourceCommandLine, "example"); err != nil {
			panic(err)
		}
	}
	var mu sync.Mutex
	var got []string
	collect := pipeline.Func(func(ctx context.Context, item any) (any, error) {
		mu.Lock()
		got = append(got, item.(string))
		mu.Unlock()
		return item, nil
	})
	e, err := engine.New(&titles{Base: spider.Base{StartURLs: []string{site.URL + "/"}}}, s,
		engine.Options{Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		panic(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		panic(err)
	}
	slices.Sort(got)
	fmt.Println(res.Reason, res.Stats["downloader/response_ok_count"], got)
	// The link back to "/" is a duplicate: the dupefilter drops it.
	fmt.Println("filtered:", res.Stats["dupefilter/filtered"])
	// Output:
	// finished 3 [home page a page b]
	// filtered: 2
}
