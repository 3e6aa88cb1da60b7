package spider_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/internal/callbacks"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// shop is a CrawlSpider as users write one: rules set in a constructor,
// callbacks as method values.
type shop struct {
	spider.CrawlSpider
	parsed  []string
	failed  []string
	started []string
}

func (*shop) Name() string { return "shop" }

func (s *shop) ParseProduct(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.parsed = append(s.parsed, res.URL.Path)
	out.Item(map[string]any{"url": res.URL.String()})
	if strings.Contains(res.URL.Path, "broken") {
		return errors.New("no price")
	}
	return nil
}

func (s *shop) ProductFailed(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	s.failed = append(s.failed, req.URL.Path)
	return nil
}

func newShop() *shop {
	s := &shop{}
	s.StartURLs = []string{"https://shop.example/"}
	s.StartCallback = func(ctx context.Context, res *spider.Response, out spider.Output) error {
		s.started = append(s.started, res.URL.Path)
		return nil
	}
	s.Rules = []spider.Rule{
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{`/product/`}}), Callback: s.ParseProduct,
			Errback: s.ProductFailed, Priority: 5},
		{Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"nav"}}), Follow: true, MaxDepth: 2},
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{`/help`}}), Callback: s.ParseProduct, Follow: true},
	}
	return s
}

const shopPage = `<html><body>
<nav><a href="/cat/1">Cat 1</a> <a href="/product/9">Featured (also in nav)</a> <a href="/cat/2">Cat 2</a></nav>
<main><a href="/product/1">P1</a> <a href="/product/2">P2</a> <a href="/product/1">P1 again</a>
<a href="/help">Help</a> <a href="mailto:x@shop.example">mail</a> <a href="/other">other</a></main>
</body></html>`

func htmlResponse(req *spider.Request, body string) *spider.Response {
	return &spider.Response{URL: req.URL, Status: 200, Request: req, Body: []byte(body),
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}}
}

type sent struct {
	path     string
	rule     any
	depth    int
	priority int
	errback  bool
}

func requests(out *spider.Recorder) []sent {
	var s []sent
	for _, r := range out.Requests {
		s = append(s, sent{r.URL.Path, r.Get(spider.MetaRule), r.Depth, r.Priority, r.Errback != nil})
	}
	return s
}

func TestCrawlSpiderStartPage(t *testing.T) {
	s := newShop()
	req := spider.MustRequest("https://shop.example/", nil)
	var out spider.Recorder
	if err := s.Parse(context.Background(), htmlResponse(req, shopPage), &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.started, []string{"/"}) {
		t.Errorf("StartCallback saw %v", s.started)
	}
	want := []sent{
		// rule 0 wins /product/9 though it is inside nav (rule 1): first rule wins.
		{"/product/9", 0, 1, 5, true}, {"/product/1", 0, 1, 5, true}, {"/product/2", 0, 1, 5, true},
		// rule 1 only follows: no rule index needed.
		{"/cat/1", nil, 1, 0, false}, {"/cat/2", nil, 1, 0, false},
		{"/help", 2, 1, 0, false},
	}
	if got := requests(&out); !slices.Equal(got, want) {
		t.Errorf("requests:\n got %+v\nwant %+v", got, want)
	}
	for _, r := range out.Requests {
		want := "ParseRule"
		if r.Get(spider.MetaRule) == nil {
			want = "FollowRules"
		}
		name, err := callbacks.FuncName(s, r.Callback)
		if err != nil || name != want {
			t.Errorf("%s: callback %q, %v; want the persistable %s", r.URL, name, err, want)
		}
		if r.Errback != nil {
			if name, err := callbacks.FuncName(s, r.Errback); err != nil || name != "ErrbackRule" {
				t.Errorf("%s: errback %q, %v", r.URL, name, err)
			}
		}
	}
}

