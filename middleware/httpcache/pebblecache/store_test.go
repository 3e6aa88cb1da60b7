package pebblecache

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/middleware/httpcache"
	"github.com/gocrawl/gocrawl/spider"
)

func TestStoreRoundTrip(t *testing.T) {
	s, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := spider.MustRequest("http://127.0.0.1/p", nil)
	fp := httpcache.Fingerprint(req)
	if _, err := s.Get(fp); !errors.Is(err, httpcache.ErrNotFound) {
		t.Fatalf("Get on empty store: %v", err)
	}
	stored := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &httpcache.Entry{Meta: httpcache.Meta{URL: req.URL.String(), Status: 203, Header: http.Header{"Etag": {`"x"`}}, Stored: stored}, Body: []byte("hello")}
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
