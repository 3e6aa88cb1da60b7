package pgsink_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gocrawl/gocrawl/devtools/pgtest"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	_ "github.com/gocrawl/gocrawl/pipeline/feed/pgsink"
)

var (
	once   sync.Once
	shared *pgtest.Server
	dbs    int
	dbMu   sync.Mutex
)

// server returns the package's server, started by the first test that
// asks (one initdb per test binary).
func server(t *testing.T) *pgtest.Server {
	t.Helper()
	once.Do(func() { shared = pgtest.Start(sharedT) })
	if shared == nil {
		t.Fatal("PostgreSQL did not start")
	}
	return shared
}

// sharedT owns the shared server: it is stopped when the binary's tests end.
var sharedT = &keeper{}

type keeper struct {
	testing.TB
	cleanups []func()
}

func (k *keeper) Helper()                   {}
func (k *keeper) Cleanup(f func())          { k.cleanups = append(k.cleanups, f) }
func (k *keeper) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (k *keeper) Fatal(a ...any)            { panic(fmt.Sprint(a...)) }
func (k *keeper) Skipf(f string, a ...any) {
	fmt.Printf(f+"\n", a...)
	os.Exit(0)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(sharedT.cleanups) - 1; i >= 0; i-- {
		sharedT.cleanups[i]()
	}
	os.Exit(code)
}

// newDB creates a database for one test and returns its URL.
func newDB(t *testing.T) (*pgtest.Server, string) {
	s := server(t)
	dbMu.Lock()
	dbs++
	name := fmt.Sprintf("t%d", dbs)
	dbMu.Unlock()
	return s, s.CreateDB(t, name)
}

