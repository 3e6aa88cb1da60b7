// Package sqlitesink stores scraped items in a SQLite database file, the
// embedded choice for users without a database server. Importing it
// registers the sqlite:// feed target:
//
//	gocrawl run quotes -o 'sqlite:///var/crawl/items.db?table=quotes&key=url'
//	gocrawl run quotes -o 'sqlite://items.db'   # relative to the working directory
//
// The parameters are those of every SQL sink: table (default items), key
// (the upsert key: key=url, or key=site,id) and extra (the JSON column for
// fields without a column, default _extra). The table is created when
// missing, from the first item (see package sqlitem), with the key as its
// primary key.
//
// The database is opened in WAL mode (readers such as the sqlite3 shell
// can query it while the crawl writes) with one connection, the only
// writer of the crawl. Each batch is written in its own transaction by
// prepared multi-row INSERT ... VALUES statements, kept from batch to
// batch; with a key they are upserts (ON CONFLICT DO UPDATE). A database
// locked by another process is reported as feed.ErrUnavailable, so the
// feed retries.
//
// Commits are synchronous (PRAGMA synchronous = FULL): a batch is on disk
// when Write returns, so a JOBDIR acknowledgement that follows it holds
// after a power loss too, not only after a crash of the crawler. In WAL
// mode that costs one fsync of the log per batch; NORMAL would save it
// but could lose the last batches with the machine, after their requests
// were acknowledged.
//
// It uses modernc.org/sqlite, a SQLite written in pure Go: no cgo.
package sqlitesink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pipeline/feed/sqlitem"
)

func init() { feed.RegisterSink("sqlite", Open) }

// Sink is a table of a SQLite database file.
type Sink struct {
	path   string
	params sqlitem.Params
	ref    string // quoted table

	db    *sql.DB
	known bool
	cols  []string
	index map[string]int
	extra bool

	// Reused from batch to batch once the columns are known.
	split *sqlitem.Splitter
	used  []bool
	args  []any
	stmts map[stmtKey]*sql.Stmt // prepared INSERTs (batch.go)
}

// Open returns the sink of a sqlite:// URI: sqlite:///absolute/path.db or
// sqlite://relative/path.db. It does not open the file: Check and Write
// do.
func Open(u *url.URL) (feed.Sink, error) {
	q := u.Query()
	p, err := sqlitem.ParseParams(q)
	if err != nil {
		return nil, err
	}
	if len(q) > 0 {
		return nil, fmt.Errorf("unknown parameter %q: sqlite:// takes table, key and extra", slices.Sorted(maps.Keys(q))[0])
	}
	if u.User != nil {
		return nil, errors.New("a SQLite database has no user: use sqlite:///path/items.db")
	}
	path := u.Host + u.Path
	if u.Opaque != "" {
		path = u.Opaque
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return nil, errors.New("no database file: use sqlite:///absolute/items.db or sqlite://relative/items.db")
	}
	return &Sink{path: filepath.Clean(path), params: p, ref: sqlitem.Quote(p.Table)}, nil
}

// Validate implements feed.Validator: an item must have the key fields.
func (s *Sink) Validate(r feed.Record) error { return s.params.Validate(r) }

