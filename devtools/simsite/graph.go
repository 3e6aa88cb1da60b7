package simsite

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Graph is the deterministic link graph of a host's generated pages. Page 0
// is "/", page N > 0 is "/page/N", and every page is reachable from page 0.
type Graph struct {
	links [][]int32
}

// NewGraph builds the graph that a host with these pages and seed serves.
// Zero fields take their defaults (see HostConfig.EnsureDefaults).
func NewGraph(p PagesConfig, seed int64) (*Graph, error) {
	h := HostConfig{Name: "graph", Pages: p}
	h.EnsureDefaults()
	if err := h.Validate(); err != nil {
		return nil, err
	}
	p = h.Pages
	n := p.Count
	links := make([][]int32, n)
	switch p.Graph {
	case GraphTree:
		for i := range n {
			for c := i*p.Fanout + 1; c <= i*p.Fanout+p.Fanout && c < n; c++ {
				links[i] = append(links[i], int32(c))
			}
		}
	case GraphChain:
		for i := 0; i+1 < n; i++ {
			links[i] = []int32{int32(i + 1)}
		}
	case GraphRandom:
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed_5175))
		// A random spanning tree (each page's parent is an earlier page)
		// makes every page reachable; random extra links bring each page
		// up to OutDegree.
		for i := 1; i < n; i++ {
			parent := rng.IntN(i)
			links[parent] = append(links[parent], int32(i))
		}
		want := min(p.OutDegree, n-1)
		for i := range n {
			have := make(map[int32]bool, want)
			for _, c := range links[i] {
				have[c] = true
			}
			for len(links[i]) < want {
				c := int32(rng.IntN(n))
				if int(c) == i || have[c] {
					continue
				}
				have[c] = true
				links[i] = append(links[i], c)
			}
			rng.Shuffle(len(links[i]), func(a, b int) { links[i][a], links[i][b] = links[i][b], links[i][a] })
		}
	default:
		return nil, fmt.Errorf("simsite: unknown graph %q", p.Graph)
	}
	return &Graph{links: links}, nil
}

// Len is the number of pages.
func (g *Graph) Len() int { return len(g.links) }

// Links returns the pages that page i links to, in page order.
func (g *Graph) Links(i int) []int {
	out := make([]int, len(g.links[i]))
	for k, c := range g.links[i] {
		out[k] = int(c)
	}
	return out
}

// PagePath is the URL path of page i of any generated host: "/" for 0,
// "/page/i" otherwise.
func PagePath(i int) string {
	if i == 0 {
		return "/"
	}
	return "/page/" + strconv.Itoa(i)
}

// pageIndex parses a generated page path; ok is false for any other path.
func (g *Graph) pageIndex(path string) (int, bool) {
	if path == "/" {
		return 0, g.Len() > 0
	}
	rest, found := strings.CutPrefix(path, "/page/")
	if !found || rest == "" || rest[0] == '0' || rest[0] == '+' {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i <= 0 || i >= g.Len() {
		return 0, false
	}
	return i, true
}
