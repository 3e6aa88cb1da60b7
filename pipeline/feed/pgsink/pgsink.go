// Package pgsink stores scraped items in a PostgreSQL table. Importing it
// registers the postgresql:// and postgres:// feed targets:
//
//	gocrawl run quotes -o 'postgresql://crawler@db.example:5432/crawl?table=quotes&key=url'
//
// The URI is a libpq connection URI: what it leaves out (user, password,
// host, port, database, sslmode) comes from the environment as with psql
// (PGUSER, PGPASSWORD, PGHOST, PGPORT, PGDATABASE, PGSSLMODE, ~/.pgpass).
// Besides the libpq parameters it takes table (default items; may be
// schema.table), key (the upsert key: key=url, or key=site,id) and extra
// (the jsonb column for fields without a column, default _extra).
//
// The table is created when missing, from the first item (see package
// sqlitem for the column types), with the key as its primary key. Each
// batch is one INSERT ... SELECT FROM jsonb_populate_recordset statement,
// so the server converts every value to its column's type and a batch is
// stored entirely or not at all; with a key it is an upsert (ON CONFLICT
// DO UPDATE). A lost connection is reported as feed.ErrUnavailable: the
// feed retries with backoff and reconnects.
package pgsink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pipeline/feed/sqlitem"
)

func init() {
	feed.RegisterSink("postgresql", Open)
	feed.RegisterSink("postgres", Open)
}

// Sink is a PostgreSQL table written by one connection.
type Sink struct {
	cfg    *pgx.ConnConfig
	params sqlitem.Params
	schema string // "" = the search path's
	table  string
	ref    string // quoted [schema.]table
	row    string // the table's row type, schema-qualified (load sets it)

	conn  *pgx.Conn
	known bool // cols, index and hasExtra are loaded
	cols  []string
	index map[string]int
	extra bool

	// Reused from batch to batch once the columns are known.
	split *sqlitem.Splitter
	names [][]byte // each column's name as a JSON string
	used  []bool
	arr   []byte // the batch as a JSON array of objects
}

// Open returns the sink of a postgresql:// URI. It does not connect:
// Check and Write do.
func Open(u *url.URL) (feed.Sink, error) {
	q := u.Query()
	p, err := sqlitem.ParseParams(q)
	if err != nil {
		return nil, err
	}
	c := *u
	c.RawQuery = q.Encode()
	cfg, err := pgx.ParseConfig(c.String())
	if err != nil {
		return nil, fmt.Errorf("not a valid PostgreSQL connection URI: %w", err)
	}
	s := &Sink{cfg: cfg, params: p, table: p.Table}
	if schema, table, ok := strings.Cut(p.Table, "."); ok {
		if schema == "" || table == "" {
			return nil, fmt.Errorf("table %q: use table or schema.table", p.Table)
		}
		s.schema, s.table = schema, table
		s.ref = sqlitem.Quote(schema) + "." + sqlitem.Quote(table)
	} else {
		s.ref = sqlitem.Quote(p.Table)
	}
	return s, nil
}

// Validate implements feed.Validator: an item must have the key fields.
func (s *Sink) Validate(r feed.Record) error { return s.params.Validate(r) }

func (s *Sink) connect(ctx context.Context) error {
	if s.conn != nil {
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return err
	}
	s.conn = conn
	return nil
}

func (s *Sink) drop() {
	if s.conn != nil {
		s.conn.Close(context.Background())
		s.conn = nil
	}
}

