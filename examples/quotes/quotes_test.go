package quotes_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/examples/quotes"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
)

func TestCrawlsDemoQuotes(t *testing.T) {
	srv := httptest.NewServer(demosite.Quotes())
	defer srv.Close()

	sp := quotes.New()
	if err := sp.SetArgs(map[string]string{"start_url": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var qs []quotes.Quote
	var as []quotes.Author
	collect := pipeline.Func(func(_ context.Context, item any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		switch v := item.(type) {
		case quotes.Quote:
			qs = append(qs, v)
		case quotes.Author:
			as = append(as, v)
		default:
			t.Errorf("unexpected item %T", item)
		}
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
		{map[string]string{"start_url": "http://127.0.0.1:1/"}, false},
		{map[string]string{"start_url": "ftp://x/"}, true},
		{map[string]string{"start_url": "/relative"}, true},
		{map[string]string{"start": "http://x/"}, true},
	} {
		err := quotes.New().SetArgs(tc.args)
		if (err != nil) != tc.wantErr {
			t.Errorf("SetArgs(%v) = %v, want error %v", tc.args, err, tc.wantErr)
		}
	}
	if quotes.New().StartURL() != quotes.DefaultStartURL {
		t.Error("default start URL not set")
	}
}
