package onhtml_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/examples/onhtml"
)

func TestCrawlsDemoQuotes(t *testing.T) {
	srv := httptest.NewServer(demosite.Quotes())
	defer srv.Close()
	sp := onhtml.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	res := crawltest.Run(t, sp, crawltest.Options{})
	var quotes []onhtml.Quote
	authors := map[string]onhtml.Author{}
	for _, it := range res.Items {
		switch v := it.(type) {
		case onhtml.Quote:
			quotes = append(quotes, v)
		case onhtml.Author:
			if _, dup := authors[v.Name]; dup {
				t.Errorf("author %s twice", v.Name)
			}
			authors[v.Name] = v
		}
	}
	want := demosite.QuoteList()
	if len(quotes) != len(want) {
		t.Fatalf("%d quotes, want %d", len(quotes), len(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(quotes, func(q onhtml.Quote) bool {
			return q.Text == w.Text && q.Author == w.Author && slices.Equal(q.Tags, w.Tags)
		}) {
			t.Errorf("quote %q missing", w.Text)
		}
	}
	for _, a := range demosite.Authors() {
		if got := authors[a.Name]; got.Birthdate != a.Born {
			t.Errorf("author %s: %+v", a.Name, got)
		}
	}
	if len(authors) != len(demosite.Authors()) {
		t.Errorf("%d authors", len(authors))
	}
}