// Check connects and verifies that the table can be written: with the
// INSERT (and, with a key, UPDATE) privilege and a unique index on the
// key when it exists, the CREATE privilege on its schema when it does not.
func (s *Sink) Check(ctx context.Context) error {
	if err := s.connect(ctx); err != nil {
		return fmt.Errorf("cannot connect to PostgreSQL: %w", err)
	}
	exists, err := s.exists(ctx)
	if err != nil {
		return err
	}
	if !exists {
		var ok bool
		schema := "current_schema()"
		args := []any{}
		if s.schema != "" {
			schema, args = "$1", append(args, s.schema)
		}
		err := s.conn.QueryRow(ctx, "SELECT coalesce(has_schema_privilege("+schema+", 'CREATE'), false)", args...).Scan(&ok)
		if err != nil {
			return fmt.Errorf("table %s does not exist and its schema cannot be checked: %w", s.params.Table, err)
		}
		if !ok {
			return fmt.Errorf("table %s does not exist and user %s may not create it (no CREATE privilege on the schema): create the table or grant the privilege",
				s.params.Table, s.cfg.User)
		}
		return nil
	}
	privs := []string{"INSERT"}
	if len(s.params.Key) > 0 {
		privs = append(privs, "UPDATE")
	}
	for _, priv := range privs {
		var ok bool
		if err := s.conn.QueryRow(ctx, "SELECT has_table_privilege($1::regclass, $2)", s.ref, priv).Scan(&ok); err != nil {
			return fmt.Errorf("table %s: %w", s.params.Table, err)
		}
		if !ok {
			return fmt.Errorf("user %s has no %s privilege on table %s: GRANT %s ON %s TO %s",
				s.cfg.User, priv, s.params.Table, strings.Join(privs, ", "), s.params.Table, s.cfg.User)
		}
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	for _, k := range s.params.Key {
		if _, ok := s.index[k]; !ok {
			return fmt.Errorf("table %s has no column %q for the key", s.params.Table, k)
		}
	}
	if len(s.params.Key) > 0 {
		// Planning the upsert checks that a unique index covers the key.
		keys := sqlitem.QuoteList(s.params.Key)
		sql := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, $1) ON CONFLICT (%s) DO NOTHING",
			s.ref, keys, keys, s.row, keys)
		if _, err := s.conn.Exec(ctx, "EXPLAIN "+sql, "[]"); err != nil {
			return fmt.Errorf("table %s cannot be upserted by key %s (it needs a primary key or unique index on exactly these columns): %w",
				s.params.Table, strings.Join(s.params.Key, ","), err)
		}
	}
	return nil
}