func query(t *testing.T, url, q string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type quote struct {
	URL    string         `json:"url"`
	Text   string         `json:"text"`
	Likes  int            `json:"likes"`
	Pinned bool           `json:"pinned"`
	Meta   map[string]int `json:"meta"`
}

func export(t *testing.T, target string, opts feed.Options, items ...any) {
	t.Helper()
	ex, err := feed.New(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Check(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, err := ex.ProcessItem(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCreatesTableWithTypes(t *testing.T) {
	_, url := newDB(t)
	export(t, url+"?table=quotes&key=url", feed.Options{},
		quote{URL: "https://a/1", Text: "it's", Likes: 3, Pinned: true, Meta: map[string]int{"n": 1}},
		map[string]any{"url": "https://a/2", "text": "two", "likes": 2.5, "author": "Ann"})
	cols := query(t, url, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), coalesce(i.indisprimary, false)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey)
		WHERE a.attrelid = 'quotes'::regclass AND a.attnum > 0 ORDER BY a.attnum`)
	want := "url|text|true text|text|false likes|numeric|false pinned|boolean|false meta|jsonb|false _extra|jsonb|false"
	if strings.Join(cols, " ") != want {
		t.Errorf("columns:\n got %s\nwant %s", strings.Join(cols, " "), want)
	}
	rows := query(t, url, `SELECT url, text, likes::text, pinned, meta::text, coalesce(_extra::text, '-') FROM quotes ORDER BY url`)
	wantRows := []string{`https://a/1|it's|3|true|{"n": 1}|-`, `https://a/2|two|2.5|false|<nil>|{"author": "Ann"}`}
	// pinned is null for the map item, which has no such field.
	wantRows[1] = `https://a/2|two|2.5|<nil>|<nil>|{"author": "Ann"}`
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
}

// TestTableNamedLikeAType: a table called jsonb (or text) is written, not
// mistaken for the built-in type of that name.
func TestTableNamedLikeAType(t *testing.T) {
	_, url := newDB(t)
	export(t, url+"?table=jsonb&key=url", feed.Options{}, quote{URL: "https://a/1", Text: "one"})
	export(t, url+"?table=jsonb&key=url", feed.Options{}, quote{URL: "https://a/1", Text: "again"})
	if rows := query(t, url, `SELECT url, text FROM public.jsonb`); strings.Join(rows, " ") != "https://a/1|again" {
		t.Errorf("rows %v", rows)
	}
}

func TestUpsertOnResume(t *testing.T) {
	_, url := newDB(t)
	target := url + "?key=url"
	export(t, target, feed.Options{BatchItems: 2},
		map[string]any{"url": "u1", "n": 1}, map[string]any{"url": "u2", "n": 1}, map[string]any{"url": "u1", "n": 2})
	// The resumed run exports u2 again (its request was not acknowledged).
	export(t, target, feed.Options{}, map[string]any{"url": "u2", "n": 3}, map[string]any{"url": "u3", "n": 1})
	got := query(t, url, "SELECT url, n::text FROM items ORDER BY url")
	if strings.Join(got, " ") != "u1|2 u2|3 u3|1" {
		t.Errorf("rows = %v, want one per key with the last values", got)
	}
}

func TestUserTable(t *testing.T) {
	s, url := newDB(t)
	s.Exec(t, strings.TrimPrefix(url[strings.LastIndex(url, "/"):], "/"),
		"CREATE SCHEMA shop",
		"CREATE TABLE shop.products (id serial PRIMARY KEY, url text UNIQUE NOT NULL, price numeric(10,2), seen timestamptz)")
	export(t, url+"?table=shop.products&key=url", feed.Options{},
		map[string]any{"url": "p1", "price": "3.50", "seen": "2026-01-02T03:04:05Z"})
	got := query(t, url, "SELECT id, url, price::text, extract(year from seen)::text FROM shop.products")
	if strings.Join(got, " ") != "1|p1|3.50|2026" {
		t.Errorf("rows = %v", got)
	}
}

func TestServerRestartLosesNothing(t *testing.T) {
	s, url := newDB(t)
	ex, err := feed.New(url+"?table=items&key=url", feed.Options{BatchItems: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Check(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	item := func(i int) map[string]any { return map[string]any{"url": fmt.Sprintf("u%03d", i), "n": i} }
	for i := range 25 {
		if _, err := ex.ProcessItem(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	for i := 25; i < 60; i++ { // the server is away: the items wait
		if _, err := ex.ProcessItem(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	flushed := make(chan error, 1)
	go func() { flushed <- ex.Flush() }() // waits while the writer retries
	s.Restart(t)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	for i := 60; i < 70; i++ {
		if _, err := ex.ProcessItem(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := query(t, url, "SELECT count(*), count(DISTINCT url), min(n)::text, max(n)::text FROM items")
	if got[0] != "70|70|0|69" {
		t.Errorf("count, distinct, min, max = %s; want every one of the 70 items once", got[0])
	}
}

func TestStartupErrors(t *testing.T) {
	s, url := newDB(t)
	db := url[strings.LastIndex(url, "/")+1:]
	s.Exec(t, db,
		"CREATE ROLE reader LOGIN PASSWORD 'reader-pw'",
		"CREATE TABLE locked (url text PRIMARY KEY, n int)",
		"GRANT SELECT ON locked TO reader",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"CREATE TABLE nokey (url text, n int)")
	closed := fmt.Sprintf("postgresql://postgres:%s@127.0.0.1:1/x", pgtest.Password)
	for _, tc := range []struct {
		name, target, want string
	}{
		{"wrong password", s.UserURL(pgtest.Superuser, "not-the-password", db), "password authentication failed"},
		{"unreachable", closed, "cannot connect to PostgreSQL"},
		{"no insert privilege", s.UserURL("reader", "reader-pw", db) + "?table=locked", "no INSERT privilege on table locked"},
		{"no create privilege", s.UserURL("reader", "reader-pw", db) + "?table=newtable", "may not create it"},
		{"no unique key", url + "?table=nokey&key=url", "primary key or unique index"},
		{"missing database", s.URL("nosuchdb"), `database "nosuchdb" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := feed.New(tc.target, feed.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close(context.Background())
			err = ex.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, feed.ErrSink) {
				t.Fatalf("Check = %v, want an ErrSink saying %q", err, tc.want)
			}
			for _, pw := range []string{pgtest.Password, "not-the-password", "reader-pw"} {
				if strings.Contains(err.Error(), pw) {
					t.Errorf("the error shows a password: %v", err)
				}
			}
		})
	}
	for _, tc := range []struct{ target, want string }{
		{"postgresql://u:sekrit@host:notaport/db", "not a valid"},
		{"postgresql://u:sekrit@h/db?key=", "empty field name"},
		{"postgresql://u:sekrit@h/db?table=.x", "schema.table"},
	} {
		_, err := feed.New(tc.target, feed.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("New(%s) = %v, want an error saying %q without the password", tc.target, err, tc.want)
		}
	}
}
