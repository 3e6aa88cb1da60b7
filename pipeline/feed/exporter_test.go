package feed

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

type book struct {
	Title  string   `json:"title"`
	Price  float64  `json:"price"`
	Tags   []string `json:"tags,omitempty"`
	secret string
	Skip   string `json:"-"`
}

// export writes items to path with opts and returns the file's content.
func export(t *testing.T, path string, opts Options, items ...any) string {
	t.Helper()
	ctx := context.Background()
	ex, err := New(path, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatalf("Open: %v", err)
	}
	for _, it := range items {
		if _, err := ex.ProcessItem(ctx, it); err != nil {
			t.Fatalf("ProcessItem(%v): %v", it, err)
		}
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFormats(t *testing.T) {
	items := []any{
		book{Title: "A <b>&", Price: 1.5, Tags: []string{"x"}, secret: "s", Skip: "no"},
		&book{Title: "B", Price: 2},
		map[string]any{"title": "C", "price": 3, "extra": map[string]any{"z": 1, "a": []any{1, "two"}}},
	}
	tests := []struct {
		file string
		opts Options
		want string
	}{
		{"out.jsonl", Options{}, `{"title":"A <b>&","price":1.5,"tags":["x"]}
{"title":"B","price":2}
{"extra":{"a":[1,"two"],"z":1},"price":3,"title":"C"}
`},
		{"out.json", Options{}, `[
{"title":"A <b>&","price":1.5,"tags":["x"]},
{"title":"B","price":2},
{"extra":{"a":[1,"two"],"z":1},"price":3,"title":"C"}
]
`},
		{"out.csv", Options{}, `title,price,tags
A <b>&,1.5,"[""x""]"
B,2,
C,3,
`},
		{"fields.csv", Options{Fields: []string{"price", "title", "extra"}}, `price,title,extra
1.5,A <b>&,
2,B,
3,C,"{""a"":[1,""two""],""z"":1}"
`},
		{"fields.jsonl", Options{Fields: []string{"price", "title"}}, `{"price":1.5,"title":"A <b>&"}
{"price":2,"title":"B"}
{"price":3,"title":"C"}
`},
		{"out.txt", Options{Format: JSONLines}, `{"title":"A <b>&","price":1.5,"tags":["x"]}
{"title":"B","price":2}
{"extra":{"a":[1,"two"],"z":1},"price":3,"title":"C"}
`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := export(t, filepath.Join(t.TempDir(), tt.file), tt.opts, items...)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestJSONIsValidArray(t *testing.T) {
	dir := t.TempDir()
	for _, indent := range []int{0, 2} {
		for n := range 3 {
			path := filepath.Join(dir, fmt.Sprintf("a%d-%d.json", indent, n))
			var items []any
			for i := range n {
				items = append(items, map[string]any{"i": i})
			}
			got := export(t, path, Options{Indent: indent}, items...)
			var arr []map[string]int
			if err := json.Unmarshal([]byte(got), &arr); err != nil || len(arr) != n {
				t.Errorf("indent %d, %d items: %v, %d items in %q", indent, n, err, len(arr), got)
			}
		}
	}
}

func TestAppendAndOverwrite(t *testing.T) {
	for _, ext := range []string{"jsonl", "json", "csv"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "items."+ext) // directory created
			export(t, path, Options{}, map[string]any{"n": 1})
			export(t, path, Options{}, map[string]any{"n": 2}, map[string]any{"n": 3})
			if got := readNs(t, path, ext); fmt.Sprint(got) != "[1 2 3]" {
				t.Errorf("after append: %v", got)
			}
			export(t, path, Options{Overwrite: true}, map[string]any{"n": 4})
			if got := readNs(t, path, ext); fmt.Sprint(got) != "[4]" {
				t.Errorf("after overwrite: %v", got)
			}
		})
	}
}

// readNs parses a feed file of {"n": int} items in any format.
func readNs(t *testing.T, path, ext string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	switch ext {
	case "jsonl":
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]int
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			out = append(out, m["n"])
		}
	case "json":
		var arr []map[string]int
		if err := json.Unmarshal(b, &arr); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		for _, m := range arr {
			out = append(out, m["n"])
		}
	case "csv":
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || recs[0][0] != "n" {
			t.Fatalf("bad header in %q", b)
		}
		for _, r := range recs[1:] {
			var n int
			fmt.Sscan(r[0], &n)
			out = append(out, n)
		}
	}
	return out
}

