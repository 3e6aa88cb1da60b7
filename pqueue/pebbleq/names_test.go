package pebbleq

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestNamesInterned: the same bytes give the same string (one copy for a
// crawl's names), the set never holds more than maxNames, and once full it
// starts over, so later names are shared too.
func TestNamesInterned(t *testing.T) {
	var n names
	a, b := n.get([]byte("example.com")), n.get([]byte("example.com"))
	if a != "example.com" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("get gave %q and %q, not one shared string", a, b)
	}
	for i := range 3 * maxNames {
		n.get(fmt.Appendf(nil, "host-%d.test", i))
		if len(n.m) > maxNames {
			t.Fatalf("after %d names the set holds %d, more than %d", i+1, len(n.m), maxNames)
		}
	}
	late := []byte(fmt.Sprintf("host-%d.test", 3*maxNames-1))
	if x, y := n.get(late), n.get(late); unsafe.StringData(x) != unsafe.StringData(y) {
		t.Errorf("a name seen after the set filled up is not shared")
	}
	var none *names
	if got := none.get([]byte("q")); got != "q" {
		t.Errorf("nil set: get = %q", got)
	}
}
