package pqueue

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/gocrawl/gocrawl/internal/reqnames"
	"github.com/gocrawl/gocrawl/spider"
)

func parseCB(context.Context, *spider.Response, spider.Output) error      { return nil }
func failEB(context.Context, *spider.Request, error, spider.Output) error { return nil }

// sameRequest reports how a and b differ, "" when they are equal in
// every field (callbacks compared by the function they point to).
func sameRequest(a, b *spider.Request) string {
	fn := func(f any) uintptr {
		v := reflect.ValueOf(f)
		if v.IsNil() {
			return 0
		}
		return v.Pointer()
	}
	if fn(a.Callback) != fn(b.Callback) {
		return "callback"
	}
	if fn(a.Errback) != fn(b.Errback) {
		return "errback"
	}
	if reqnames.Get(a) != reqnames.Get(b) {
		return "stored callback names"
	}
	ca, cb := *a, *b
	ca.Callback, ca.Errback, cb.Callback, cb.Errback = nil, nil, nil, nil
	if !reflect.DeepEqual(ca.URL, cb.URL) {
		return "URL " + ca.URL.String() + " != " + cb.URL.String()
	}
	if !reflect.DeepEqual(ca, cb) {
		return "fields"
	}
	return ""
}

// Every request pushed to the memory store comes back equal; the common
// kind is held compact, the others as they are.
func TestMemoryStoreCompactRequests(t *testing.T) {
	mk := func(raw string, f func(*spider.Request)) *spider.Request {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		r := &spider.Request{URL: u, Callback: parseCB, Depth: 2}
		if f != nil {
			f(r)
		}
		return r
	}
	tests := []struct {
		name    string
		req     *spider.Request
		compact bool
	}{
		{"a link", mk("https://h.example/page/1", func(r *spider.Request) { r.Referer = "https://h.example/"; r.Depth = 1 }), true},
		{"http, query, priority, errback, dont filter", mk("http://h.example:8080/a?b=c&d", func(r *spider.Request) {
			r.Priority, r.Errback, r.DontFilter = -7, failEB, true
		}), true},
		{"a start request", mk("https://h.example/", func(r *spider.Request) { r.Depth = 0 }), false},
		{"no callback", mk("https://h.example/", func(r *spider.Request) { r.Callback = nil }), true},
		{"empty path", mk("https://h.example", nil), true},
		{"escaped path kept raw", mk("https://h.example/a%2Fb", nil), false},
		{"fragment", mk("https://h.example/a#top", nil), false},
		{"force query", mk("https://h.example/a?", nil), false},
		{"user info", mk("https://u:p@h.example/", nil), false},
		{"method", mk("https://h.example/", func(r *spider.Request) { r.Method = http.MethodPost }), false},
		{"header", mk("https://h.example/", func(r *spider.Request) { r.Header = http.Header{"A": {"b"}} }), false},
		{"body", mk("https://h.example/", func(r *spider.Request) { r.Body = []byte{} }), false},
		{"meta", mk("https://h.example/", func(r *spider.Request) { r.Meta = spider.Meta{"k": 1} }), false},
		{"priority beyond 32 bits", mk("https://h.example/", func(r *spider.Request) { r.Priority = math.MaxInt32 + 1 }), false},
		{"stored names", mk("https://h.example/", func(r *spider.Request) {
			r.Callback = nil
			reqnames.Set(r, reqnames.Names{Callback: "ParseItem"})
		}), false},
		{"other scheme", mk("ftp://h.example/", nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compact(tt.req) != nil; got != tt.compact {
				t.Errorf("compact = %v, want %v", got, tt.compact)
			}
			ctx := context.Background()
			s := NewMemoryStore()
			if err := s.Push(ctx, &Entry{Info: Info{Queue: "q", Priority: 3}, Req: tt.req}); err != nil {
				t.Fatal(err)
			}
			e, err := s.Reserve(ctx, "q")
			if err != nil {
				t.Fatal(err)
			}
			if d := sameRequest(e.Req, tt.req); d != "" {
				t.Errorf("reserved request differs: %s", d)
			}
			// The others, start requests among them (the engine follows
			// those by identity), come back as the pointer pushed.
			if !tt.compact && e.Req != tt.req {
				t.Error("a request without compact form came back as a copy")
			}
			if e.Req.URL.String() != tt.req.URL.String() {
				t.Errorf("URL %q, want %q", e.Req.URL, tt.req.URL)
			}
			// A nacked entry comes back equal too.
			if err := s.Nack(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
			e, err = s.Reserve(ctx, "q")
			if err != nil {
				t.Fatal(err)
			}
			if d := sameRequest(e.Req, tt.req); d != "" {
				t.Errorf("request after Nack differs: %s", d)
			}
		})
	}
}

// The compact form is what makes a queued link cheap: it must stay at
// 96 bytes (a size class of its own) and below the request it replaces.
func TestCompactRequestSize(t *testing.T) {
	if got := reflect.TypeFor[compactRequest]().Size(); got != 96 {
		t.Errorf("compactRequest is %d bytes, want 96", got)
	}
	full := reflect.TypeFor[spider.Request]().Size() + reflect.TypeFor[url.URL]().Size()
	if full < 2*96 {
		t.Errorf("a request and its URL are %d bytes: the compact form saves too little to be worth it", full)
	}
}
