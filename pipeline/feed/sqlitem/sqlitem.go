// Package sqlitem holds what the SQL item sinks (pgsink, sqlitesink) share:
// their URI parameters, the columns of a table created from an item, and
// the split of an item into column values and the rest.
//
// A table created from the first item has a column per top-level field,
// typed from the field's JSON value (a string is text, a number numeric,
// true/false boolean, a list or an object JSON, null text), and a JSON
// column (Params.Extra, "_extra" by default) that receives the fields of
// later items the table has no column for. With a key, the key columns
// are the table's primary key and writes replace the row with the same
// key (an upsert), so a resumed crawl that exports an item again does not
// add a row. A user's own table is used as it is: fields go to the columns
// of the same name, the others to the extra column (an error when the
// table has none).
package sqlitem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gocrawl/gocrawl/pipeline/feed"
)

// Kind is the kind of a JSON value, which a created column's type follows.
type Kind int

// The kinds.
const (
	Text Kind = iota
	Number
	Bool
	JSON
)

// Params are the URI query parameters every SQL sink takes.
type Params struct {
	// Table is the table written (?table=, default "items"); in
	// PostgreSQL it may name a schema too (schema.table).
	Table string
	// Key lists the fields of the upsert key (?key=url or key=a,b);
	// empty: rows are only inserted.
	Key []string
	// Extra is the JSON column for fields without a column (?extra=,
	// default "_extra").
	Extra string
}

// ParseParams takes the sink parameters (table, key, extra) out of q,
// which keeps the others (for the driver).
func ParseParams(q url.Values) (Params, error) {
	p := Params{Table: "items", Extra: "_extra"}
	if q.Has("table") {
		p.Table = q.Get("table")
		if p.Table == "" {
			return p, fmt.Errorf("table is empty: name the table, as in ?table=items")
		}
	}
	if q.Has("extra") {
		p.Extra = q.Get("extra")
		if p.Extra == "" {
			return p, fmt.Errorf("extra is empty: name the JSON column for fields without a column, or leave it out")
		}
	}
	if q.Has("key") {
		for _, k := range strings.Split(q.Get("key"), ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				return p, fmt.Errorf("key %q has an empty field name: use key=url or key=site,id", q.Get("key"))
			}
			if slices.Contains(p.Key, k) {
				return p, fmt.Errorf("key names %q twice", k)
			}
			p.Key = append(p.Key, k)
		}
	}
	if slices.Contains(p.Key, p.Extra) {
		return p, fmt.Errorf("the key field %q is also the extra column's name: rename the extra column with extra=", p.Extra)
	}
	for _, k := range []string{"table", "key", "extra"} {
		q.Del(k)
	}
	return p, nil
}

// Validate reports an item that cannot be stored: one without a key field,
// or whose key field is null.
func (p Params) Validate(r feed.Record) error {
	for _, k := range p.Key {
		v, ok := r.Get(k)
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return fmt.Errorf("the item has no %q field, which the sink's key needs (key=%s)", k, strings.Join(p.Key, ","))
		}
	}
	return nil
}

// KindOf returns the kind of a JSON value.
func KindOf(v json.RawMessage) Kind {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return Text
	}
	switch c := v[0]; {
	case c == '"' || c == 'n':
		return Text
	case c == 't' || c == 'f':
		return Bool
	case c == '{' || c == '[':
		return JSON
	default:
		return Number
	}
}

// Column is a column of a table to create.
type Column struct {
	Name string
	Kind Kind
}

// Columns returns the columns of a table created for r: its fields, then
// the extra column (of kind JSON) unless a field has its name.
func (p Params) Columns(r feed.Record) []Column {
	out := make([]Column, 0, len(r.Fields)+1)
	extra := true
	for _, f := range r.Fields {
		out = append(out, Column{Name: f.Name, Kind: KindOf(f.Value)})
		if f.Name == p.Extra {
			extra = false
		}
	}
	if extra {
		out = append(out, Column{Name: p.Extra, Kind: JSON})
	}
	return out
}

// Splitter splits records into the values of a table's columns and the
// fields without a column, reusing its memory from one record to the
// next: a sink splits a batch of records with no allocation per record.
type Splitter struct {
	cols      []string
	index     map[string]int
	hasExtra  bool
	extraName string

	values []json.RawMessage
	extra  []byte
}

// NewSplitter returns the splitter of a table with the columns cols (the
// extra column left out), index mapping a column's name to its position
// in cols, and an extra JSON column called extraName when hasExtra.
func NewSplitter(cols []string, index map[string]int, hasExtra bool, extraName string) *Splitter {
	return &Splitter{cols: cols, index: index, hasExtra: hasExtra, extraName: extraName,
		values: make([]json.RawMessage, len(cols))}
}

// Split splits r. values holds the value of each column, in the order of
// cols (nil where r lacks the field); extra the fields without a column as
// a JSON object (nil when there are none). Both are valid until the next
// call. It fails when fields have no column and the table has no extra
// column.
func (sp *Splitter) Split(r feed.Record) (values []json.RawMessage, extra []byte, err error) {
	clear(sp.values)
	sp.extra = sp.extra[:0]
	var missing []string
	for _, f := range r.Fields {
		if i, ok := sp.index[f.Name]; ok {
			sp.values[i] = f.Value
			continue
		}
		if !sp.hasExtra {
			missing = append(missing, f.Name)
			continue
		}
		if len(sp.extra) == 0 {
			sp.extra = append(sp.extra, '{')
		} else {
			sp.extra = append(sp.extra, ',')
		}
		sp.extra = AppendJSONString(sp.extra, f.Name)
		sp.extra = append(sp.extra, ':')
		sp.extra = append(sp.extra, f.Value...)
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("the table has no column for the fields %s and no %q JSON column for the rest: add the columns, or an %q column (jsonb in PostgreSQL, text in SQLite)",
			strings.Join(missing, ", "), sp.extraName, sp.extraName)
	}
	if len(sp.extra) == 0 {
		return sp.values, nil, nil
	}
	sp.extra = append(sp.extra, '}')
	return sp.values, sp.extra, nil
}

// AppendJSONString appends s to dst as a JSON string.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// Dedupe returns batch with only the last record of each key, in order:
// one statement cannot write the same row twice.
func (p Params) Dedupe(batch []feed.Record) []feed.Record {
	if len(p.Key) == 0 || len(batch) < 2 {
		return batch
	}
	last := make(map[string]int, len(batch))
	keys := make([]string, len(batch))
	for i, r := range batch {
		var b strings.Builder
		for _, k := range p.Key {
			v, _ := r.Get(k)
			b.Write(canonical(v))
			b.WriteByte(0)
		}
		keys[i] = b.String()
		last[keys[i]] = i
	}
	if len(last) == len(batch) {
		return batch
	}
	out := make([]feed.Record, 0, len(last))
	for i, r := range batch {
		if last[keys[i]] == i {
			out = append(out, r)
		}
	}
	return out
}

// canonical returns a JSON value in one spelling for comparisons.
func canonical(v json.RawMessage) []byte {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return v // a string without escapes has one spelling
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return v
	}
	b, _ := json.Marshal(x)
	return b
}

// Quote quotes an identifier for SQL ("name", inner quotes doubled).
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteList quotes each name (Quote) and joins them with commas, as a
// column list or a key in SQL.
func QuoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = Quote(n)
	}
	return strings.Join(q, ", ")
}
