package monitor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/spider"
)

const bookSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["url", "title", "price"],
  "properties": {
    "url": {"type": "string", "pattern": "^https://"},
    "title": {"type": "string", "minLength": 1},
    "price": {"type": "number", "minimum": 0}
  }
}`

func writeSchema(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "item.schema.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSchemaValidate(t *testing.T) {
	sch, err := LoadSchema(writeSchema(t, bookSchema))
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		URL   string  `json:"url"`
		Title string  `json:"title"`
		Price float64 `json:"price"`
	}
	for _, tc := range []struct {
		name string
		item any
		want []string
	}{
		{"valid map", map[string]any{"url": "https://a/", "title": "t", "price": 1}, nil},
		{"valid struct", item{"https://a/", "t", 2}, nil},
		{"missing field", map[string]any{"url": "https://a/", "title": "t"}, []string{"/: missing property 'price'"}},
		{"wrong type and pattern", map[string]any{"url": "http://a/", "title": "t", "price": "1"},
			[]string{"/price: got string, want number", "/url: '" + "http://a/" + "' does not match pattern '^https://'"}},
		{"struct with empty title", item{"https://a/", "", -1},
			[]string{"/price: minimum: got -1, want 0", "/title: minLength: got 0, want 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sch.Validate(context.Background(), tc.item)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if _, err := sch.Validate(context.Background(), map[string]any{"f": func() {}}); err == nil || !strings.Contains(err.Error(), "cannot encode the item as JSON") {
		t.Errorf("an item that cannot be encoded: %v", err)
	}
}

func TestLoadSchemaErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"not JSON", `{"type": `, "bad JSON Schema"},
		{"bad keyword value", `{"type": "text"}`, "bad JSON Schema"},
		{"missing file", "", "bad JSON Schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing.json")
			if tc.text != "" {
				path = writeSchema(t, tc.text)
			}
			_, err := LoadSchema(path)
			if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want an ErrBadSchema naming %s", err, path)
			}
		})
	}
}

func TestItemsStage(t *testing.T) {
	type quote struct {
		Text   string `json:"text" monitor:"required"`
		Author string `json:"author" monitor:"required"`
	}
	for _, tc := range []struct {
		name                        string
		drop                        bool
		maxInvalid                  int
		items                       []any
		passed                      int
		checked, invalid, unchecked float64
		ok                          bool
		detail                      string
	}{
		{"all valid", false, 0, []any{quote{"a", "b"}, &quote{"c", "d"}}, 2, 2, 0, 0, true, "0 of 2 items invalid"},
		{"invalid kept", false, 0, []any{quote{"a", ""}, quote{"c", "d"}}, 2, 2, 1, 0, false,
			"1 of 2 items invalid, more than MONITOR_MAX_INVALID_ITEMS 0; first: author: required, but missing"},
		{"invalid dropped", true, 0, []any{quote{"", ""}, quote{"c", "d"}}, 1, 2, 1, 0, false,
			"first: text: required, but missing; author: required, but missing"},
		{"under the allowance", false, 1, []any{quote{"a", ""}, quote{"c", "d"}}, 2, 2, 1, 0, true, "1 of 2 items invalid, at most MONITOR_MAX_INVALID_ITEMS 1"},
		{"maps are not checked", false, 0, []any{map[string]any{"text": ""}}, 1, 0, 0, 1, true, "(1 items were not structs and were not checked)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := NewItems(tc.maxInvalid, tc.drop, StructTags{})
			col := stats.New()
			if err := it.Open(context.Background(), &spider.Crawler{Stats: col}); err != nil {
				t.Fatal(err)
			}
			passed := 0
			for _, item := range tc.items {
				out, err := it.ProcessItem(context.Background(), item)
				switch {
				case err == nil:
					if out == nil {
						t.Fatal("nil item passed on")
					}
					passed++
				case pipeline.Reason(err) != "invalid_item":
					t.Fatalf("drop reason %q", pipeline.Reason(err))
				}
			}
			if passed != tc.passed {
				t.Errorf("%d items passed, want %d", passed, tc.passed)
			}
			s := Snapshot{Stats: col.Snapshot(), Final: true}
			if s.Get(StatItemsChecked) != tc.checked || s.Get(StatItemsInvalid) != tc.invalid || s.Get(StatItemsUnchecked) != tc.unchecked {
				t.Errorf("stats %v", s.Stats)
			}
			out := it.Check(context.Background(), s)
			if out.OK != tc.ok || !strings.Contains(out.Detail, tc.detail) {
				t.Errorf("got ok=%v %q, want ok=%v containing %q", out.OK, out.Detail, tc.ok, tc.detail)
			}
		})
	}
}

func TestItemsBothValidators(t *testing.T) {
	sch, err := LoadSchema(writeSchema(t, bookSchema))
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		URL   string  `json:"url" monitor:"pattern=\\.html$"`
		Title string  `json:"title"`
		Price float64 `json:"price"`
	}
	it := NewItems(0, false, sch, StructTags{})
	if _, err := it.ProcessItem(context.Background(), item{URL: "http://a/x", Title: "t", Price: 1}); err != nil {
		t.Fatal(err)
	}
	out := it.Check(context.Background(), Snapshot{Stats: it.stats.Snapshot(), Final: true})
	for _, want := range []string{"/url: 'http://a/x' does not match pattern '^https://'", `url: "http://a/x" does not match pattern \.html$`} {
		if !strings.Contains(out.Detail, want) {
			t.Errorf("%q lacks %q", out.Detail, want)
		}
	}
}