func TestCrawlSpiderRuleResponses(t *testing.T) {
	ctx := context.Background()
	s := newShop()
	rule := func(path string, i, depth int) *spider.Request {
		r := spider.MustRequest("https://shop.example"+path, nil)
		r.Depth = depth
		return r.Set(spider.MetaRule, i)
	}

	// A callback rule without Follow: callback only, no links.
	var out spider.Recorder
	if err := s.ParseRule(ctx, htmlResponse(rule("/product/1", 0, 1), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || len(out.Requests) != 0 || !slices.Equal(s.parsed, []string{"/product/1"}) {
		t.Errorf("product page: items %v requests %v parsed %v", out.Items, requests(&out), s.parsed)
	}

	// A follow-only rule below its MaxDepth: every rule applies. Such a
	// rule's requests go to FollowRules, but ParseRule does the same.
	out = spider.Recorder{}
	if err := s.ParseRule(ctx, htmlResponse(rule("/cat/1", 1, 1), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	var viaFollow spider.Recorder
	if err := s.FollowRules(ctx, htmlResponse(rule("/cat/1", 1, 1), shopPage), &viaFollow); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(requests(&out), requests(&viaFollow)) {
		t.Errorf("ParseRule %v, FollowRules %v", requests(&out), requests(&viaFollow))
	}
	if len(out.Requests) != 6 || out.Requests[0].Depth != 2 {
		t.Errorf("category page at depth 1: %+v", requests(&out))
	}

	// At its MaxDepth rule 1 stops, so nav links are left to the others.
	out = spider.Recorder{}
	if err := s.ParseRule(ctx, htmlResponse(rule("/cat/2", 1, 2), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range requests(&out) {
		if r.rule == 1 {
			t.Errorf("rule 1 ran at its MaxDepth: %+v", r)
		}
	}

	// A rule with both: the callback error is returned after following.
	out = spider.Recorder{}
	err := s.ParseRule(ctx, htmlResponse(rule("/help/broken", 2, 1), shopPage), &out)
	if err == nil || !strings.Contains(err.Error(), "no price") {
		t.Errorf("err = %v", err)
	}
	if len(out.Items) != 1 || len(out.Requests) == 0 {
		t.Errorf("callback rule with Follow: items %v requests %v", out.Items, requests(&out))
	}

	// Errbacks reach the rule's errback; a rule without one is fine.
	if err := s.ErrbackRule(ctx, rule("/product/3", 0, 1), errors.New("timeout"), &out); err != nil || !slices.Equal(s.failed, []string{"/product/3"}) {
		t.Errorf("errback: %v, failed %v", err, s.failed)
	}
	if err := s.ErrbackRule(ctx, rule("/cat/3", 1, 1), errors.New("timeout"), &out); err != nil {
		t.Error(err)
	}

	// Requests restored from a job directory may carry the index as
	// another number type.
	for _, v := range []any{int64(2), float64(2)} {
		r := spider.MustRequest("https://shop.example/help", nil).Set(spider.MetaRule, v)
		if err := s.ParseRule(ctx, htmlResponse(r, "<p>help</p>"), &spider.Recorder{}); err != nil {
			t.Errorf("rule %T: %v", v, err)
		}
	}
}

func TestCrawlSpiderUnknownRule(t *testing.T) {
	s := newShop()
	for _, v := range []any{nil, 7, -1, "0", 1.5} {
		r := spider.MustRequest("https://shop.example/x", nil)
		if v != nil {
			r.Set(spider.MetaRule, v)
		}
		err := s.ParseRule(context.Background(), htmlResponse(r, shopPage), &spider.Recorder{})
		if !errors.Is(err, spider.ErrNoRule) || !strings.Contains(err.Error(), "3 rules") {
			t.Errorf("rule %v: err = %v", v, err)
		}
		if err := s.ErrbackRule(context.Background(), r, errors.New("x"), &spider.Recorder{}); !errors.Is(err, spider.ErrNoRule) {
			t.Errorf("errback, rule %v: err = %v", v, err)
		}
	}
}

func TestCrawlSpiderHooks(t *testing.T) {
	s := &shop{}
	s.Rules = []spider.Rule{{
		ProcessLinks: func(res *spider.Response, links []linkextract.Link) []linkextract.Link {
			return slices.DeleteFunc(links, func(l linkextract.Link) bool { return strings.Contains(l.URL, "cat") })
		},
		ProcessRequest: func(req *spider.Request, link linkextract.Link, res *spider.Response) *spider.Request {
			if strings.Contains(req.URL.Path, "other") {
				return nil
			}
			req.Set("link_text", link.Text())
			req.Header = http.Header{"Referer": {res.URL.String()}}
			return req
		},
	}}
	var out spider.Recorder
	if err := s.Parse(context.Background(), htmlResponse(spider.MustRequest("https://shop.example/", nil), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Requests {
		got = append(got, r.URL.Path+"|"+r.Get("link_text").(string))
		if r.Header.Get("Referer") != "https://shop.example/" || r.Get(spider.MetaRule) != nil {
			t.Errorf("%s: %v %v", r.URL, r.Header, r.Meta)
		}
	}
	want := []string{"/product/9|Featured (also in nav)", "/product/1|P1", "/product/2|P2", "/help|Help"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCrawlSpiderNonHTMLAndNoRules(t *testing.T) {
	s := newShop()
	req := spider.MustRequest("https://shop.example/data.json", nil).Set(spider.MetaRule, 2)
	res := &spider.Response{URL: req.URL, Status: 200, Request: req, Body: []byte(`{"a":1}`),
		Header: http.Header{"Content-Type": {"application/json"}}}
	var out spider.Recorder
	if err := s.ParseRule(context.Background(), res, &out); err != nil {
		t.Fatalf("a JSON response of a following rule: %v", err)
	}
	if len(out.Requests) != 0 || len(out.Items) != 1 {
		t.Errorf("requests %v items %v", out.Requests, out.Items)
	}
	var empty spider.CrawlSpider
	if err := empty.Parse(context.Background(), htmlResponse(spider.MustRequest("https://a.example/", nil), shopPage), &out); err != nil {
		t.Error(err)
	}
}

// A link claimed by a rule whose ProcessRequest drops it is not offered to
// later rules: the first rule that keeps a link wins it.
func TestCrawlSpiderFirstRuleWinsEvenWhenDropped(t *testing.T) {
	s := &shop{}
	s.Rules = []spider.Rule{
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{"product"}}),
			ProcessRequest: func(*spider.Request, linkextract.Link, *spider.Response) *spider.Request { return nil }},
		{},
	}
	var out spider.Recorder
	if err := s.Parse(context.Background(), htmlResponse(spider.MustRequest("https://shop.example/", nil), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Requests {
		if strings.Contains(r.URL.Path, "product") {
			t.Errorf("%s reached rule 1", r.URL)
		}
	}
	if len(out.Requests) != 4 {
		t.Errorf("requests %+v", requests(&out))
	}
}

// With one rule that has a Callback, its requests carry no rule index:
// ParseRule and ErrbackRule know the rule.
func TestCrawlSpiderSingleCallbackRule(t *testing.T) {
	s := &shop{}
	s.Rules = []spider.Rule{
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{"product"}}), Callback: s.ParseProduct, Errback: s.ProductFailed},
		{Follow: true},
	}
	var out spider.Recorder
	if err := s.Parse(context.Background(), htmlResponse(spider.MustRequest("https://shop.example/", nil), shopPage), &out); err != nil {
		t.Fatal(err)
	}
	var products int
	for _, r := range out.Requests {
		if r.Meta != nil {
			t.Errorf("%s has meta %v", r.URL, r.Meta)
		}
		cb, eb, err := callbacks.Callbacks(s, r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.URL.Path, "product") {
			continue
		}
		products++
		if err := cb(context.Background(), htmlResponse(r, "<p>product</p>"), &spider.Recorder{}); err != nil {
			t.Error(err)
		}
		if err := eb(context.Background(), r, errors.New("x"), &spider.Recorder{}); err != nil {
			t.Error(err)
		}
	}
	if products != 3 || len(s.parsed) != 3 || len(s.failed) != 3 {
		t.Errorf("products %d parsed %v failed %v", products, s.parsed, s.failed)
	}
}
