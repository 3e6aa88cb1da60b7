package middleware

import (
	"context"
	"net/url"
	"testing"

	"github.com/gocrawl/gocrawl/middleware/session"
	"github.com/gocrawl/gocrawl/spider"
)

// A session's headers fill in what the request lacks; the referer the
// Referer middleware put in the request's field is the request's own and
// wins over a session's Referer header.
func TestSessionHeadersKeepRequestReferer(t *testing.T) {
	pool, err := session.NewPool(context.Background(), session.Options{Size: 1,
		Headers: map[string]string{"Referer": "https://session.test/", "Accept-Language": "fr"}}, session.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	m := &Sessions{pool: pool, defaults: map[string]string{}, banCodes: map[int]bool{}}
	for _, tc := range []struct {
		name, field, header, want string
	}{
		{name: "field set", field: "https://page.test/a", want: "https://page.test/a"},
		{name: "header set", header: "https://own.test/", want: "https://own.test/"},
		{name: "neither", want: "https://session.test/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse("https://example.test/p")
			req := &spider.Request{URL: u, Referer: tc.field}
			if tc.header != "" {
				req.Header = map[string][]string{"Referer": {tc.header}}
			}
			var sent *spider.Request
			f := m.WrapFetcher(FetcherFunc(func(_ context.Context, r *spider.Request) (*spider.Response, error) {
				sent = r
				return &spider.Response{Request: r, Status: 200}, nil
			}))
			if _, err := f.Fetch(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := sent.RefererHeader(); got != tc.want {
				t.Errorf("Referer sent = %q, want %q", got, tc.want)
			}
			if got := sent.Header.Get("Accept-Language"); got != "fr" {
				t.Errorf("Accept-Language = %q, want the session's fr", got)
			}
		})
	}
}
