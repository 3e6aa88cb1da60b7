package throttling

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

type countingManager struct {
	*DefaultManager
	calls int
}

func (m *countingManager) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	m.calls++
	return m.DefaultManager.Scopes(ctx, req)
}

func TestCacheScopesOncePerRequest(t *testing.T) {
	cfg, _ := ReadConfig(testSettings(t))
	inner := &countingManager{DefaultManager: NewDefaultManager(cfg, nil)}
	m := CacheScopes(inner)
	ctx := context.Background()
	a := spider.MustRequest("https://a.example/", nil)
	for range 3 {
		if sc, _ := m.Scopes(ctx, a); sc[0].Name != "a.example" {
			t.Fatalf("scopes %v", sc)
		}
	}
	b := spider.MustRequest("https://a.example/", nil)
	m.Scopes(ctx, b)
	if inner.calls != 2 {
		t.Fatalf("inner Scopes called %d times for 2 requests, want 2", inner.calls)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	// Entries go away with their requests.
	for range 100 {
		m.Scopes(ctx, spider.MustRequest("https://x.example/", nil))
	}
	c := m.(*scopeCache)
	deadline := time.Now().Add(5 * time.Second)
	for c.Len() > 10 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := c.Len(); n > 10 {
		t.Fatalf("%d cached entries after their requests were collected", n)
	}
}

func TestUpdateScopeBackoff(t *testing.T) {
	fb := UpdateScopeBackoff(nil, "cost", Consumed(2.5))
	fb = UpdateScopeBackoff(fb, "cost", Remaining(7))
	fb = UpdateScopeBackoff(fb, "api", Trigger(3*sec))
	if f := fb["cost"]; f.Trigger || *f.Consumed != 2.5 || *f.Remaining != 7 {
		t.Errorf("cost feedback %+v", f)
	}
	if f := fb["api"]; !f.Trigger || f.Delay != 3*sec {
		t.Errorf("api feedback %+v", f)
	}
}

func TestRegistrableDomain(t *testing.T) {
	for in, want := range map[string]string{
		"books.toscrape.com": "toscrape.com", "toscrape.com": "toscrape.com", "a.b.example.co.uk": "example.co.uk",
		"localhost": "localhost", "127.0.0.1": "127.0.0.1", "co.uk": "co.uk", "Example.COM.": "example.com",
	} {
		if got := RegistrableDomain(in); got != want {
			t.Errorf("RegistrableDomain(%q) = %q, want %q", in, got, want)
		}
	}
}
