package sqlitesink

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pipeline/feed/sqlitem"
)

// A batch is written with prepared multi-row statements, INSERT INTO t
// (columns) VALUES (?, ?), (?, ?) ... [ON CONFLICT (key) DO UPDATE], each
// for up to rowsPerStmt records, a parameter per value. The statements are
// kept from batch to batch (one for a full group of rows, one for each
// shorter group seen, per set of columns written). Binding values is
// cheaper than the json_each statement this replaced, which had SQLite
// parse the whole batch as JSON again (BenchmarkWrite: about 2.5x less
// time per batch).

// rowsPerStmt is how many records one statement writes at most.
const rowsPerStmt = 100

// maxVars is SQLite's limit on the parameters of a statement
// (SQLITE_MAX_VARIABLE_NUMBER, 32766 since 3.32).
const maxVars = 32766

// maxStmts bounds the prepared statements kept (items with ever new sets
// of fields would otherwise add one for each set).
const maxStmts = 64

// stmtKey names a prepared statement: the columns it writes (one byte a
// column, then the extra column's) and its number of rows.
type stmtKey struct {
	cols string
	rows int
}

// plan is how a batch is written: the columns it fills and a prepared
// statement for each group of rows.
type plan struct {
	used      []bool // the columns written (s.cols order)
	usedExtra bool
	stmts     []*sql.Stmt // one for each group of rows, in order
	per       int         // rows of a full group
}

// plan splits batch to find the columns it fills (those are written, the
// others keep their values or defaults) and prepares the statements. It
// returns nil for records without fields.
func (s *Sink) plan(ctx context.Context, batch []feed.Record) (*plan, error) {
	p := &plan{used: s.used}
	clear(p.used)
	for _, r := range batch {
		values, extra, err := s.split.Split(r)
		if err != nil {
			return nil, err
		}
		for j, v := range values {
			if v != nil {
				p.used[j] = true
			}
		}
		p.usedExtra = p.usedExtra || extra != nil
	}
	var mask []byte
	var names []string
	for j, u := range p.used {
		mask = append(mask, boolByte(u))
		if u {
			names = append(names, s.cols[j])
		}
	}
	mask = append(mask, boolByte(p.usedExtra))
	if p.usedExtra {
		names = append(names, s.params.Extra)
	}
	if len(names) == 0 {
		return nil, nil
	}
	p.per = min(rowsPerStmt, maxVars/len(names))
	if len(s.stmts)+2 > maxStmts { // a batch needs two at most
		s.dropStmts()
	}
	for rest := len(batch); rest > 0; rest -= p.per {
		st, err := s.stmt(ctx, stmtKey{string(mask), min(p.per, rest)}, names)
		if err != nil {
			return nil, err
		}
		p.stmts = append(p.stmts, st)
	}
	return p, nil
}

// insert writes batch in tx as p says.
func (s *Sink) insert(ctx context.Context, tx *sql.Tx, batch []feed.Record, p *plan) error {
	for _, stmt := range p.stmts {
		n := min(p.per, len(batch))
		args := s.args[:0]
		for _, r := range batch[:n] {
			values, extra, err := s.split.Split(r)
			if err != nil {
				return err
			}
			for j, v := range values {
				if p.used[j] {
					a, err := sqlValue(v)
					if err != nil {
						return fmt.Errorf("field %s: %w", s.cols[j], err)
					}
					args = append(args, a)
				}
			}
			if p.usedExtra {
				if extra == nil {
					args = append(args, nil)
				} else {
					args = append(args, string(extra))
				}
			}
		}
		_, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
		clear(args) // let go of the values
		s.args = args[:0]
		if err != nil {
			return err
		}
		batch = batch[n:]
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// stmt returns the prepared statement of k, preparing it the first time.
func (s *Sink) stmt(ctx context.Context, k stmtKey, names []string) (*sql.Stmt, error) {
	if st, ok := s.stmts[k]; ok {
		return st, nil
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")"
	var q strings.Builder
	q.WriteString("INSERT INTO " + s.ref + " (" + sqlitem.QuoteList(names) + ") VALUES ")
	for i := range k.rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
	}
	if len(s.params.Key) > 0 {
		var set []string
		for _, n := range names {
			if !slices.Contains(s.params.Key, n) {
				set = append(set, sqlitem.Quote(n)+" = excluded."+sqlitem.Quote(n))
			}
		}
		if len(set) == 0 {
			q.WriteString(" ON CONFLICT (" + sqlitem.QuoteList(s.params.Key) + ") DO NOTHING")
		} else {
			q.WriteString(" ON CONFLICT (" + sqlitem.QuoteList(s.params.Key) + ") DO UPDATE SET " + strings.Join(set, ", "))
		}
	}
	st, err := s.db.PrepareContext(ctx, q.String())
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[stmtKey]*sql.Stmt{}
	}
	s.stmts[k] = st
	return st, nil
}

// dropStmts closes the prepared statements (the columns changed, or the
// database is closed).
func (s *Sink) dropStmts() {
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
}

// sqlValue is the SQLite value of a JSON value, as SQLite's ->> operator
// gives it: null as NULL, true and false as 1 and 0, a number as an
// integer or a real, a string as its text, a list or an object as its
// JSON text.
func sqlValue(v json.RawMessage) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	switch v[0] {
	case 'n':
		return nil, nil
	case 't':
		return int64(1), nil
	case 'f':
		return int64(0), nil
	case '"':
		if bytes.IndexByte(v, '\\') < 0 {
			return string(v[1 : len(v)-1]), nil
		}
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return nil, err
		}
		return str, nil
	case '{', '[':
		return string(v), nil
	}
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return i, nil
	}
	if f, err := strconv.ParseFloat(string(v), 64); err == nil {
		return f, nil
	}
	return string(v), nil // a number too large for a real: kept as written
}
