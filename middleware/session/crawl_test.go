package session_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// visitors is a site that gives each new visitor a cookie, counts the
// requests of each, and refuses (403) a visitor's requests after its
// limit-th: a site that bans identities that crawl too much.
type visitors struct {
	srv   *httptest.Server
	mu    sync.Mutex
	next  int
	ok    map[string]int    // successful requests per visitor
	ua    map[string]string // User-Agent per visitor
	known int               // requests that came with a cookie the site gave
	limit int
}

func newVisitors(t *testing.T, limit int) *visitors {
	v := &visitors{ok: map[string]int{}, ua: map[string]string{}, limit: limit}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		defer v.mu.Unlock()
		id := ""
		if c, err := r.Cookie("visitor"); err == nil {
			id = c.Value
			v.known++
		} else {
			v.next++
			id = fmt.Sprint("v", v.next)
			http.SetCookie(w, &http.Cookie{Name: "visitor", Value: id, Path: "/", MaxAge: 3600})
		}
		if v.ok[id] >= v.limit {
			http.Error(w, "too many requests from you", http.StatusForbidden)
			return
		}
		v.ok[id]++
		v.ua[id] = r.UserAgent()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body><p id="visitor">%s</p></body></html>`, id)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

// pages requests /0 ... /n-1, and m pages pinned to the session "alice".
type pages struct {
	spider.Base
	base string
	n, m int
	mu   sync.Mutex
	seen map[string][]string // session meta ("" unpinned) -> visitors
}

func (*pages) Name() string { return "pages" }

func (s *pages) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for i := range s.n {
			if !yield(spider.NewRequest(fmt.Sprintf("%s/%d", s.base, i), nil)) {
				return
			}
		}
		if s.m > 0 {
			yield(s.alice(0))
		}
	}
}

// alice is the i-th page pinned to the session "alice". The first one
// establishes the identity (like a login); its callback asks for the
// others, so they all go out with alice's cookie.
func (s *pages) alice(i int) (*spider.Request, error) {
	r, err := spider.NewRequest(fmt.Sprintf("%s/alice/%d", s.base, i), nil)
	if r != nil {
		r.Set("session", "alice")
	}
	return r, err
}

func (s *pages) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	pin, _ := res.Request.Get("session").(string)
	s.mu.Lock()
	s.seen[pin] = append(s.seen[pin], strings.TrimSpace(res.Find("#visitor").Text()))
	s.mu.Unlock()
	if pin != "" && strings.HasSuffix(res.Request.URL.Path, "/alice/0") {
		for i := 1; i < s.m; i++ {
			r, err := s.alice(i)
			if err != nil {
				return err
			}
			out.Request(r)
		}
	}
	return nil
}

func run(t *testing.T, sp *pages, kv map[string]any) map[string]float64 {
	t.Helper()
	set := settings.New()
	base := map[string]any{"LOGSTATS_INTERVAL": 0, "RETRY_ENABLED": false, "ROBOTSTXT_OBEY": false,
		"CONCURRENT_REQUESTS": 2, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "SESSION_USER_AGENTS": []any{"UA-a", "UA-b", "UA-c"}}
	for k, v := range kv {
		base[k] = v
	}
	for k, v := range base {
		if err := set.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	e, err := engine.New(sp, set, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res.Stats
}

// Sessions rotate, keep their cookies, get retired when the site refuses
// them, and the refused requests are retried with fresh sessions, so
// every page is fetched; a pinned session stays one identity.
func TestSessionsRotateAndRetire(t *testing.T) {
	v := newVisitors(t, 5)
	sp := &pages{base: v.srv.URL, n: 30, m: 4, seen: map[string][]string{}}
	st := run(t, sp, map[string]any{"SESSION_POOL_SIZE": 3, "PROXY_RETRY_TIMES": 5})
	if got := len(sp.seen[""]); got != 30 {
		t.Errorf("%d of 30 unpinned pages fetched; stats %v", got, st)
	}
	alice := sp.seen["alice"]
	if len(alice) != 4 {
		t.Fatalf("%d of 4 pinned pages fetched", len(alice))
	}
	for _, id := range alice {
		if id != alice[0] {
			t.Errorf("the pinned session changed identity: %v", alice)
		}
	}
	for _, id := range sp.seen[""] {
		if id == alice[0] {
			t.Errorf("an unpinned request went out as alice's visitor %s", id)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.known < 20 {
		t.Errorf("only %d requests carried their session's cookie", v.known)
	}
	// 30 unpinned pages at 5 per identity need more identities than the
	// 3 sessions of the pool: refused sessions were retired and replaced.
	if st["session/retired/banned"] < 1 || st["session/created"] < 5 {
		t.Errorf("retired %v, created %v", st["session/retired/banned"], st["session/created"])
	}
	for id, n := range v.ok {
		if n > v.limit {
			t.Errorf("visitor %s made %d requests past the site's limit", id, n)
		}
	}
	uas := map[string]bool{}
	for _, ua := range v.ua {
		uas[ua] = true
	}
	if !uas["UA-a"] || !uas["UA-b"] || !uas["UA-c"] {
		t.Errorf("User-Agents seen %v, want the SESSION_USER_AGENTS in turn", uas)
	}
}

// With JOBDIR the sessions and their cookies are saved, and a resumed
// crawl goes on as the same visitors.
func TestSessionsPersistInJobDir(t *testing.T) {
	v := newVisitors(t, 100)
	dir := t.TempDir()
	sp := &pages{base: v.srv.URL, n: 6, seen: map[string][]string{}}
	// One request at a time: a new session's first two requests would
	// otherwise both go out before the site's cookie came back.
	one := map[string]any{"SESSION_POOL_SIZE": 2, "JOBDIR": dir, "CONCURRENT_REQUESTS": 1}
	run(t, sp, one)
	raw, err := os.ReadFile(filepath.Join(dir, "sessions.json"))
	if err != nil || !strings.Contains(string(raw), `"visitor"`) {
		t.Fatalf("sessions.json: %v\n%s", err, raw)
	}
	first := map[string]bool{}
	for _, id := range sp.seen[""] {
		first[id] = true
	}
	if len(first) != 2 {
		t.Fatalf("first run as %d visitors, want 2", len(first))
	}
	sp2 := &pages{base: v.srv.URL + "/again", n: 6, seen: map[string][]string{}}
	st := run(t, sp2, one)
	for _, id := range sp2.seen[""] {
		if !first[id] {
			t.Errorf("the resumed crawl came as a new visitor %s (first run: %v)", id, first)
		}
	}
	if st["session/restored"] != 2 {
		t.Errorf("session/restored = %v", st["session/restored"])
	}
}
