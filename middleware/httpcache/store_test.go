package httpcache

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/spider"
)

func TestStoreRoundTrip(t *testing.T) {
	s, err := Open("db", StoreOptions{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := spider.MustRequest("http://127.0.0.1/p", nil)
	fp := Fingerprint(req)
	if _, err := s.Get(fp); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get on empty store: %v", err)
	}
	stored := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &Entry{Meta: Meta{URL: req.URL.String(), Status: 203, Header: http.Header{"Etag": {`"x"`}}, Stored: stored}, Body: []byte("hello")}
	if err := s.Put(fp, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(fp)
	if err != nil || got.Status != 203 || string(got.Body) != "hello" || got.Header.Get("ETag") != `"x"` || !got.Stored.Equal(stored) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	m := got.Meta
	m.Stored = stored.Add(time.Hour)
	if err := s.PutMeta(fp, &m); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(fp)
	if !got.Stored.Equal(stored.Add(time.Hour)) || string(got.Body) != "hello" {
		t.Errorf("after PutMeta: %+v", got)
	}
	res := got.Response(req)
	if res.Status != 203 || res.Request != req || len(res.Flags) != 1 || res.Flags[0] != "cached" {
		t.Errorf("Response = %+v", res)
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(method, u string, body string) string {
		r := spider.MustRequest(u, nil)
		r.Method, r.Body = method, []byte(body)
		return Fingerprint(r)
	}
	base := fp("GET", "http://example.com/p?a=1&b=2", "")
	for _, same := range []string{
		fp("", "http://example.com/p?a=1&b=2", ""),
		fp("GET", "HTTP://EXAMPLE.COM:80/p?b=2&a=1", ""),
		fp("GET", "http://example.com/p?a=1&b=2#section", ""),
	} {
		if same != base {
			t.Error("equivalent requests have different fingerprints")
		}
	}
	for _, other := range []string{
		fp("POST", "http://example.com/p?a=1&b=2", ""),
		fp("GET", "http://example.com/p?a=1&b=3", ""),
		fp("GET", "https://example.com/p?a=1&b=2", ""),
		fp("GET", "http://example.com/P?a=1&b=2", ""),
		fp("GET", "http://example.com/p?a=1&b=2", "x"),
	} {
		if other == base {
			t.Error("different requests share a fingerprint")
		}
	}
}
