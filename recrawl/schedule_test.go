package recrawl

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

const (
	hour = time.Hour
	day  = 24 * time.Hour
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// settled is where the default factors make the interval of a page with
// mean change gap g settle: a visit then finds a change with probability
// p, p*ln(0.6) + (1-p)*ln(1.25) = 0, and 1-exp(-g*settle/g) = p.
func settled(g time.Duration) time.Duration {
	p := math.Log(1.25) / (math.Log(1.25) - math.Log(0.6))
	return time.Duration(float64(g) * -math.Log(1-p))
}

func TestFixed(t *testing.T) {
	c := clock.NewFake(t0)
	p := Fixed(6 * hour)
	st := p.Next(State{}, Visit{At: c.Now(), Changed: true}, Hints{ChangeFreq: "hourly"})
	want := State{Interval: 6 * hour, LastVisit: t0, LastChange: t0, Due: t0.Add(6 * hour)}
	if st != want {
		t.Fatalf("first visit: %+v, want %+v (hints are ignored)", st, want)
	}
	c.Advance(7 * hour)
	st = p.Next(st, Visit{At: c.Now()}, Hints{})
	want = State{Interval: 6 * hour, LastVisit: t0.Add(7 * hour), LastChange: t0, Due: t0.Add(13 * hour)}
	if st != want {
		t.Fatalf("unchanged: %+v, want %+v", st, want)
	}
	c.Advance(6 * hour)
	st = p.Next(st, Visit{At: c.Now(), Changed: true, Gone: true}, Hints{})
	if st.LastChange != t0 || st.Due != c.Now().Add(6*hour) {
		t.Fatalf("gone: %+v: a gone page is no new content, and keeps its interval", st)
	}
}

func TestFixedPanicsOnNonPositive(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), "not positive") {
					t.Errorf("Fixed(%v) recovered %v, want a panic saying the interval is not positive", d, v)
				}
			}()
			Fixed(d)
		}()
	}
}

