package recrawl

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

func load(t *testing.T, overrides ...string) *settings.Settings {
	t.Helper()
	s, err := settings.Load(settings.LoadOptions{NoFile: true, Overrides: overrides})
	if err != nil {
		t.Fatalf("Load(%q): %v", overrides, err)
	}
	return s
}

func TestPolicyFromSettings(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want Policy // nil = no continuous mode
		errs []string
	}{
		{"unset: no continuous mode", nil, nil, nil},
		{"adaptive with derived bounds", []string{"RECRAWL_INTERVAL=1d"},
			Adaptive(AdaptiveConfig{Initial: day, Min: hour, Max: 30 * day}), nil},
		{"seconds", []string{"RECRAWL_INTERVAL=3600"},
			Adaptive(AdaptiveConfig{Initial: hour, Min: 150 * time.Second, Max: 30 * hour}), nil},
		{"explicit bounds", []string{"RECRAWL_INTERVAL=6h", "RECRAWL_MIN_INTERVAL=15m", "RECRAWL_MAX_INTERVAL=7d"},
			Adaptive(AdaptiveConfig{Initial: 6 * hour, Min: 15 * time.Minute, Max: 7 * day}), nil},
		{"fixed", []string{"RECRAWL_INTERVAL=1d12h", "RECRAWL_SCHEDULE=Fixed"}, Fixed(36 * hour), nil},
		{"fixed ignores the bounds", []string{"RECRAWL_INTERVAL=1h", "RECRAWL_SCHEDULE=fixed", "RECRAWL_MIN_INTERVAL=2h"}, Fixed(hour), nil},
		{"zero interval", []string{"RECRAWL_INTERVAL=0"}, nil,
			[]string{"-s RECRAWL_INTERVAL=0: invalid setting RECRAWL_INTERVAL: an interval of 0 would revisit without pause"}},
		{"zero bounds", []string{"RECRAWL_INTERVAL=1d", "RECRAWL_MIN_INTERVAL=0s", "RECRAWL_MAX_INTERVAL=0"}, nil,
			[]string{"invalid setting RECRAWL_MIN_INTERVAL: an interval of 0", "invalid setting RECRAWL_MAX_INTERVAL: an interval of 0"}},
		{"min above max", []string{"RECRAWL_INTERVAL=1d", "RECRAWL_MIN_INTERVAL=2d", "RECRAWL_MAX_INTERVAL=1d"}, nil,
			[]string{"-s RECRAWL_MIN_INTERVAL=2d: invalid setting RECRAWL_MIN_INTERVAL: 2d is above RECRAWL_MAX_INTERVAL 1d"}},
		{"min above max, without interval", []string{"RECRAWL_MIN_INTERVAL=3h", "RECRAWL_MAX_INTERVAL=90m"}, nil,
			[]string{"RECRAWL_MIN_INTERVAL: 3h is above RECRAWL_MAX_INTERVAL 1h30m"}},
		{"min above the derived max", []string{"RECRAWL_INTERVAL=1h", "RECRAWL_MIN_INTERVAL=2d"}, nil,
			[]string{"RECRAWL_MIN_INTERVAL: 2d is above the maximum interval 1d6h (RECRAWL_INTERVAL x 30"}},
		{"max below the derived min", []string{"RECRAWL_INTERVAL=48d", "RECRAWL_MAX_INTERVAL=1d"}, nil,
			[]string{"RECRAWL_MAX_INTERVAL: 1d is below the minimum interval 2d (RECRAWL_INTERVAL / 24"}},
		{"interval outside the bounds", []string{"RECRAWL_INTERVAL=10m", "RECRAWL_MIN_INTERVAL=1h", "RECRAWL_MAX_INTERVAL=1d"}, nil,
			[]string{"RECRAWL_INTERVAL: 10m is outside [1h, 1d]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PolicyFromSettings(load(t, tt.set...))
			errs := settings.Errors(err)
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors %q, want %q", errs, tt.errs)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.errs[i]) || !errors.Is(e, settings.ErrInvalid) {
					t.Errorf("error %q, want ErrInvalid with %q", e, tt.errs[i])
				}
			}
			if p != tt.want {
				t.Errorf("policy %#v, want %#v", p, tt.want)
			}
		})
	}
}