func TestResumeAtOffset(t *testing.T) {
	for _, ext := range []string{"jsonl", "json", "csv"} {
		t.Run(ext, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "items."+ext)
			ex, err := New(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := ex.Open(ctx, nil); err != nil {
				t.Fatal(err)
			}
			ex.ProcessItem(ctx, map[string]any{"n": 1})
			ex.ProcessItem(ctx, map[string]any{"n": 2})
			if err := ex.Flush(); err != nil {
				t.Fatal(err)
			}
			checkpoint := ex.Offset()
			ex.ProcessItem(ctx, map[string]any{"n": 3}) // written after the checkpoint: lost on resume
			ex.Close(ctx)

			ex2, err := New(path, Options{Resume: true, ResumeOffset: checkpoint, Overwrite: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := ex2.Open(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if ex2.Offset() != checkpoint {
				t.Errorf("Offset after resume = %d, want %d", ex2.Offset(), checkpoint)
			}
			ex2.ProcessItem(ctx, map[string]any{"n": 4})
			ex2.Close(ctx)
			if got := readNs(t, path, ext); fmt.Sprint(got) != "[1 2 4]" {
				t.Errorf("after resume: %v", got)
			}
		})
	}
}

func TestResumeFromZeroAndTooFar(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "items.json")
	got := export(t, path, Options{Resume: true}, map[string]any{"n": 1})
	if got != "[\n{\"n\":1}\n]\n" {
		t.Errorf("resume at 0 = %q", got)
	}
	ex, _ := New(path, Options{Resume: true, ResumeOffset: 1000})
	if err := ex.Open(ctx, nil); err == nil || !strings.Contains(err.Error(), "cannot resume at byte 1000") {
		t.Errorf("Open = %v, want a resume error", err)
	}
}

func TestAppendRefusals(t *testing.T) {
	dir := t.TempDir()
	notArray := filepath.Join(dir, "x.json")
	os.WriteFile(notArray, []byte(`{"a": 1}`), 0o644)
	csvFile := filepath.Join(dir, "x.csv")
	os.WriteFile(csvFile, []byte("a,b\n1,2\n"), 0o644)
	tests := []struct {
		path string
		opts Options
		want string
	}{
		{notArray, Options{}, "the file is not a JSON array; overwrite it with -O"},
		{csvFile, Options{Fields: []string{"b", "a"}}, "the file's columns [a b] differ from the fields [b a]"},
	}
	for _, tt := range tests {
		ex, err := New(tt.path, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want %q", tt.path, err, tt.want)
		}
		if err := ex.Open(context.Background(), nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open = %v, want %q", tt.path, err, tt.want)
		}
	}
	// Check changes nothing and accepts what Open accepts.
	for _, opts := range []Options{{}, {Overwrite: true}, {Resume: true, ResumeOffset: 4}} {
		ex, _ := New(csvFile, opts)
		if err := ex.Check(); err != nil {
			t.Errorf("Check(%+v) = %v", opts, err)
		}
	}
	if b, _ := os.ReadFile(csvFile); string(b) != "a,b\n1,2\n" {
		t.Errorf("Check changed the file: %q", b)
	}
	overwrite, _ := New(notArray, Options{Overwrite: true})
	if err := overwrite.Check(); err != nil {
		t.Errorf("Check with Overwrite = %v", err)
	}
	under, _ := New(filepath.Join(csvFile, "sub", "x.jsonl"), Options{})
	if err := under.Check(); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Check under a file = %v", err)
	}
	tooShort, _ := New(csvFile, Options{Resume: true, ResumeOffset: 100})
	if err := tooShort.Check(); err == nil || !strings.Contains(err.Error(), "cannot resume at byte 100") {
		t.Errorf("Check resume too far = %v", err)
	}
	// Appending to a CSV file keeps its columns.
	got := export(t, csvFile, Options{}, map[string]any{"b": "B", "a": "A", "c": "dropped"})
	if got != "a,b\n1,2\nA,B\n" {
		t.Errorf("csv append = %q", got)
	}
}

