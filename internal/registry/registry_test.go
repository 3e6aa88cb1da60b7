package registry

import (
	"slices"
	"testing"
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