func TestIntervalSettingType(t *testing.T) {
	for _, v := range []string{"-1", "-2h", "soon", "1x", "40000000d", ".inf", "d"} {
		_, err := settings.Load(settings.LoadOptions{NoFile: true, Overrides: []string{"RECRAWL_INTERVAL=" + v}})
		if !errors.Is(err, settings.ErrType) || !strings.Contains(err.Error(), "RECRAWL_INTERVAL") {
			t.Errorf("RECRAWL_INTERVAL=%s: %v, want a type error naming the setting", v, err)
		}
	}
	for v, want := range map[string]time.Duration{"90m": 90 * time.Minute, "1.5d": 36 * hour, "1d30m": day + 30*time.Minute, "45": 45 * time.Second, "2.5": 2500 * time.Millisecond} {
		if got := load(t, "RECRAWL_INTERVAL="+v).Seconds("RECRAWL_INTERVAL"); got != want {
			t.Errorf("RECRAWL_INTERVAL=%s reads %v, want %v", v, got, want)
		}
	}
	// A spider's settings, written in Go.
	s, err := settings.Load(settings.LoadOptions{NoFile: true, Spider: map[string]any{"RECRAWL_INTERVAL": 36 * time.Hour}, SpiderName: "shop"})
	if err != nil || s.Seconds("RECRAWL_INTERVAL") != 36*hour {
		t.Errorf("RECRAWL_INTERVAL as a time.Duration: %v, %v", s.Seconds("RECRAWL_INTERVAL"), err)
	}
	if _, err := settings.Load(settings.LoadOptions{NoFile: true, Spider: map[string]any{"RECRAWL_INTERVAL": -time.Hour}}); !errors.Is(err, settings.ErrType) {
		t.Errorf("RECRAWL_INTERVAL as a negative time.Duration: %v, want a type error", err)
	}
	if _, err := settings.Load(settings.LoadOptions{NoFile: true, Overrides: []string{"RECRAWL_SCHEDULE=sometimes"}}); !errors.Is(err, settings.ErrType) ||
		!strings.Contains(err.Error(), `"sometimes" is not a schedule; use adaptive`) {
		t.Errorf("RECRAWL_SCHEDULE=sometimes: %v", err)
	}
}

func TestBudgetFromSettings(t *testing.T) {
	c := clock.NewFake(t0)
	tests := []struct {
		set  string
		want Limits
		err  string
	}{
		{"", Limits{}, ""},
		{"RECRAWL_BUDGET=1000/h", Limits{Total: 1000}, ""},
		{"RECRAWL_BUDGET=500", Limits{Total: 500}, ""},
		{"RECRAWL_BUDGET={total: 1000, scope: 1/m, shop.example: 10/m}", Limits{Total: 1000, Scope: 60, Scopes: map[string]float64{"shop.example": 600}}, ""},
		{"RECRAWL_BUDGET=0", Limits{}, `-s RECRAWL_BUDGET=0: invalid setting RECRAWL_BUDGET: rate "0/h" is 0: nothing would ever be revisited`},
		{"RECRAWL_BUDGET=0/h", Limits{}, `invalid setting RECRAWL_BUDGET: rate "0/h" is 0`},
		{"RECRAWL_BUDGET={scope: 0}", Limits{}, `invalid setting RECRAWL_BUDGET: rate "0/h" is 0`},
		{"RECRAWL_BUDGET=10/fortnight", Limits{}, `invalid setting RECRAWL_BUDGET: rate "10/fortnight": unknown unit "fortnight"`},
	}
	for _, tt := range tests {
		var set []string
		if tt.set != "" {
			set = []string{tt.set}
		}
		b, err := BudgetFromSettings(load(t, set...), c)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, settings.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid with %q", tt.set, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.set, err)
		case tt.want.Total == 0 && tt.want.Scope == 0 && tt.want.Scopes == nil:
			if b != nil {
				t.Errorf("%s: budget %+v, want none", tt.set, b.Limits())
			}
		case b == nil || b.Limits().String() != tt.want.String():
			t.Errorf("%s: budget %v, want %v", tt.set, b, tt.want)
		}
	}
}

// The check registered with settings.Validate reports the schedule's and
// the budget's problems together.
func TestCheckRegistered(t *testing.T) {
	err := settings.Validate(load(t, "RECRAWL_INTERVAL=0", "RECRAWL_BUDGET=0/d"))
	var names []string
	for _, e := range settings.Errors(err) {
		var se *settings.Error
		if errors.As(e, &se) {
			names = append(names, se.Setting)
		}
	}
	if strings.Join(names, ",") != "RECRAWL_INTERVAL,RECRAWL_BUDGET" {
		t.Fatalf("Validate: %v, want problems of RECRAWL_INTERVAL and RECRAWL_BUDGET", err)
	}
}