// Each rule of Adaptive, one visit at a time, with Min 1h, Max 30d and
// Initial 1d.
func TestAdaptiveRules(t *testing.T) {
	cfg := AdaptiveConfig{Initial: day, Min: hour, Max: 30 * day}
	at := t0.Add(10 * day)
	prev := State{Interval: 10 * hour, LastVisit: t0.Add(9 * day), LastChange: t0, Due: t0.Add(9*day + 10*hour)}
	tests := []struct {
		name string
		prev State
		v    Visit
		h    Hints
		want State
	}{
		{"first visit: Initial", State{}, Visit{At: at, Changed: true}, Hints{},
			State{Interval: day, LastVisit: at, LastChange: at, Due: at.Add(day)}},
		{"first visit: changefreq hourly, bounded by Min", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "hourly"},
			State{Interval: hour, LastVisit: at, LastChange: at, Due: at.Add(hour)}},
		{"first visit: changefreq Weekly (any case), where the interval settles", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: " Weekly "},
			State{Interval: settled(7 * day), LastVisit: at, LastChange: at, Due: at.Add(settled(7 * day))}},
		{"first visit: changefreq daily", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "daily"},
			State{Interval: settled(day), LastVisit: at, LastChange: at, Due: at.Add(settled(day))}},
		{"first visit: changefreq always is Min", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "always"},
			State{Interval: hour, LastVisit: at, LastChange: at, Due: at.Add(hour)}},
		{"first visit: changefreq never is Max", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "never"},
			State{Interval: 30 * day, LastVisit: at, LastChange: at, Due: at.Add(30 * day)}},
		{"first visit: changefreq yearly is bounded by Max", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "yearly"},
			State{Interval: 30 * day, LastVisit: at, LastChange: at, Due: at.Add(30 * day)}},
		{"first visit: unknown changefreq is ignored", State{}, Visit{At: at, Changed: true}, Hints{ChangeFreq: "sometimes"},
			State{Interval: day, LastVisit: at, LastChange: at, Due: at.Add(day)}},
		{"first visit: an old lastmod lengthens the interval to the page's age", State{}, Visit{At: at, Changed: true},
			Hints{ChangeFreq: "daily", LastMod: at.Add(-5 * day)},
			State{Interval: 5 * day, LastVisit: at, LastChange: at.Add(-5 * day), Due: at.Add(5*day - 36*hour)}},
		{"first visit: a recent lastmod keeps the interval, syncs the due time", State{}, Visit{At: at, Changed: true},
			Hints{ChangeFreq: "weekly", LastMod: at.Add(-10 * hour)},
			State{Interval: settled(7 * day), LastVisit: at, LastChange: at.Add(-10 * hour), Due: at.Add(settled(7*day) - 3*hour)}},
		{"first visit: a lastmod in the future is ignored", State{}, Visit{At: at, Changed: true},
			Hints{LastMod: at.Add(day)},
			State{Interval: day, LastVisit: at, LastChange: at, Due: at.Add(day)}},
		{"changed: shrink by 0.6", prev, Visit{At: at, Changed: true}, Hints{},
			State{Interval: 6 * hour, LastVisit: at, LastChange: at, Due: at.Add(6 * hour)}},
		{"unchanged: grow by 1.25", prev, Visit{At: at}, Hints{},
			State{Interval: 12*hour + 30*time.Minute, LastVisit: at, LastChange: t0, Due: at.Add(12*hour + 30*time.Minute)}},
		{"gone: grows like unchanged, no change recorded", prev, Visit{At: at, Changed: true, Gone: true}, Hints{},
			State{Interval: 12*hour + 30*time.Minute, LastVisit: at, LastChange: t0, Due: at.Add(12*hour + 30*time.Minute)}},
		{"changed, lastmod between the visits: due moves earlier by 0.3 of the change's age", prev,
			Visit{At: at, Changed: true}, Hints{LastMod: at.Add(-10 * hour)},
			State{Interval: 6 * hour, LastVisit: at, LastChange: at.Add(-10 * hour), Due: at.Add(3 * hour)}},
		{"changed, lastmod before the previous visit: not this change's date", prev,
			Visit{At: at, Changed: true}, Hints{LastMod: prev.LastVisit.Add(-hour)},
			State{Interval: 6 * hour, LastVisit: at, LastChange: at, Due: at.Add(6 * hour)}},
		{"changed at Min: stays at Min", State{Interval: hour, LastVisit: at.Add(-hour)}, Visit{At: at, Changed: true}, Hints{},
			State{Interval: hour, LastVisit: at, LastChange: at, Due: at.Add(hour)}},
		{"sync never brings the due time under Min", State{Interval: hour, LastVisit: at.Add(-5 * hour)},
			Visit{At: at, Changed: true}, Hints{LastMod: at.Add(-4 * hour)},
			State{Interval: hour, LastVisit: at, LastChange: at.Add(-4 * hour), Due: at.Add(hour)}},
		{"unchanged at Max: stays at Max", State{Interval: 30 * day, LastVisit: at.Add(-30 * day)}, Visit{At: at}, Hints{},
			State{Interval: 30 * day, LastVisit: at, Due: at.Add(30 * day)}},
		{"hints do not override what visits found", prev, Visit{At: at}, Hints{ChangeFreq: "always"},
			State{Interval: 12*hour + 30*time.Minute, LastVisit: at, LastChange: t0, Due: at.Add(12*hour + 30*time.Minute)}},
		{"a corrupt huge interval is bounded", State{Interval: 1<<63 - 1, LastVisit: at.Add(-hour)}, Visit{At: at}, Hints{},
			State{Interval: 30 * day, LastVisit: at, Due: at.Add(30 * day)}},
		{"a negative interval starts over", State{Interval: -hour, LastVisit: at.Add(-hour)}, Visit{At: at}, Hints{},
			State{Interval: day, LastVisit: at, Due: at.Add(day)}},
	}
	p := Adaptive(cfg)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Next(tt.prev, tt.v, tt.h); got != tt.want {
				t.Errorf("Next =\n %+v, want\n %+v", got, tt.want)
			}
		})
	}
}

func TestAdaptiveDefaults(t *testing.T) {
	p := Adaptive(AdaptiveConfig{Min: 2 * hour, Max: day})
	if st := p.Next(State{}, Visit{At: t0, Changed: true}, Hints{}); st.Interval != 2*hour {
		t.Errorf("Initial 0: first interval %v, want Min", st.Interval)
	}
	// As the documentation says: a page said to change daily starts at
	// about 8.7 hours.
	if st := p.Next(State{}, Visit{At: t0, Changed: true}, Hints{ChangeFreq: "daily"}); st.Interval < 8*hour+36*time.Minute || st.Interval > 8*hour+48*time.Minute {
		t.Errorf("changefreq daily: first interval %v, want about 8.7h", st.Interval)
	}
	p = Adaptive(AdaptiveConfig{Initial: 10 * hour, Min: hour, Max: day, Grow: 2, Shrink: 0.5})
	prev := State{Interval: 10 * hour, LastVisit: t0}
	if st := p.Next(prev, Visit{At: t0.Add(10 * hour)}, Hints{}); st.Interval != 20*hour {
		t.Errorf("Grow 2: %v, want 20h", st.Interval)
	}
	if st := p.Next(prev, Visit{At: t0.Add(10 * hour), Changed: true}, Hints{}); st.Interval != 5*hour {
		t.Errorf("Shrink 0.5: %v, want 5h", st.Interval)
	}
}

func TestAdaptiveConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  AdaptiveConfig
		want string // "" = valid
	}{
		{AdaptiveConfig{Min: hour, Max: hour}, ""},
		{AdaptiveConfig{Min: hour, Max: day, Initial: 2 * day, Grow: 1.1, Shrink: 0.9}, ""},
		{AdaptiveConfig{Min: 0, Max: day}, "minimum interval 0s is not positive"},
		{AdaptiveConfig{Min: day, Max: hour}, "maximum interval 1h0m0s is below the minimum 24h0m0s"},
		{AdaptiveConfig{Min: hour, Max: day, Initial: -1}, "initial interval -1ns is negative"},
		{AdaptiveConfig{Min: hour, Max: day, Grow: 1}, "grow factor 1 is not a finite number above 1"},
		{AdaptiveConfig{Min: hour, Max: day, Shrink: 1}, "shrink factor 1 is not between 0 and 1"},
		{AdaptiveConfig{Min: hour, Max: day, Shrink: -0.5}, "shrink factor -0.5 is not between 0 and 1"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tt.cfg, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	defer func() {
		if v := recover(); v == nil {
			t.Error("Adaptive accepted Min > Max")
		}
	}()
	Adaptive(AdaptiveConfig{Min: day, Max: hour})
}

// A page that changes before every visit converges to Min, one that never
// changes to Max, each within the number of steps the factors say.
func TestAdaptiveConverges(t *testing.T) {
	c := clock.NewFake(t0)
	p := Adaptive(AdaptiveConfig{Initial: day, Min: hour, Max: 30 * day})
	busy, still := State{}, State{}
	for i := range 20 {
		busy = p.Next(busy, Visit{At: c.Now(), Changed: true}, Hints{})
		still = p.Next(still, Visit{At: c.Now(), Changed: i == 0}, Hints{})
		c.Advance(hour)
	}
	// 24h * 0.6^7 < 1h; 24h * 1.25^16 > 30d.
	if busy.Interval != hour {
		t.Errorf("always changed: interval %v after 20 visits, want Min", busy.Interval)
	}
	if still.Interval != 30*day {
		t.Errorf("never changed: interval %v after 20 visits, want Max", still.Interval)
	}
}

func TestChangeFreqInterval(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"always", 0, true}, {"HOURLY", hour, true}, {"daily", day, true}, {"weekly", 7 * day, true},
		{"monthly", 30 * day, true}, {"yearly", 365 * day, true}, {"never", -1, true},
		{"", 0, false}, {"fortnightly", 0, false},
	}
	for _, tt := range tests {
		if d, ok := ChangeFreqInterval(tt.in); d != tt.want || ok != tt.ok {
			t.Errorf("ChangeFreqInterval(%q) = %v, %v, want %v, %v", tt.in, d, ok, tt.want, tt.ok)
		}
	}
}

// FuzzAdaptiveBounds: whatever the configuration, previous state (even
// corrupt), visit and hints, the next visit is never before LastVisit+Min
// nor after LastVisit+Max, and the interval is within [Min, Max].
func FuzzAdaptiveBounds(f *testing.F) {
	f.Add(int64(hour), int64(30*day), int64(day), 0.0, 0.0, int64(10*hour), int64(-day), int64(0), true, false, int64(-5*hour), "daily")
	f.Add(int64(1), int64(1), int64(0), 1.5, 0.1, int64(-1), int64(0), int64(day), false, true, int64(0), "never")
	f.Add(int64(time.Minute), int64(365*day), int64(0), 0.0, 0.0, int64(1<<62), int64(1<<50), int64(-1<<50), true, false, int64(-1<<55), "always")
	f.Fuzz(func(t *testing.T, lo, hi, initial int64, grow, shrink float64,
		prevIv, prevLast, prevChange int64, changed, gone bool, lastMod int64, freq string) {
		cfg := AdaptiveConfig{Initial: time.Duration(initial), Min: time.Duration(lo), Max: time.Duration(hi), Grow: grow, Shrink: shrink}
		if cfg.Validate() != nil {
			return
		}
		// Times within ±146 years of t0, so that adding Max never
		// leaves time.Time's range.
		at := t0
		prev := State{Interval: time.Duration(prevIv), LastVisit: at.Add(time.Duration(prevLast)), LastChange: at.Add(time.Duration(prevChange))}
		if prevLast == 0 {
			prev.LastVisit = time.Time{}
		}
		var h Hints
		h.ChangeFreq = freq
		if lastMod != 0 {
			h.LastMod = at.Add(time.Duration(lastMod))
		}
		for _, p := range []Policy{Adaptive(cfg), Fixed(cfg.Min), Fixed(cfg.Max)} {
			st := p.Next(prev, Visit{At: at, Changed: changed, Gone: gone}, h)
			if st.LastVisit != at {
				t.Fatalf("LastVisit %v, want %v", st.LastVisit, at)
			}
			if st.Due.Before(at.Add(cfg.Min)) || st.Due.After(at.Add(cfg.Max)) {
				t.Fatalf("%+v: Due %v is outside [LastVisit+Min, LastVisit+Max] = [%v, %v]", cfg, st.Due, at.Add(cfg.Min), at.Add(cfg.Max))
			}
			if st.Interval < cfg.Min || st.Interval > cfg.Max {
				t.Fatalf("%+v: interval %v is outside [Min, Max]", cfg, st.Interval)
			}
		}
	})
}
