package spider

import (
	"sync"
	"sync/atomic"

	"github.com/andybalholm/cascadia"
)

// maxCachedSelectors bounds the selectors Response.Find keeps compiled.
// Spiders pass the same few literal selectors on every page; a spider that
// builds selectors from page data gets the first ones cached and the rest
// compiled on each call, as goquery does.
const maxCachedSelectors = 1024

// selectors are the CSS selectors Response.Find compiled, by their text: a
// compiled selector is immutable and safe to share between goroutines, and
// compiling one costs a parse and five allocations, on every page.
var selectors struct {
	m sync.Map // string -> cascadia.Selector
	n atomic.Int32
}

// compiledSelector returns s compiled, from the cache when it was compiled
// before, and false when s is not a valid selector.
func compiledSelector(s string) (cascadia.Selector, bool) {
	if v, ok := selectors.m.Load(s); ok {
		return v.(cascadia.Selector), true
	}
	sel, err := cascadia.Compile(s)
	if err != nil {
		return nil, false
	}
	if selectors.n.Load() < maxCachedSelectors {
		if _, loaded := selectors.m.LoadOrStore(s, sel); !loaded {
			selectors.n.Add(1)
		}
	}
	return sel, true
}
