package sqlitesink_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/pipeline/feed"
	_ "github.com/gocrawl/gocrawl/pipeline/feed/sqlitesink"
)

type quote struct {
	URL    string   `json:"url"`
	Text   string   `json:"text"`
	Likes  int      `json:"likes"`
	Score  float64  `json:"score"`
	Pinned bool     `json:"pinned"`
	Tags   []string `json:"tags"`
}

// export writes items through a feed to target and closes it.
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

func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCreatesTableWithTypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "items.db")
	export(t, "sqlite://"+path+"?table=quotes&key=url", feed.Options{},
		quote{URL: "https://a/1", Text: "one", Likes: 3, Score: 1.5, Pinned: true, Tags: []string{"x"}},
		map[string]any{"url": "https://a/2", "text": "two", "author": "Ann"})
	db := open(t, path)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	rows, err := db.Query("SELECT name, type, pk FROM pragma_table_info('quotes') ORDER BY cid")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name, typ string
		var pk int
		rows.Scan(&name, &typ, &pk)
		s := name + " " + typ
		if pk > 0 {
			s += " pk"
		}
		got = append(got, s)
	}
	want := "url TEXT pk,text TEXT,likes NUMERIC,score NUMERIC,pinned BOOLEAN,tags JSON,_extra JSON"
	if strings.Join(got, ",") != want {
		t.Errorf("columns:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	var likes int
	var score float64
	var pinned bool
	var tags string
	if err := db.QueryRow("SELECT likes, score, pinned, tags FROM quotes WHERE url = 'https://a/1'").Scan(&likes, &score, &pinned, &tags); err != nil {
		t.Fatal(err)
	}
	if likes != 3 || score != 1.5 || !pinned || tags != `["x"]` {
		t.Errorf("row 1 = %d %v %v %s", likes, score, pinned, tags)
	}
	var extra string
	if err := db.QueryRow("SELECT _extra FROM quotes WHERE url = 'https://a/2'").Scan(&extra); err != nil {
		t.Fatal(err)
	}
	if extra != `{"author":"Ann"}` {
		t.Errorf("_extra = %s, want the field without a column", extra)
	}
}

func TestUpsertByKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.db")
	target := "sqlite://" + path + "?key=url"
	export(t, target, feed.Options{BatchItems: 2},
		map[string]any{"url": "u1", "n": 1}, map[string]any{"url": "u2", "n": 1}, map[string]any{"url": "u1", "n": 2})
	// A resumed crawl exports u2 and u3 again.
	export(t, target, feed.Options{}, map[string]any{"url": "u2", "n": 3}, map[string]any{"url": "u3", "n": 1})
	db := open(t, path)
	rows, err := db.Query("SELECT url, n FROM items ORDER BY url")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var u string
		var n int
		rows.Scan(&u, &n)
		got = append(got, u+"="+string(rune('0'+n)))
	}
	if strings.Join(got, " ") != "u1=2 u2=3 u3=1" {
		t.Errorf("rows = %v, want one per key with the last values", got)
	}
}

func TestUserTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.db")
	db := open(t, path)
	if _, err := db.Exec("CREATE TABLE mine (id INTEGER PRIMARY KEY, url TEXT UNIQUE, title TEXT)"); err != nil {
		t.Fatal(err)
	}
	export(t, "sqlite://"+path+"?table=mine&key=url", feed.Options{}, map[string]any{"url": "u", "title": "T"})
	var id int
	var title string
	if err := db.QueryRow("SELECT id, title FROM mine WHERE url = 'u'").Scan(&id, &title); err != nil || id != 1 || title != "T" {
		t.Errorf("row = %d %q %v", id, title, err)
	}
	// A field without a column, and no _extra column: the crawl stops
	// with an error naming the field.
	ex, err := feed.New("sqlite://"+path+"?table=mine&key=url", feed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ex.Open(ctx, nil)
	ex.ProcessItem(ctx, map[string]any{"url": "v", "price": 3})
	err = ex.Flush()
	if err == nil || !strings.Contains(err.Error(), "price") {
		t.Errorf("Flush = %v, want an error naming the field price", err)
	}
	ex.Close(ctx)
}

func TestBadTargets(t *testing.T) {
	dir := t.TempDir()
	db := open(t, filepath.Join(dir, "k.db"))
	if _, err := db.Exec("CREATE TABLE nokey (url TEXT, title TEXT)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, want string
	}{
		{"sqlite://", "no database file"},
		{"sqlite:///tmp/x.db?table=", "table is empty"},
		{"sqlite:///tmp/x.db?key=a,,b", "empty field name"},
		{"sqlite:///tmp/x.db?colour=red", `unknown parameter "colour"`},
		{"sqlite://u:secret@x.db", "no user"},
	} {
		_, err := feed.New(tc.target, feed.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, feed.ErrSink) {
			t.Errorf("New(%s) = %v, want an ErrSink saying %q", tc.target, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("New(%s) = %v: the error shows the password", tc.target, err)
		}
	}
	for _, tc := range []struct {
		target, want string
	}{
		{"sqlite://" + filepath.Join(dir, "k.db") + "?table=nokey&key=url", "primary key or unique index"},
		{"sqlite://" + filepath.Join(dir, "k.db") + "?table=nokey&key=id", `no column "id"`},
		{"sqlite:///proc/items.db", "items.db"},
	} {
		ex, err := feed.New(tc.target, feed.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s) = %v, want an error saying %q", tc.target, err, tc.want)
		}
		ex.Close(context.Background())
	}
}

func TestItemWithoutKeyIsDropped(t *testing.T) {
	ex, err := feed.New("sqlite://"+filepath.Join(t.TempDir(), "i.db")+"?key=url", feed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ex.Open(ctx, nil)
	defer ex.Close(ctx)
	_, err = ex.ProcessItem(ctx, map[string]any{"title": "no url"})
	if !errors.Is(err, feed.ErrItem) || !strings.Contains(err.Error(), `"url"`) {
		t.Errorf("ProcessItem = %v, want an ErrItem naming the key field", err)
	}
}

// TestLargeBatch: a batch of several statements' rows (and a shorter
// last group), items with different fields in one batch: every item is
// stored once, each column from its own field, the rest in _extra.
func TestLargeBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.db")
	var items []any
	for i := range 250 {
		it := map[string]any{"url": fmt.Sprintf("u%03d", i), "n": i}
		if i%50 == 7 {
			it["note"] = fmt.Sprintf("q\"%d\\", i)
		}
		items = append(items, it)
	}
	export(t, "sqlite://"+path+"?key=url", feed.Options{BatchItems: 1000}, items...)
	db := open(t, path)
	var n, sum, extras int
	if err := db.QueryRow("SELECT count(*), sum(n), count(_extra) FROM items").Scan(&n, &sum, &extras); err != nil {
		t.Fatal(err)
	}
	if n != 250 || sum != 249*250/2 || extras != 5 {
		t.Errorf("rows %d, sum(n) %d, with _extra %d; want 250, %d, 5", n, sum, extras, 249*250/2)
	}
	var note string
	if err := db.QueryRow("SELECT _extra ->> 'note' FROM items WHERE url = 'u057'").Scan(&note); err != nil || note != `q"57\` {
		t.Errorf("u057's note = %q, %v", note, err)
	}
}
