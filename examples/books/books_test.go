package books_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/examples/books"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
)

func TestCrawlsDemoBooks(t *testing.T) {
	srv := httptest.NewServer(demosite.Books())
	defer srv.Close()

	sp := books.New()
	if err := sp.SetArgs(map[string]string{"start_url": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]books.Book{}
	collect := pipeline.Func(func(_ context.Context, item any) (any, error) {
		b := item.(books.Book)
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[b.UPC]; dup {
			t.Errorf("book %q emitted twice", b.Title)
		}
		got[b.UPC] = b
		return item, nil
	})
	e, err := engine.New(sp, settings.New(), engine.Options{Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" {
		t.Fatalf("reason %q", res.Reason)
	}
	want := demosite.BookList()
	if len(got) != len(want) {
		t.Fatalf("got %d books, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := got[w.UPC]
		if !ok {
			t.Errorf("book %q missing", w.Title)
			continue
		}
		if g.Title != w.Title || fmt.Sprintf("£%.2f", g.Price) != w.PriceText() || g.Rating != w.Rating ||
			g.Stock != w.Stock || g.Availability != w.Availability() || g.Category != w.Category {
			t.Errorf("book %q: got %+v, want %+v", w.Title, g, w)
		}
	}
}

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"£51.77", 51.77, false},
		{" £0.99 ", 0.99, false},
		{"12", 12, false},
		{"£", 0, true},
		{"free", 0, true},
	} {
		got, err := books.ParsePrice(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParsePrice(%q) = %v, %v", tc.in, got, err)
		}
	}
}