func (s *Sink) open(ctx context.Context) error {
	if s.db != nil {
		return nil
	}
	if dir := filepath.Dir(s.path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cannot create the directory of %s: %w", s.path, err)
		}
	}
	dsn := "file:" + (&url.URL{Path: s.path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(1) // one writer
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return fmt.Errorf("cannot open %s: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return fmt.Errorf("cannot open %s in WAL mode (journal_mode is %s)", s.path, mode)
	}
	s.db = db
	return nil
}

// Check opens the database and verifies that the table can be written: it
// takes the write lock once, and checks that a unique index covers the
// key of an existing table.
func (s *Sink) Check(ctx context.Context) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		return fmt.Errorf("%s cannot be written: %w", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS gocrawl_write_check (x)"); err != nil {
		return fmt.Errorf("%s cannot be written: %w", s.path, err)
	}
	exists, err := s.exists(ctx, tx)
	if err != nil || !exists {
		return err
	}
	if err := s.load(ctx, tx); err != nil {
		return err
	}
	for _, k := range s.params.Key {
		if _, ok := s.index[k]; !ok {
			return fmt.Errorf("table %s has no column %q for the key", s.params.Table, k)
		}
	}
	if len(s.params.Key) > 0 {
		keys := sqlitem.QuoteList(s.params.Key)
		q := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM json_each('[]') WHERE true ON CONFLICT (%s) DO NOTHING", s.ref, keys, keys, keys)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("table %s cannot be upserted by key %s (it needs a primary key or unique index on exactly these columns): %w",
				s.params.Table, strings.Join(s.params.Key, ","), err)
		}
	}
	return nil
}

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func (s *Sink) exists(ctx context.Context, q querier) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", s.params.Table).Scan(&n); err != nil {
		return false, fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	return n > 0, nil
}

func (s *Sink) load(ctx context.Context, q querier) error {
	rows, err := q.QueryContext(ctx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", s.params.Table)
	if err != nil {
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	defer rows.Close()
	s.cols, s.index, s.extra = nil, map[string]int{}, false
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return err
		}
		if c == s.params.Extra {
			s.extra = true
			continue
		}
		s.index[c] = len(s.cols)
		s.cols = append(s.cols, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.split = sqlitem.NewSplitter(s.cols, s.index, s.extra, s.params.Extra)
	s.used = make([]bool, len(s.cols))
	s.dropStmts()
	s.known = true
	return nil
}

var sqliteType = map[sqlitem.Kind]string{sqlitem.Text: "TEXT", sqlitem.Number: "NUMERIC", sqlitem.Bool: "BOOLEAN", sqlitem.JSON: "JSON"}

// Write stores batch in one transaction.
func (s *Sink) Write(ctx context.Context, batch []feed.Record) error {
	err := s.write(ctx, batch)
	if err != nil && ctx.Err() == nil && isBusy(err) {
		return fmt.Errorf("%w: %w", feed.ErrUnavailable, err)
	}
	return err
}

func (s *Sink) write(ctx context.Context, batch []feed.Record) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	if !s.known {
		if err := s.table(ctx, batch[0]); err != nil {
			return err
		}
	}
	batch = s.params.Dedupe(batch)
	// The statements are prepared before the transaction takes the one
	// connection.
	p, err := s.plan(ctx, batch)
	if err != nil || p == nil {
		if err != nil {
			s.known = false // reload the columns: the table may have changed
			return fmt.Errorf("table %s: %w", s.params.Table, err)
		}
		return nil // items without fields
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.insert(ctx, tx, batch, p); err != nil {
		s.known = false
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	return tx.Commit()
}

// table creates the table from r when it does not exist, and loads its
// columns.
func (s *Sink) table(ctx context.Context, r feed.Record) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	exists, err := s.exists(ctx, tx)
	if err != nil {
		return err
	}
	if !exists {
		var defs []string
		for _, c := range s.params.Columns(r) {
			defs = append(defs, sqlitem.Quote(c.Name)+" "+sqliteType[c.Kind])
		}
		if len(s.params.Key) > 0 {
			defs = append(defs, "PRIMARY KEY ("+sqlitem.QuoteList(s.params.Key)+")")
		}
		if _, err := tx.ExecContext(ctx, "CREATE TABLE "+s.ref+" ("+strings.Join(defs, ", ")+")"); err != nil {
			return fmt.Errorf("creating table %s: %w", s.params.Table, err)
		}
	}
	if err := s.load(ctx, tx); err != nil {
		s.known = false
		return err
	}
	if err := tx.Commit(); err != nil {
		s.known = false
		return err
	}
	return nil
}

// isBusy reports whether err is SQLite's "database is locked" (another
// process writes).
func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// Close closes the database.
func (s *Sink) Close() error {
	if s.db == nil {
		return nil
	}
	s.dropStmts()
	err := s.db.Close()
	s.db = nil
	return err
}
