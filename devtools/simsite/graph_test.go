package simsite

import (
	"bytes"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func reachable(g *Graph) int {
	seen := make([]bool, g.Len())
	seen[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, c := range g.Links(i) {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	n := 0
	for _, s := range seen {
		if s {
			n++
		}
	}
	return n
}

func TestGraphReachesEveryPage(t *testing.T) {
	tests := []struct {
		name  string
		pages PagesConfig
		seed  int64
		// minLinks is the fewest links any non-leaf page must have.
		wantLen int
	}{
		{"tree default", PagesConfig{}, 0, 100},
		{"tree fanout 3", PagesConfig{Count: 1000, Graph: GraphTree, Fanout: 3}, 0, 1000},
		{"tree single page", PagesConfig{Count: 1}, 0, 1},
		{"chain", PagesConfig{Count: 500, Graph: GraphChain}, 0, 500},
		{"random seed 1", PagesConfig{Count: 2000, Graph: GraphRandom, OutDegree: 3}, 1, 2000},
		{"random seed 42", PagesConfig{Count: 50, Graph: GraphRandom, OutDegree: 60}, 42, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGraph(tt.pages, tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			if g.Len() != tt.wantLen {
				t.Fatalf("Len = %d, want %d", g.Len(), tt.wantLen)
			}
			if got := reachable(g); got != tt.wantLen {
				t.Errorf("reachable from / = %d pages, want %d", got, tt.wantLen)
			}
			for i := range g.Len() {
				links := g.Links(i)
				for _, c := range links {
					if c == i || c < 0 || c >= g.Len() {
						t.Fatalf("page %d links to %d", i, c)
					}
				}
				if len(slices.Compact(slices.Sorted(slices.Values(links)))) != len(links) {
					t.Fatalf("page %d has duplicate links %v", i, links)
				}
			}
		})
	}
}

func TestGraphShapes(t *testing.T) {
	tree, _ := NewGraph(PagesConfig{Count: 20, Fanout: 3}, 0)
	if got, want := tree.Links(1), []int{4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("tree Links(1) = %v, want %v", got, want)
	}
	if got := tree.Links(6); !slices.Equal(got, []int{19}) {
		t.Errorf("tree Links(6) = %v, want [19] (cut at Count)", got)
	}
	chain, _ := NewGraph(PagesConfig{Count: 3, Graph: GraphChain}, 0)
	if got := chain.Links(1); !slices.Equal(got, []int{2}) || len(chain.Links(2)) != 0 {
		t.Errorf("chain links = %v, %v", chain.Links(1), chain.Links(2))
	}
	r, _ := NewGraph(PagesConfig{Count: 300, Graph: GraphRandom, OutDegree: 4}, 7)
	for i := range r.Len() {
		if len(r.Links(i)) < 4 {
			t.Fatalf("random page %d has %d links, want >= OutDegree 4", i, len(r.Links(i)))
		}
	}
}

func TestGraphDeterministicForSeed(t *testing.T) {
	p := PagesConfig{Count: 200, Graph: GraphRandom, OutDegree: 5}
	a, _ := NewGraph(p, 9)
	b, _ := NewGraph(p, 9)
	c, _ := NewGraph(p, 10)
	same, differ := true, false
	for i := range a.Len() {
		same = same && slices.Equal(a.Links(i), b.Links(i))
		differ = differ || !slices.Equal(a.Links(i), c.Links(i))
	}
	if !same {
		t.Error("same seed gave different graphs")
	}
	if !differ {
		t.Error("different seeds gave the same graph")
	}
}

func TestGraphRejectsBadPages(t *testing.T) {
	if _, err := NewGraph(PagesConfig{Graph: "star"}, 0); err == nil || !strings.Contains(err.Error(), "pages.graph") {
		t.Errorf("NewGraph(graph=star) error = %v, want one naming pages.graph", err)
	}
}

func TestPageIndex(t *testing.T) {
	g, _ := NewGraph(PagesConfig{Count: 10}, 0)
	tests := []struct {
		path string
		want int
		ok   bool
	}{
		{"/", 0, true}, {"/page/1", 1, true}, {"/page/9", 9, true},
		{"/page/10", 0, false}, {"/page/0", 0, false}, {"/page/01", 0, false},
		{"/page/", 0, false}, {"/page/-1", 0, false}, {"/page/+1", 0, false}, {"/other", 0, false},
	}
	for _, tt := range tests {
		i, ok := g.pageIndex(tt.path)
		if i != tt.want || ok != tt.ok {
			t.Errorf("pageIndex(%q) = %d, %v; want %d, %v", tt.path, i, ok, tt.want, tt.ok)
		}
	}
}

var hrefRE = regexp.MustCompile(`<a href="([^"]+)">`)

func TestRenderPage(t *testing.T) {
	g, _ := NewGraph(PagesConfig{Count: 40, Fanout: 6}, 0)
	for _, style := range []LinkStyle{LinksMixed, LinksRelative, LinksAbsolute} {
		for _, size := range []int{0, 5000} {
			p := PagesConfig{Size: size, Links: style}
			var buf bytes.Buffer
			renderPage(&buf, g, 2, "h", "127.0.0.1:9", p)
			body := buf.String()
			if !strings.Contains(body, "<title>h page 2</title>") {
				t.Errorf("%s: no title in %q", style, body)
			}
			if size > 0 && buf.Len() != size {
				t.Errorf("%s: size = %d, want %d", style, buf.Len(), size)
			}
			base, _ := url.Parse("http://127.0.0.1:9/page/2")
			var got []string
			for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
				u, err := base.Parse(m[1])
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, u.String())
				if style == LinksAbsolute && !strings.HasPrefix(m[1], "http://127.0.0.1:9/") {
					t.Errorf("absolute style wrote %q", m[1])
				}
				if style == LinksRelative && !strings.HasPrefix(m[1], "/page/") {
					t.Errorf("relative style wrote %q", m[1])
				}
			}
			var want []string
			for _, c := range g.Links(2) {
				want = append(want, "http://127.0.0.1:9"+PagePath(c))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: links resolve to %v, want %v", style, got, want)
			}
		}
	}
}
