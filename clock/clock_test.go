package clock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fired(t clock.Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestFakeTimers(t *testing.T) {
	c := clock.NewFake(t0)
	a := c.NewTimer(time.Second)
	b := c.NewTimer(3 * time.Second)
	if c.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", c.Pending())
	}
	c.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired before its deadline")
	}
	c.Advance(time.Millisecond)
	if !fired(a) || fired(b) {
		t.Fatal("after 1s: want a fired and b not")
	}
	if !b.Stop() || b.Stop() {
		t.Error("Stop: want true for an active timer, then false")
	}
	c.Advance(time.Hour)
	if fired(b) {
		t.Error("a stopped timer fired")
	}
	if b.Reset(time.Second) {
		t.Error("Reset of a stopped timer reported it active")
	}
	c.Set(c.Now().Add(time.Second))
	if !fired(b) {
		t.Error("a reset timer did not fire")
	}
	if got := c.Now(); !got.Equal(t0.Add(time.Hour + 2*time.Second)) {
		t.Errorf("Now = %v", got)
	}
	z := c.NewTimer(0)
	if !fired(z) || c.Pending() != 0 {
		t.Error("a timer of 0 must fire at once and not stay pending")
	}
}

func TestRealClock(t *testing.T) {
	before := time.Now()
	if now := clock.Real.Now(); now.Before(before) {
		t.Fatalf("Real.Now = %v, before %v", now, before)
	}
	tm := clock.Real.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("a 1 ms real timer did not fire within 10 s")
	}
}

// Code under test takes a clock.Clock; the test passes a fake one and moves
// time by hand, so a 30 s delay is tested without waiting 30 s.
func ExampleFake() {
	c := clock.NewFake(t0)
	wait := func(clk clock.Clock, d time.Duration) <-chan time.Time { return clk.NewTimer(d).C() }

	done := wait(c, 30*time.Second)
	c.Advance(29 * time.Second)
	select {
	case <-done:
		fmt.Println("too early")
	default:
		fmt.Println("still waiting at", c.Now().Sub(t0))
	}
	c.Advance(time.Second)
	fmt.Println("fired at", (<-done).Sub(t0))
	// Output:
	// still waiting at 29s
	// fired at 30s
}
