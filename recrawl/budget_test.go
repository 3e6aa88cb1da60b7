package recrawl

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

func TestParseBudget(t *testing.T) {
	tests := []struct {
		in   string
		want Limits
		err  string
	}{
		{"", Limits{}, ""},
		{"  ", Limits{}, ""},
		{"1000/h", Limits{Total: 1000}, ""},
		{"1000", Limits{Total: 1000}, ""},
		{"10/m", Limits{Total: 600}, ""},
		{"1/s", Limits{Total: 3600}, ""},
		{"48/d", Limits{Total: 2}, ""},
		{"2.5 / Hour", Limits{Total: 2.5}, ""},
		{"total=1000/h, scope=60/h, shop.example=10/min", Limits{Total: 1000, Scope: 60, Scopes: map[string]float64{"shop.example": 600}}, ""},
		{"scope=60/h", Limits{Scope: 60}, ""},
		{"0", Limits{}, `rate "0" is 0: nothing would ever be revisited`},
		{"scope=0/h", Limits{}, `rate "0/h" is 0`},
		{"-5/h", Limits{}, `rate "-5/h" is negative`},
		{"1000/week", Limits{}, `unknown unit "week"`},
		{"lots/h", Limits{}, `rate "lots/h" is not a number`},
		{"NaN/h", Limits{}, `is not a number`},
		{"Inf", Limits{}, `is not a number`},
		{"total=1/h, total=2/h", Limits{}, `"total" is given twice`},
		{"1/h, 2/h", Limits{}, `"total" is given twice`},
		{"=5/h", Limits{}, `has no scope name`},
		{"1000/h,", Limits{}, `empty entry`},
	}
	for _, tt := range tests {
		got, err := ParseBudget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseBudget(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseBudget(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
		if back, err := ParseBudget(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseBudget(%q.String() = %q) = %+v, %v: does not read back", tt.in, got.String(), back, err)
		}
	}
}

func TestNewBudget(t *testing.T) {
	c := clock.NewFake(t0)
	if b, err := NewBudget(c, Limits{}); b != nil || err != nil {
		t.Errorf("zero Limits: %v, %v, want no budget", b, err)
	}
	if ok, wait := (*Budget)(nil).Take("a", t0); !ok || wait != 0 {
		t.Errorf("nil budget: Take = %v, %v, want everything let through", ok, wait)
	}
	for _, l := range []Limits{{Total: -1}, {Scope: math.NaN()}, {Total: math.Inf(1)}, {Scopes: map[string]float64{"a": 0}}} {
		if _, err := NewBudget(c, l); err == nil {
			t.Errorf("NewBudget(%+v) accepted", l)
		}
	}
}

// A budget of 60/h holds one token (a minute's worth is 1): one revisit at
// once, then one a minute, the wait saying exactly when.
func TestBudgetTotal(t *testing.T) {
	c := clock.NewFake(t0)
	b, err := NewBudget(c, Limits{Total: 60})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		scope   string
		ok      bool
		wait    time.Duration
	}{
		{0, "a", true, 0},
		{0, "b", false, time.Minute},
		{20 * time.Second, "a", false, 40 * time.Second},
		{40 * time.Second, "b", true, 0},
		{10 * time.Minute, "a", true, 0}, // an idle spell banks one minute, not ten
		{0, "a", false, time.Minute},
	}
	for i, s := range steps {
		c.Advance(s.advance)
		ok, wait := b.Take(s.scope, c.Now())
		if ok != s.ok || wait != s.wait {
			t.Errorf("step %d: Take(%q) = %v, %v, want %v, %v", i, s.scope, ok, wait, s.ok, s.wait)
		}
	}
}

// A per-scope rate applies to each scope on its own, a named scope's rate
// replaces it, and the total caps them all; a refusal by one bucket takes
// nothing from the others.
func TestBudgetScopes(t *testing.T) {
	c := clock.NewFake(t0)
	b, err := NewBudget(c, Limits{Total: 600, Scope: 60, Scopes: map[string]float64{"big": 300}})
	if err != nil {
		t.Fatal(err)
	}
	take := func(scope string) bool {
		ok, _ := b.Take(scope, c.Now())
		return ok
	}
	// Burst: total 10, scope 1, big 5.
	if !take("a") || take("a") {
		t.Fatal("scope a: want one revisit, then a wait")
	}
	if !take("b") {
		t.Fatal("scope b has its own bucket")
	}
	for i := range 5 {
		if !take("big") {
			t.Fatalf("big: revisit %d refused, want 5 at once", i)
		}
	}
	if take("big") {
		t.Fatal("big: 6th revisit let through")
	}
	if !take("c") || !take("d") || !take("e") {
		t.Fatal("total has 3 tokens left")
	}
	ok, wait := b.Take("f", c.Now())
	if ok || wait != 6*time.Second {
		t.Fatalf("total spent: Take = %v, %v, want false, 6s (600/h)", ok, wait)
	}
	c.Advance(6 * time.Second)
	if ok, wait := b.Take("a", c.Now()); ok || wait != 54*time.Second {
		t.Fatalf("scope a after 6s: %v, %v, want false, 54s", ok, wait)
	}
	if !take("f") {
		t.Fatal("the refusal of scope a took the total's token")
	}
}

// A clock set back earns nothing and does not break the bucket.
func TestBudgetClockBack(t *testing.T) {
	b, _ := NewBudget(clock.NewFake(t0), Limits{Total: 60})
	b.Take("a", t0)
	if ok, _ := b.Take("a", t0.Add(-time.Hour)); ok {
		t.Fatal("a time before the last refill earned a token")
	}
	if ok, _ := b.Take("a", t0.Add(time.Minute)); !ok {
		t.Fatal("a minute after the real last refill: refused")
	}
}

// Idle full buckets are dropped past maxIdleBuckets scopes; spent ones
// are kept, with what they spent.
func TestBudgetDropsIdleBuckets(t *testing.T) {
	c := clock.NewFake(t0)
	b, _ := NewBudget(c, Limits{Scope: 60})
	for i := range maxIdleBuckets - 1 {
		b.Take(fmt.Sprint("idle", i), c.Now())
	}
	c.Advance(time.Minute) // the idle buckets are full again
	b.Take("busy", c.Now())
	b.Take("new", c.Now())
	if n := len(b.scopes); n != 2 {
		t.Fatalf("%d buckets kept, want 2 (busy and new)", n)
	}
	if ok, _ := b.Take("busy", c.Now()); ok {
		t.Fatal("a spent bucket was dropped: its scope got a fresh token")
	}
}

// Over a simulated day, a budget of R per hour lets through R per hour
// and one burst, whatever the demand.
func TestBudgetLongRun(t *testing.T) {
	c := clock.NewFake(t0)
	b, _ := NewBudget(c, Limits{Total: 1000, Scope: 120})
	n := 0
	for range 24 * 3600 {
		for _, s := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			if ok, _ := b.Take(s, c.Now()); ok {
				n++
			}
		}
		c.Advance(time.Second)
	}
	// 24h x 1000/h, plus the first minute's 16.67 tokens (the bucket
	// starts full).
	if want := 24*1000 + 16; n < want-1 || n > want+1 {
		t.Fatalf("%d revisits in a day, want about %d", n, want)
	}
}
