package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/recrawl"
)

// class is a kind of page of the simulated site: how its changes come.
type class struct {
	name string
	// share of the site's pages.
	share float64
	// poisson: changes at random with this mean gap; fixed: changes once
	// every gap at a time of its own (drawn once per page); never: 0.
	gap     time.Duration
	poisson bool
	// changefreq is what the site's sitemap says of these pages.
	changefreq string
}

// classes are the site of the measured claim: a news or shop front
// (hourly), daily updated pages (prices, listings), pages edited now
// and then (weekly on average) and an archive that never changes.
var classes = []class{
	{"hourly (Poisson, mean 1h)", 0.10, time.Hour, true, "hourly"},
	{"daily (fixed time of day)", 0.20, 24 * time.Hour, false, "daily"},
	{"weekly (Poisson, mean 7d)", 0.30, 7 * 24 * time.Hour, true, "weekly"},
	{"never", 0.40, 0, false, "never"},
}

// page is one page of the site with the times it changes, and what a
// crawler knows of it.
type page struct {
	class   int
	changes []time.Time // sorted
	// crawler side
	st    recrawl.State
	seen  int // changes[:seen] happened before the last visit
	index int // in the queue
}

// site builds n pages whose changes over [start, end) are drawn from
// seed: the same seed, the same site.
func site(n int, seed uint64, start, end time.Time) []*page {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pages := make([]*page, 0, n)
	for ci, c := range classes {
		k := int(float64(n)*c.share + 0.5)
		if ci == len(classes)-1 {
			k = n - len(pages)
		}
		for range k {
			p := &page{class: ci}
			switch {
			case c.gap == 0:
			case c.poisson:
				for t := start; ; {
					t = t.Add(time.Duration(rng.ExpFloat64() * float64(c.gap)))
					if !t.Before(end) {
						break
					}
					p.changes = append(p.changes, t)
				}
			default:
				for t := start.Add(time.Duration(rng.Int64N(int64(c.gap)))); t.Before(end); t = t.Add(c.gap) {
					p.changes = append(p.changes, t)
				}
			}
			pages = append(pages, p)
		}
	}
	return pages
}

// run is one schedule's run over the site.
type run struct {
	name    string
	policy  recrawl.Policy
	hints   bool // give the policy the sitemap's <changefreq> and a true <lastmod>
	perHour float64
}

// result is what a run measured in the window [from, to).
type result struct {
	name      string
	requests  int     // visits in the window
	stale     float64 // page-hours a page was changed but not yet revisited
	staleBy   []float64
	reqBy     []int
	missed    int // changes overwritten before a visit saw them (whole window)
	pages     int
	firstDone time.Duration // how long the first crawl of every page took
}

// simulate crawls the site (a fresh copy of its crawler state) from
// start to to under r's schedule and budget, on a fake clock: every page
// is due at start, then when the policy says; due pages are visited in
// order of due time, each when the budget allows, as the frontier's
// not-before times and RECRAWL_BUDGET do in a crawl. Stale time is
// counted in [from, to).
func simulate(pages []*page, r run, start, from, to time.Time) (result, error) {
	c := clock.NewFake(start)
	b, err := recrawl.NewBudget(c, recrawl.Limits{Total: r.perHour})
	if err != nil {
		return result{}, err
	}
	res := result{name: r.name, staleBy: make([]float64, len(classes)), reqBy: make([]int, len(classes)), pages: len(pages)}
	q := make(queue, 0, len(pages))
	for _, p := range pages {
		p.st, p.seen = recrawl.State{Due: start}, 0
		heap.Push(&q, p)
	}
	firstLeft := len(pages)
	staleHours := func(p *page, a, z time.Time) {
		a, z = maxTime(a, from), minTime(z, to)
		if z.After(a) {
			h := z.Sub(a).Hours()
			res.stale += h
			res.staleBy[p.class] += h
		}
	}
	for q.Len() > 0 {
		p := q[0]
		now := maxTime(c.Now(), p.st.Due)
		if !now.Before(to) {
			break
		}
		c.Set(now)
		ok, wait := b.Take("site", now)
		if !ok {
			c.Advance(wait)
			continue
		}
		// What the visit finds: the changes since the last one.
		n := p.seen
		for n < len(p.changes) && !p.changes[n].After(now) {
			n++
		}
		first := p.st.LastVisit.IsZero()
		changed := first || n > p.seen
		if n > p.seen && !first {
			staleHours(p, p.changes[p.seen], now)
			res.missed += n - p.seen - 1
		}
		var h recrawl.Hints
		if r.hints {
			h.ChangeFreq = classes[p.class].changefreq
			if n > 0 {
				h.LastMod = p.changes[n-1]
			}
		}
		p.seen = n
		p.st = r.policy.Next(p.st, recrawl.Visit{At: now, Changed: changed}, h)
		if !now.Before(from) {
			res.requests++
			res.reqBy[p.class]++
		}
		if first {
			if firstLeft--; firstLeft == 0 {
				res.firstDone = now.Sub(start)
			}
		}
		heap.Fix(&q, 0)
	}
	// Changes not yet seen at the end are stale until then.
	for _, p := range pages {
		if p.seen < len(p.changes) && p.changes[p.seen].Before(to) && !p.st.LastVisit.IsZero() {
			staleHours(p, p.changes[p.seen], to)
		}
	}
	return res, nil
}

// queue orders pages by due time, then by index in the site (stable).
type queue []*page

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].st.Due.Before(q[j].st.Due)
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	p := x.(*page)
	p.index = len(*q)
	*q = append(*q, p)
}
func (q *queue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (r result) String() string {
	return fmt.Sprintf("%s: %d requests, %.0f stale page-hours", r.name, r.requests, r.stale)
}
