package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
)

func TestRegistry(t *testing.T) {
	var r Registry[func() int]
	if _, ok := r.Lookup("a"); ok || r.Has("a") || len(r.Names()) != 0 {
		t.Fatal("the zero registry is not empty")
	}
	r.Register("b", func() int { return 1 })
	r.Register("a", func() int { return 2 })
	r.Register("b", func() int { return 3 }) // replaces
	if f, ok := r.Lookup("b"); !ok || f() != 3 {
		t.Fatalf("Lookup(b) ok=%v; want the later registration", ok)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Names = %v, want [a b]", got)
	}
}

func TestOrdered(t *testing.T) {
	known := func(n string) bool { return n != "Unknown" }
	load := func(m map[string]any) *settings.Settings {
		s := settings.New()
		if err := s.SetMap(m, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := load(map[string]any{
		"DOWNLOADER_MIDDLEWARES_BASE": map[string]any{"A": 100, "B": 200, "C": 300},
		"DOWNLOADER_MIDDLEWARES":      map[string]any{"B": nil, "D": 50, "C": 10},
	})
	got, err := Ordered(s, "DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE", known)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"C", 10}, {"D", 50}, {"A", 100}}
	if !slices.Equal(got, want) {
		t.Errorf("Ordered = %v, want %v (user over base, null drops B, sorted by order)", got, want)
	}
	s = load(map[string]any{"ITEM_PIPELINES": map[string]any{"Unknown": 1}})
	if _, err := Ordered(s, "ITEM_PIPELINES", "", known); err == nil || !strings.Contains(err.Error(), `ITEM_PIPELINES: entry "Unknown" is not a registered component`) {
		t.Errorf("unknown entry: err = %v", err)
	}
	s = load(map[string]any{"ITEM_PIPELINES": map[string]any{"A": "first"}})
	if _, err := Ordered(s, "ITEM_PIPELINES", "", known); err == nil || !strings.Contains(err.Error(), `ITEM_PIPELINES: entry "A": order must be an integer or null`) {
		t.Errorf("bad order: err = %v", err)
	}
}
