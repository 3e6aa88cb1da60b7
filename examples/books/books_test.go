package books_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/examples/books"
)

func TestCrawlsDemoBooks(t *testing.T) {
	srv := httptest.NewServer(demosite.Books())
	defer srv.Close()

	sp := books.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]books.Book{}
	res := crawltest.Run(t, sp, crawltest.Options{})
	if res.Reason != "finished" {
		t.Fatalf("reason %q", res.Reason)
	}
	for _, item := range res.Items {
		b := item.(books.Book)
		if _, dup := got[b.UPC]; dup {
			t.Errorf("book %q emitted twice", b.Title)
		}
		got[b.UPC] = b
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
