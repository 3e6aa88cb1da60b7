package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/throttling"
)

// TestWithoutSpillStore checks the rule for a program that did not link
// package spillq (the scheduler's tests do not): the default
// SCHEDULER_MEMORY_MAX_REQUESTS keeps the queue in memory, a value set on
// purpose is an error naming the package, and 0 asks for nothing.
func TestWithoutSpillStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]any
		wantErr bool
	}{
		{"default limit", nil, false},
		{"limit set on purpose", map[string]any{"SCHEDULER_MEMORY_MAX_REQUESTS": 500}, true},
		{"never spill", map[string]any{"SCHEDULER_MEMORY_MAX_REQUESTS": 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings.New()
			if err := s.SetMap(tc.set, settings.SourceEnv, "GOCRAWL_SCHEDULER_MEMORY_MAX_REQUESTS"); err != nil {
				t.Fatal(err)
			}
			thr, err := throttling.New(s, throttling.Options{Clock: clock.NewFake(t0)})
			if err != nil {
				t.Fatal(err)
			}
			sch, err := scheduler.New(scheduler.Deps{Settings: s, Throttler: thr, Log: zerolog.Nop()})
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Open(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := sch.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, scheduler.ErrNoSpillStore) {
				t.Fatalf("New error %v, want one wrapping ErrNoSpillStore", err)
			}
			for _, want := range []string{"SCHEDULER_MEMORY_MAX_REQUESTS", "GOCRAWL_SCHEDULER_MEMORY_MAX_REQUESTS", scheduler.SpillImport} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not name %s", err, want)
				}
			}
		})
	}
}
