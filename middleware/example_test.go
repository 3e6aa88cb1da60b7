package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// APIKey is a user's downloader middleware: it signs requests to one host
// with a key read from the settings, and turns the API's 401 into a drop
// with a reason instead of a page for the callback.
type APIKey struct {
	Host, Key string
}

func (m *APIKey) WrapFetcher(next middleware.Fetcher) middleware.Fetcher {
	return middleware.FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if req.URL.Host == m.Host {
			if req.Header == nil {
				req.Header = http.Header{}
			}
			req.Header.Set("X-Api-Key", m.Key)
		}
		res, err := next.Fetch(ctx, req)
		if err == nil && res.Status == http.StatusUnauthorized {
			return nil, &middleware.DropError{Reason: "api_unauthorized"}
		}
		return res, err
	})
}

// RequirePrice is a user's item pipeline: it drops items without a price.
type RequirePrice struct{}

func (RequirePrice) ProcessItem(ctx context.Context, item any) (any, error) {
	m, ok := item.(map[string]any)
	if !ok || m["price"] == nil {
		return nil, pipeline.Drop("no price")
	}
	return item, nil
}

func init() {
	// A setting for the middleware, so it is checked and listed like the
	// built-in ones.
	settings.Register(settings.Def{Name: "SHOP_API_KEY", Type: settings.String, Default: "",
		Doc: "Key sent as X-Api-Key to the shop's API."})
	middleware.RegisterDownloader("APIKey", func(c *spider.Crawler) (middleware.Downloader, error) {
		key := c.Settings.String("SHOP_API_KEY")
		if key == "" {
			return nil, errors.New("SHOP_API_KEY is not set")
		}
		return &APIKey{Host: shopHost, Key: key}, nil
	})
	pipeline.Register("RequirePrice", func(c *spider.Crawler) (pipeline.Stage, error) {
		return RequirePrice{}, nil
	})
}

var shopHost string

type shopSpider struct {
	spider.Base
	mu     sync.Mutex
	items  []string
	errors []string
}

func (*shopSpider) Name() string { return "shop" }

func (s *shopSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	item := map[string]any{"name": res.URL.Path}
	if p := res.Header.Get("X-Price"); p != "" {
		item["price"] = p
	}
	out.Item(item)
	return nil
}

// Example_customMiddlewareAndPipeline enables a user's downloader
// middleware and item pipeline by name, with orders, as a settings file
// would.
func Example_customMiddlewareAndPipeline() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "s3cret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/book" {
			w.Header().Set("X-Price", "12.50")
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	shopHost = srv.Listener.Addr().String()

	s := settings.New()
	err := s.SetMap(map[string]any{
		"ROBOTSTXT_OBEY":         false,
		"SHOP_API_KEY":           "s3cret",
		"DOWNLOADER_MIDDLEWARES": map[string]any{"APIKey": 450, "UserAgent": nil}, // after DefaultHeaders; no User-Agent
		"ITEM_PIPELINES":         map[string]any{"RequirePrice": 300},
	}, settings.SourceFile, "gocrawl.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	sp := &shopSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/book", srv.URL + "/pen"}}}
	e, err := engine.New(sp, s, engine.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := e.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	var keys []string
	for _, k := range []string{"item_scraped_count", "item_dropped_reasons_count/no price"} {
		keys = append(keys, fmt.Sprintf("%s=%v", k, res.Stats[k]))
	}
	sort.Strings(keys)
	fmt.Println(keys)
	// Output: [item_dropped_reasons_count/no price=1 item_scraped_count=1]
}

// ExampleOutputHooks shows a spider middleware that drops links to PDFs
// from every callback's output.
func ExampleOutputHooks() {
	noPDF := middleware.SpiderFunc(func(next middleware.Handler) middleware.Handler {
		return middleware.HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
			return next.Handle(ctx, res, &middleware.OutputHooks{Next: out,
				OnRequest: func(r *spider.Request) *spider.Request {
					if len(r.URL.Path) > 4 && r.URL.Path[len(r.URL.Path)-4:] == ".pdf" {
						return nil
					}
					return r
				}})
		})
	})
	callback := middleware.HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		out.Follow(res, "/report.pdf", nil)
		out.Follow(res, "/page.html", nil)
		return nil
	})
	req := spider.MustRequest("http://127.0.0.1/", nil)
	var out spider.Recorder
	noPDF.WrapHandler(callback).Handle(context.Background(), &spider.Response{URL: req.URL, Status: 200, Request: req}, &out)
	for _, r := range out.Requests {
		fmt.Println(r.URL)
	}
	// Output: http://127.0.0.1/page.html
}
