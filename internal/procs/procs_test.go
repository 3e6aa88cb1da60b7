package procs

import (
	"runtime"
	"testing"
	"time"
)

// The policy on windows of known CPU use, on a machine of 4 Ps.
func TestPolicy(t *testing.T) {
	tests := []struct {
		name  string
		cur   int
		cores []float64 // CPU used in each window, in cores
		want  []int     // Ps after each window
	}{
		{"a busy crawl keeps its Ps", 4, []float64{3.5, 3.9, 2.9, 2.1}, []int{4, 4, 4, 4}},
		{"a waiting crawl gives them back one by one", 4,
			[]float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3},
			[]int{4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1}},
		{"a busy window in between starts the count again", 2,
			[]float64{0.3, 0.3, 0.3, 1.0, 0.3, 0.3, 0.3, 0.3},
			[]int{2, 2, 2, 2, 2, 2, 2, 1}},
		{"use above 85 % of the Ps adds one at once", 1,
			[]float64{0.5, 0.86, 1.0, 1.8, 2.6, 3.5},
			[]int{1, 2, 2, 3, 4, 4}},
		{"between the thresholds nothing changes", 2,
			[]float64{0.8, 1.6, 0.75, 1.7, 1.0},
			[]int{2, 2, 2, 2, 2}},
		{"one P is the floor", 1, []float64{0, 0, 0, 0, 0}, []int{1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Policy{Max: 4, Cur: tt.cur}
			at := time.Unix(1000, 0)
			var cpu time.Duration
			p.Step(at, cpu)
			for i, c := range tt.cores {
				at = at.Add(Interval)
				cpu += time.Duration(c * float64(Interval))
				if got := p.Step(at, cpu); got != tt.want[i] {
					t.Fatalf("window %d (%.2f cores): %d Ps, want %d", i, c, got, tt.want[i])
				}
			}
		})
	}
}

// A sample at the same instant, or earlier, changes nothing.
func TestPolicyIgnoresEmptyWindows(t *testing.T) {
	p := &Policy{Max: 2, Cur: 2}
	at := time.Unix(1000, 0)
	p.Step(at, 0)
	if got := p.Step(at, time.Second); got != 2 {
		t.Fatalf("empty window: %d Ps, want 2", got)
	}
}

// The process's GOMAXPROCS is lowered while crawls that use no CPU hold
// the governor, once per Interval of their clock at most, and goes back
// when the last one lets go.
func TestHoldLowersAndRestores(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // Hold governs only without it
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one P: nothing to govern")
	}
	idle := func() time.Duration { return time.Second } // no CPU used
	h1 := Hold(idle)
	h2 := Hold(idle) // a second crawl joins the same governor
	if h1 == nil || h2 == nil {
		t.Fatal("Hold returned nil with several Ps and a CPU clock")
	}
	at := time.Unix(1000, 0)
	var changes int
	for i := range 200 {
		at = at.Add(Interval / 10)
		h := h1
		if i%2 == 1 {
			h = h2
		}
		if from, to := h.Sample(at); from != to {
			changes++
			if to != from-1 {
				t.Errorf("%d -> %d, want one P fewer", from, to)
			}
		}
	}
	// Samples every 0.05 s for 10 s: one per Interval, 20 in all, so 19
	// windows after the first; one P fewer every LowerAfter windows.
	if want := min(before-1, 19/LowerAfter); changes != want {
		t.Errorf("%d changes in 19 windows, want %d", changes, want)
	}
	if got := runtime.GOMAXPROCS(0); got != before-changes {
		t.Errorf("GOMAXPROCS %d, want %d", got, before-changes)
	}
	h1.Release()
	h1.Release() // letting go twice counts once
	if runtime.GOMAXPROCS(0) == before {
		t.Error("GOMAXPROCS restored while a crawl still holds the governor")
	}
	if from, to := h1.Sample(at.Add(time.Hour)); from != to {
		t.Errorf("a released hold changed GOMAXPROCS %d -> %d", from, to)
	}
	h2.Release()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after the last crawl, want %d back", got, before)
	}
}

// An explicit GOMAXPROCS in the environment is the user's choice; a nil
// Holder does nothing.
func TestHoldRespectsEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	h := Hold(func() time.Duration { return time.Second })
	if h != nil {
		t.Fatal("Hold governs with GOMAXPROCS set")
	}
	if from, to := h.Sample(time.Now()); from != to {
		t.Errorf("nil Holder changed GOMAXPROCS %d -> %d", from, to)
	}
	h.Release()
}
