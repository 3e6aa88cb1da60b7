package quotes_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/examples/quotes"
)

func TestCrawlsDemoQuotes(t *testing.T) {
	srv := httptest.NewServer(demosite.Quotes())
	defer srv.Close()

	sp := quotes.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	var qs []quotes.Quote
	var as []quotes.Author
	res := crawltest.Run(t, sp, crawltest.Options{})
	if res.Reason != "finished" {
		t.Fatalf("reason %q", res.Reason)
	}
	for _, item := range res.Items {
		switch v := item.(type) {
		case quotes.Quote:
			qs = append(qs, v)
		case quotes.Author:
			as = append(as, v)
		default:
			t.Errorf("unexpected item %T", item)
		}
	}

	want := demosite.QuoteList()
	if len(qs) != len(want) {
		t.Fatalf("got %d quotes, want %d", len(qs), len(want))
	}
	byText := map[string]quotes.Quote{}
	for _, q := range qs {
		byText[q.Text] = q
	}
	for _, w := range want {
		got, ok := byText[w.Text]
		if !ok {
			t.Errorf("quote %q missing", w.Text)
			continue
		}
		if got.Author != w.Author || !slices.Equal(got.Tags, w.Tags) {
			t.Errorf("quote %q: got author %q tags %v, want %q %v", w.Text, got.Author, got.Tags, w.Author, w.Tags)
		}
	}
	wantAuthors := demosite.Authors()
	if len(as) != len(wantAuthors) {
		t.Fatalf("got %d authors, want %d (one item per author page)", len(as), len(wantAuthors))
	}
	byName := map[string]quotes.Author{}
	for _, a := range as {
		byName[a.Name] = a
	}
	for _, w := range wantAuthors {
		got := byName[w.Name]
		if got.Birthdate != w.Born || "in "+got.Birthplace != w.Location || got.Bio != w.Description {
			t.Errorf("author %s: got %+v, want %+v", w.Name, got, w)
		}
	}
}

func TestSetArgs(t *testing.T) {
	for _, tc := range []struct {
		args    map[string]string
		wantErr bool
	}{
		{map[string]string{}, false},
		{map[string]string{"start_urls": "http://127.0.0.1:1/"}, false},
		{map[string]string{"start_urls": "ftp://x/"}, true},
		{map[string]string{"start_urls": "/relative"}, true},
		{map[string]string{"start_url": "http://127.0.0.1:1/"}, true},
		{map[string]string{"start": "http://x/"}, true},
	} {
		err := quotes.New().SetArgs(tc.args)
		if (err != nil) != tc.wantErr {
			t.Errorf("SetArgs(%v) = %v, want error %v", tc.args, err, tc.wantErr)
		}
	}
	sp := quotes.New()
	if !slices.Equal(sp.StartURLs, []string{quotes.DefaultStartURL}) || !slices.Equal(sp.AllowedDomains(), []string{"quotes.toscrape.com"}) {
		t.Errorf("default start URLs %q, allowed domains %q", sp.StartURLs, sp.AllowedDomains())
	}
	if err := sp.SetArgs(map[string]string{"start_urls": "http://127.0.0.1:8080/"}); err != nil || !slices.Equal(sp.AllowedDomains(), []string{"127.0.0.1"}) {
		t.Errorf("after -a start_urls: %v, allowed domains %q", err, sp.AllowedDomains())
	}
}