func (s *Sink) exists(ctx context.Context) (bool, error) {
	var oid *uint32
	if err := s.conn.QueryRow(ctx, "SELECT to_regclass($1)::oid", s.ref).Scan(&oid); err != nil {
		return false, fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	return oid != nil, nil
}

// load reads the table's columns and the schema it is in.
func (s *Sink) load(ctx context.Context) error {
	// The row type is named with its schema: pg_catalog comes first in
	// the search path, so a table called jsonb or text would otherwise
	// give the built-in type.
	var schema string
	if err := s.conn.QueryRow(ctx, "SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = $1::regclass", s.ref).Scan(&schema); err != nil {
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	// regnamespace's text is quoted as needed already.
	s.row = schema + "." + sqlitem.Quote(s.table)
	rows, err := s.conn.Query(ctx, "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", s.ref)
	if err != nil {
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	s.cols, s.index, s.extra = nil, map[string]int{}, false
	for _, c := range cols {
		if c == s.params.Extra {
			s.extra = true
			continue
		}
		s.index[c] = len(s.cols)
		s.cols = append(s.cols, c)
	}
	s.split = sqlitem.NewSplitter(s.cols, s.index, s.extra, s.params.Extra)
	s.names = make([][]byte, len(s.cols)+1)
	for i, c := range append(s.cols[:len(s.cols):len(s.cols)], s.params.Extra) {
		s.names[i] = sqlitem.AppendJSONString(nil, c)
	}
	s.used = make([]bool, len(s.cols))
	s.known = true
	return nil
}

var pgType = map[sqlitem.Kind]string{sqlitem.Text: "text", sqlitem.Number: "numeric", sqlitem.Bool: "boolean", sqlitem.JSON: "jsonb"}

// create creates the table for r when it does not exist.
func (s *Sink) create(ctx context.Context, r feed.Record) error {
	var defs []string
	for _, c := range s.params.Columns(r) {
		defs = append(defs, sqlitem.Quote(c.Name)+" "+pgType[c.Kind])
	}
	if len(s.params.Key) > 0 {
		defs = append(defs, "PRIMARY KEY ("+sqlitem.QuoteList(s.params.Key)+")")
	}
	_, err := s.conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+s.ref+" ("+strings.Join(defs, ", ")+")")
	return err
}

// Write stores batch in one statement.
func (s *Sink) Write(ctx context.Context, batch []feed.Record) error {
	if err := s.write(ctx, batch); err != nil {
		if ctx.Err() == nil && transient(err) {
			s.drop()
			return fmt.Errorf("%w: %w", feed.ErrUnavailable, err)
		}
		return err
	}
	return nil
}

func (s *Sink) write(ctx context.Context, batch []feed.Record) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	if !s.known {
		exists, err := s.exists(ctx)
		if err != nil {
			return err
		}
		if !exists {
			if err := s.create(ctx, batch[0]); err != nil {
				return fmt.Errorf("creating table %s: %w", s.params.Table, err)
			}
		}
		if err := s.load(ctx); err != nil {
			return err
		}
	}
	batch = s.params.Dedupe(batch)
	// The batch is one JSON array of objects, each with the fields that
	// have a column and the extra column's object: written straight from
	// the records' field values into a buffer kept from batch to batch.
	used := s.used
	clear(used)
	usedExtra := false
	arr := append(s.arr[:0], '[')
	for i, r := range batch {
		values, extra, err := s.split.Split(r)
		if err != nil {
			return permanent{fmt.Errorf("table %s: %w", s.params.Table, err)}
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, '{')
		n := 0
		for j, v := range values {
			if v == nil {
				continue
			}
			used[j] = true
			arr = appendMember(arr, &n, s.names[j], v)
		}
		if extra != nil {
			usedExtra = true
			arr = appendMember(arr, &n, s.names[len(s.cols)], extra)
		}
		arr = append(arr, '}')
	}
	arr = append(arr, ']')
	s.arr = arr
	var names []string
	for j, u := range used {
		if u {
			names = append(names, s.cols[j])
		}
	}
	if usedExtra {
		names = append(names, s.params.Extra)
	}
	if len(names) == 0 {
		return nil // items without fields
	}
	cols := sqlitem.QuoteList(names)
	sql := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, $1::jsonb)", s.ref, cols, cols, s.row)
	if len(s.params.Key) > 0 {
		var set []string
		for _, n := range names {
			if !slices.Contains(s.params.Key, n) {
				set = append(set, sqlitem.Quote(n)+" = EXCLUDED."+sqlitem.Quote(n))
			}
		}
		if len(set) == 0 {
			sql += " ON CONFLICT (" + sqlitem.QuoteList(s.params.Key) + ") DO NOTHING"
		} else {
			sql += " ON CONFLICT (" + sqlitem.QuoteList(s.params.Key) + ") DO UPDATE SET " + strings.Join(set, ", ")
		}
	}
	// pgx sends a []byte for a jsonb parameter as it is: no copy.
	_, err := s.conn.Exec(ctx, sql, arr)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42703" || pe.Code == "42P01") {
			s.known = false // the table changed under us: reload it next time
		}
		return fmt.Errorf("table %s: %w", s.params.Table, err)
	}
	return nil
}

func appendMember(b []byte, n *int, name, v []byte) []byte {
	if *n > 0 {
		b = append(b, ',')
	}
	*n++
	b = append(b, name...)
	b = append(b, ':')
	return append(b, v...)
}

// transient reports whether err means the server is away (a lost
// connection, a server shutting down or starting, too many connections)
// rather than a problem with the statement or the data.
func transient(err error) bool {
	if errors.As(err, new(permanent)) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, starting
			pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock
			return true
		}
		return false
	}
	return true // no answer from the server: network, EOF, timeout
}

// permanent is an error of the data, not of the connection.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Close closes the connection.
func (s *Sink) Close() error {
	s.drop()
	return nil
}