func TestOddItems(t *testing.T) {
	var nilBook *book
	type withFunc struct {
		F func() `json:"f"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	tests := []struct {
		name string
		item any
		want string
	}{
		{"nil", nil, "the item is nil"},
		{"nil pointer", nilBook, "the item is a nil pointer"},
		{"string", "hello", "items must be structs, pointers to structs, or maps"},
		{"slice", []int{1}, "items must be structs"},
		{"func field", withFunc{F: func() {}}, "json: unsupported type: func()"},
		{"chan in map", map[string]any{"c": make(chan int)}, "json: unsupported type: chan int"},
		{"chan field", withChan{}, "json: unsupported type"},
		{"NaN", map[string]any{"x": nan()}, "unsupported value: NaN"},
	}
	ctx := context.Background()
	for _, format := range Formats {
		var buf bytes.Buffer
		ex, err := NewWriter(&buf, Options{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Open(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			_, err := ex.ProcessItem(ctx, tt.item)
			if !errors.Is(err, ErrItem) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s/%s: err = %v, want ErrItem containing %q", format, tt.name, err, tt.want)
			}
		}
		// A good item still goes through, and nothing of the bad ones was written.
		if _, err := ex.ProcessItem(ctx, map[string]any{"ok": true}); err != nil {
			t.Fatal(err)
		}
		ex.Close(ctx)
		if ex.Items() != 1 || strings.Count(buf.String(), "ok") != 1 {
			t.Errorf("%s: %d items, output %q", format, ex.Items(), buf.String())
		}
	}
}

func nan() float64 {
	var z float64
	return z / z
}

func TestConcurrentItems(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.jsonl")
	ex, err := New(path, Options{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := ex.ProcessItem(ctx, map[string]any{"n": g*1000 + i}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	off := ex.Offset()
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ns := readNs(t, path, "jsonl")
	seen := map[int]bool{}
	for _, n := range ns {
		seen[n] = true
	}
	if len(ns) != 400 || len(seen) != 400 {
		t.Errorf("%d lines, %d distinct, want 400", len(ns), len(seen))
	}
	if st, _ := os.Stat(path); st.Size() != off {
		t.Errorf("Offset %d, file size %d", off, st.Size())
	}
}

func TestBadOptions(t *testing.T) {
	tests := []struct {
		path string
		opts Options
		want string
	}{
		{"items", Options{}, "has no extension"},
		{"items.xml", Options{}, "cannot tell the format"},
		{"items.x", Options{Format: "yaml"}, `unknown feed format "yaml"`},
		{"items.csv", Options{Fields: []string{"a", "a"}}, `field "a" listed twice`},
		{"items.json", Options{Indent: -1}, "indent -1 is negative"},
		{"", Options{}, "empty file path"},
	}
	for _, tt := range tests {
		if _, err := New(tt.path, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %+v) = %v, want %q", tt.path, tt.opts, err, tt.want)
		}
	}
}

func TestFromSettings(t *testing.T) {
	dir := t.TempDir()
	s := settings.New()
	err := s.SetOverride(fmt.Sprintf(`FEEDS={"%s/a.jsonl": null, "%s/b.out": {format: csv, overwrite: true, fields: [x]}}`, dir, dir))
	if err != nil {
		t.Fatal(err)
	}
	exs, err := FromSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || exs[0].Format() != JSONLines || exs[1].Format() != CSV || !exs[1].opts.Overwrite || exs[1].opts.Fields[0] != "x" {
		t.Errorf("exporters: %+v %+v", exs[0], exs[1])
	}
	bad := settings.New()
	if err := bad.SetOverride(`FEEDS={"a.jsonl": {fromat: csv}, "b.json": {format: xml}, "c": null}`); err != nil {
		t.Fatal(err)
	}
	_, err = FromSettings(bad)
	for _, w := range []string{`FEEDS[a.jsonl]: unknown option "fromat"`, `FEEDS[b.json]: unknown feed format "xml"`, "FEEDS[c]:"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want %q", err, w)
		}
	}
}

func TestBackgroundFlush(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "live.jsonl")
	ex, err := New(path, Options{FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	defer ex.Close(ctx)
	if _, err := ex.ProcessItem(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	// The item reaches the file while the exporter stays open and idle.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if string(b) == "{\"n\":1}\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("item not flushed to the file; content %q", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ex.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
