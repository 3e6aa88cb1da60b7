package session

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

func newPool(t *testing.T, store Store, opts Options) *Pool {
	t.Helper()
	p, err := NewPool(context.Background(), opts, store)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPickRotatesAndRetires(t *testing.T) {
	p := newPool(t, NewMemoryStore(), Options{Size: 2, MaxUses: 3, MaxErrors: 2,
		UserAgents: []string{"UA-1", "UA-2"}, Headers: map[string]string{"Accept-Language": "fr"}})
	a, b, a2 := p.Pick(), p.Pick(), p.Pick()
	if !strings.HasPrefix(a.ID(), "s1-") || !strings.HasPrefix(b.ID(), "s2-") || a2 != a {
		t.Fatalf("picked %s %s %s", a.ID(), b.ID(), a2.ID())
	}
	if a.Headers()["User-Agent"] != "UA-1" || b.Headers()["User-Agent"] != "UA-2" || a.Headers()["Accept-Language"] != "fr" {
		t.Errorf("headers %v %v", a.Headers(), b.Headers())
	}
	for range 3 {
		p.Succeeded(a)
	}
	if !a.Retired() {
		t.Error("a session that reached MaxUses is not retired")
	}
	p.Failed(b)
	p.Failed(b)
	if !b.Retired() {
		t.Error("a session that failed MaxErrors times in a row is not retired")
	}
	c := p.Pick()
	if c == a || c == b || !strings.HasPrefix(c.ID(), "s3-") {
		t.Errorf("after retirements Pick gave %s", c.ID())
	}
}

func TestPinnedSessions(t *testing.T) {
	p := newPool(t, NewMemoryStore(), Options{Size: 1})
	alice, err := p.Get("alice")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := p.Get("alice")
	if alice != again {
		t.Error("a pinned session is not the same session twice")
	}
	if p.Pick() == alice {
		t.Error("a pinned session was handed to an unpinned request")
	}
	p.Retire(alice, "banned")
	if _, err := p.Get("alice"); !errors.Is(err, ErrRetired) {
		t.Errorf("Get of a retired pinned session: %v, want ErrRetired", err)
	}
}

func TestFileStoreKeepsSessionsAndCookies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.json")
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	open := func() *Pool {
		clk.Advance(time.Second)
		fs, err := OpenFileStore(path)
		if err != nil {
			t.Fatal(err)
		}
		return newPool(t, fs, Options{Size: 2, Clock: clk})
	}
	p := open()
	s1, s2 := p.Pick(), p.Pick()
	s1.SetProxy("10.1.1.1:3128")
	u, _ := url.Parse("https://shop.example.com/cart")
	s1.Jar().SetCookies(u, []*http.Cookie{
		{Name: "sid", Value: "abc", Path: "/"},
		{Name: "gone", Value: "x", MaxAge: -1},
	})
	s2.Jar().SetCookies(u, []*http.Cookie{{Name: "sid", Value: "def", Path: "/", Expires: time.Now().Add(-time.Hour)}})
	p.Succeeded(s1)
	p.Retire(s2, "banned")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"sid"`) || strings.Contains(string(raw), `"s2"`) {
		t.Fatalf("file:\n%s", raw)
	}

	p = open()
	if got := p.Live(); len(got) != 1 || got[0] != s1.ID() {
		t.Fatalf("restored sessions %v, want [%s]", got, s1.ID())
	}
	s1r, _ := p.Get(s1.ID())
	if s1r.Proxy() != "10.1.1.1:3128" {
		t.Errorf("proxy %q not restored", s1r.Proxy())
	}
	cs := s1r.Jar().Cookies(u)
	if len(cs) != 1 || cs[0].Name != "sid" || cs[0].Value != "abc" {
		t.Errorf("restored cookies %v, want sid=abc", cs)
	}
	// New sessions do not reuse restored names.
	for range 2 {
		if s := p.Pick(); s.ID() == s2.ID() {
			t.Error("a new session took a retired session's name")
		}
	}
}

func TestOpenFileStoreErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "sessions.json")
	os.WriteFile(bad, []byte("{not json"), 0o644)
	if _, err := OpenFileStore(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("err = %v, want it to name the file", err)
	}
	os.WriteFile(bad, []byte(`{"version": 9, "sessions": []}`), 0o644)
	if _, err := OpenFileStore(bad); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("err = %v", err)
	}
}
