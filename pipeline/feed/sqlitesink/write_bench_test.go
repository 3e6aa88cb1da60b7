package sqlitesink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pipeline/feed/sqlitem"
)

// BenchmarkWrite compares two ways of upserting a batch of 1,000 items
// (S1F's: url, status, title, depth; key=url) into SQLite, each batch new
// rows, one transaction a batch:
//
//   - values: what Write does, prepared INSERT ... VALUES (?, ?, ...),
//     (...) ... ON CONFLICT statements with a parameter per value, kept
//     from batch to batch;
//   - json: what Write did before, one INSERT ... SELECT FROM
//     json_each(?) ... ON CONFLICT with the batch as one JSON array, which
//     SQLite parses.
//
// SQLite runs in the crawler's process: ns/op and allocs/op (one op is one
// batch) are the whole cost.
func BenchmarkWrite(b *testing.B) {
	const size = 1000
	seq := 0
	batchAt := func() []feed.Record {
		out := make([]feed.Record, size)
		for i := range out {
			n := seq*size + i
			for _, kv := range []struct{ k, v string }{
				{"url", fmt.Sprintf(`"http://one.test:8080/p/%d"`, n)}, {"status", "200"},
				{"title", fmt.Sprintf(`"Page %d of the tree"`, n)}, {"depth", strconv.Itoa(n % 7)},
			} {
				out[i].Fields = append(out[i].Fields, feed.Field{Name: kv.k, Value: json.RawMessage(kv.v)})
			}
		}
		seq++
		return out
	}
	for _, method := range []string{"values", "json"} {
		b.Run(method, func(b *testing.B) {
			ctx := context.Background()
			u, _ := url.Parse("sqlite://" + filepath.Join(b.TempDir(), "items.db") + "?key=url")
			fs, err := Open(u)
			if err != nil {
				b.Fatal(err)
			}
			s := fs.(*Sink)
			defer s.Close()
			if err := s.Write(ctx, batchAt()); err != nil { // creates the table
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				batch := batchAt()
				b.StartTimer()
				if method == "values" {
					err = s.Write(ctx, batch)
				} else {
					err = writeJSONEach(ctx, s, batch)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeJSONEach writes batch with one INSERT ... SELECT FROM json_each
// statement (BenchmarkWrite's json).
func writeJSONEach(ctx context.Context, s *Sink, batch []feed.Record) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	arr := []byte{'['}
	for i, r := range s.params.Dedupe(batch) {
		values, _, err := s.split.Split(r)
		if err != nil {
			return err
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, '[')
		for j, v := range values {
			if j > 0 {
				arr = append(arr, ',')
			}
			arr = append(arr, v...)
		}
		arr = append(arr, ']')
	}
	arr = append(arr, ']')
	var exprs, set []string
	for j, c := range s.cols {
		exprs = append(exprs, fmt.Sprintf("value ->> %d", j))
		if c != "url" {
			set = append(set, sqlitem.Quote(c)+" = excluded."+sqlitem.Quote(c))
		}
	}
	q := "INSERT INTO " + s.ref + " (" + sqlitem.QuoteList(s.cols) + ") SELECT " + strings.Join(exprs, ", ") +
		" FROM json_each(?) WHERE true ON CONFLICT (url) DO UPDATE SET " + strings.Join(set, ", ")
	if _, err := tx.ExecContext(ctx, q, string(arr)); err != nil {
		return err
	}
	return tx.Commit()
}
