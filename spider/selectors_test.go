package spider

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

const findPage = `<html><head><title>t</title></head><body>
<a href="/a">a</a><p><a class="x" href="/b">b</a><a>no href</a></p>
<div id="d"><span>s</span><a href="/c" class="x y">c</a></div></body></html>`

// texts is what a selection holds, for comparing two of them.
func texts(s *goquery.Selection) []string {
	var out []string
	s.Each(func(_ int, e *goquery.Selection) { out = append(out, goquery.NodeName(e)+":"+e.Text()) })
	return out
}

// TestResponseFind: Find selects what goquery's Find selects, for valid
// and invalid selectors, before and after the selector is cached, from
// many goroutines at once.
func TestResponseFind(t *testing.T) {
	res := newResponse(t, "http://example.com/", "text/html", []byte(findPage))
	doc, err := res.Doc()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sel  string
		want int
	}{
		{"a[href]", 3},
		{"a.x", 2},
		{"#d > *", 2},
		{"p a:not([href])", 1},
		{"title, span", 2},
		{"nothing", 0},
		{"a[href", 0},  // does not compile
		{"", 0},        // does not compile
		{"::bogus", 0}, // does not compile
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 { // the first call compiles, the next ones reuse
				for _, tc := range cases {
					got := res.Find(tc.sel)
					if got.Length() != tc.want {
						t.Errorf("Find(%q) selected %d, want %d", tc.sel, got.Length(), tc.want)
					}
					if g, w := texts(got), texts(doc.Find(tc.sel)); !slices.Equal(g, w) {
						t.Errorf("Find(%q) = %q, goquery's Find = %q", tc.sel, g, w)
					}
				}
			}
		})
	}
	wg.Wait()

	notHTML := newResponse(t, "http://example.com/x.json", "application/json", []byte(`{}`))
	if n := notHTML.Find("a").Length(); n != 0 {
		t.Errorf("Find on JSON selected %d", n)
	}
}

// TestResponseFindCompilesOnce: a selector seen before is not compiled
// again (fewer allocations than goquery's Find), and the cache stops
// growing at its bound while Find still selects right.
func TestResponseFindCompilesOnce(t *testing.T) {
	res := newResponse(t, "http://example.com/", "text/html", []byte(findPage))
	doc, err := res.Doc()
	if err != nil {
		t.Fatal(err)
	}
	res.Find("div#d a.x[href]")
	cached := testing.AllocsPerRun(100, func() { res.Find("div#d a.x[href]") })
	compiled := testing.AllocsPerRun(100, func() { doc.Find("div#d a.x[href]") })
	if cached > compiled-3 {
		t.Errorf("Find allocates %.0f times, goquery's Find %.0f: the selector is compiled again", cached, compiled)
	}

	for i := range maxCachedSelectors + 50 {
		sel := fmt.Sprintf("a.c%d, a[href='/b']", i)
		if n := res.Find(sel).Length(); n != 1 {
			t.Fatalf("Find(%q) selected %d, want 1", sel, n)
		}
	}
	if n := selectors.n.Load(); n > maxCachedSelectors {
		t.Errorf("%d selectors cached, more than the bound %d", n, maxCachedSelectors)
	}
	if n := res.Find("a.c999999, a[href='/c']").Length(); n != 1 {
		t.Errorf("an uncached selector past the bound selected %d, want 1", n)
	}
}
