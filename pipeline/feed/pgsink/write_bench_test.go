package pgsink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/pgtest"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pipeline/feed/sqlitem"
)

// BenchmarkWrite compares three ways of upserting a batch of 1,000 items
// (S1F's: url, status, title, depth; key=url) into PostgreSQL, each
// batch new rows:
//
//   - jsonb: what Write does, one INSERT ... SELECT FROM
//     jsonb_populate_recordset($1) ... ON CONFLICT with the batch as one
//     JSON array;
//   - copy: COPY of the batch (text format) into a temporary table, then
//     one INSERT ... SELECT FROM it ... ON CONFLICT, in a transaction;
//   - values: one prepared INSERT ... VALUES ($1, $2, ...), (...) ... ON
//     CONFLICT with a parameter per value.
//
// Besides ns/op and allocs/op (one op is one batch) it reports the CPU
// per item of the server (server-µs/item, read from /proc/<backend
// pid>/stat) and of the benchmark's process (client-µs/item), since the
// database usually shares the machine's cores with the crawl.
func BenchmarkWrite(b *testing.B) {
	srv := pgtest.Start(b)
	base := srv.CreateDB(b, "bench")
	const size = 1000
	batchAt := func(seq int) []feed.Record {
		out := make([]feed.Record, size)
		for i := range out {
			n := seq*size + i
			obj := fmt.Sprintf(`{"url":"http://one.test:8080/p/%d","status":200,"title":"Page %d of the tree","depth":%d}`, n, n, n%7)
			var r feed.Record
			r.JSON = []byte(obj)
			for _, kv := range []struct{ k, v string }{
				{"url", fmt.Sprintf(`"http://one.test:8080/p/%d"`, n)}, {"status", "200"},
				{"title", fmt.Sprintf(`"Page %d of the tree"`, n)}, {"depth", strconv.Itoa(n % 7)},
			} {
				r.Fields = append(r.Fields, feed.Field{Name: kv.k, Value: json.RawMessage(kv.v)})
			}
			out[i] = r
		}
		return out
	}
	seq := 0
	for _, method := range []string{"jsonb", "copy", "values"} {
		b.Run(method, func(b *testing.B) {
			ctx := context.Background()
			u, _ := url.Parse(base + "?table=bench_" + method + "&key=url")
			fs, err := Open(u)
			if err != nil {
				b.Fatal(err)
			}
			s := fs.(*Sink)
			defer s.Close()
			if err := s.Write(ctx, batchAt(seq)); err != nil { // creates the table
				b.Fatal(err)
			}
			seq++
			batches := make([][]feed.Record, 0, 64)
			w := &altWriter{s: s}
			cpu0, self0 := backendCPU(b, s), selfCPU()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if len(batches) == 0 {
					for range 16 {
						batches = append(batches, batchAt(seq))
						seq++
					}
				}
				batch := batches[len(batches)-1]
				batches = batches[:len(batches)-1]
				b.StartTimer()
				switch method {
				case "jsonb":
					err = s.Write(ctx, batch)
				case "copy":
					err = w.copy(ctx, batch)
				case "values":
					err = w.values(ctx, batch)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((backendCPU(b, s)-cpu0).Microseconds())/float64(b.N*size), "server-µs/item")
			b.ReportMetric(float64((selfCPU()-self0).Microseconds())/float64(b.N*size), "client-µs/item")
		})
	}
}

// backendCPU returns the CPU time the sink's server process has used.
func backendCPU(b *testing.B, s *Sink) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.conn.PgConn().PID()))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // utime: field 14 of proc(5)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// selfCPU returns the CPU time this process has used (the benchmark's
// batches are built with the timer stopped, but still counted here: the
// same for every method).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// altWriter writes batches the two other ways, for the benchmark only.
type altWriter struct {
	s     *Sink
	temp  bool
	sql   string
	buf   bytes.Buffer
	args  []any
	names string
}

func (w *altWriter) copy(ctx context.Context, batch []feed.Record) error {
	s := w.s
	cols := sqlitem.QuoteList(s.cols)
	if !w.temp {
		if _, err := s.conn.Exec(ctx, "CREATE TEMP TABLE gocrawl_batch (LIKE "+s.ref+") ON COMMIT DELETE ROWS"); err != nil {
			return err
		}
		w.temp = true
		var set []string
		for _, c := range s.cols {
			if c != "url" {
				set = append(set, sqlitem.Quote(c)+" = EXCLUDED."+sqlitem.Quote(c))
			}
		}
		w.sql = "INSERT INTO " + s.ref + " (" + cols + ") SELECT " + cols + " FROM gocrawl_batch ON CONFLICT (url) DO UPDATE SET " + strings.Join(set, ", ")
	}
	w.buf.Reset()
	for _, r := range s.params.Dedupe(batch) {
		values, _, err := s.split.Split(r)
		if err != nil {
			return err
		}
		for j, v := range values {
			if j > 0 {
				w.buf.WriteByte('\t')
			}
			appendCopyText(&w.buf, v)
		}
		w.buf.WriteByte('\n')
	}
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := s.conn.PgConn().CopyFrom(ctx, &w.buf, "COPY gocrawl_batch ("+cols+") FROM STDIN"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, w.sql); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// appendCopyText writes a JSON value in COPY's text format: null as \N,
// a string unquoted, anything else as it is, escaped.
func appendCopyText(b *bytes.Buffer, v json.RawMessage) {
	if v == nil || string(v) == "null" {
		b.WriteString(`\N`)
		return
	}
	if v[0] == '"' {
		var s string
		if bytes.IndexByte(v, '\\') < 0 {
			s = string(v[1 : len(v)-1])
		} else {
			_ = json.Unmarshal(v, &s)
		}
		v = []byte(s)
	}
	for _, c := range v {
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
}

func (w *altWriter) values(ctx context.Context, batch []feed.Record) error {
	s := w.s
	batch = s.params.Dedupe(batch)
	cols := sqlitem.QuoteList(s.cols)
	var q strings.Builder
	q.WriteString("INSERT INTO " + s.ref + " (" + cols + ") VALUES ")
	w.args = w.args[:0]
	for i, r := range batch {
		values, _, err := s.split.Split(r)
		if err != nil {
			return err
		}
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for j, v := range values {
			if j > 0 {
				q.WriteByte(',')
			}
			// Text parameters cast to the column's type by the server.
			fmt.Fprintf(&q, "$%d", len(w.args)+1)
			var arg any
			if v != nil && string(v) != "null" {
				if v[0] == '"' {
					var str string
					_ = json.Unmarshal(v, &str)
					arg = str
				} else {
					arg = string(v)
				}
			}
			w.args = append(w.args, arg)
		}
		q.WriteByte(')')
	}
	var set []string
	for _, c := range s.cols {
		if c != "url" {
			set = append(set, sqlitem.Quote(c)+" = EXCLUDED."+sqlitem.Quote(c))
		}
	}
	q.WriteString(" ON CONFLICT (url) DO UPDATE SET " + strings.Join(set, ", "))
	_, err := s.conn.Exec(ctx, q.String(), w.args...)
	return err
}
