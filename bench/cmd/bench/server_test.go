package main

import (
	"errors"
	"slices"
	"testing"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"go", []string{"go"}, false},
		{"nginx", []string{"nginx"}, false},
		{"nginx, go", []string{"nginx", "go"}, false},
		{"go,go", nil, true},
		{"apache", nil, true},
		{"", nil, true},
	} {
		got, err := parseServers(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseServers(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("parseServers(%q): %v is not a usage error", tc.in, err)
		}
	}
}

func TestCanServe(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		servers  []string
		ok       bool
	}{
		{"S1", []string{"go", "nginx"}, true},
		{"S2", []string{"go"}, true},
		{"S2", []string{"nginx"}, false},
		{"S3", []string{"go", "nginx"}, false},
		{"S4-mixed", []string{"nginx"}, false},
	} {
		sc, err := scenario.Find(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		err = canServe(sc, tc.servers)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, scenario.ErrNotStatic)) {
			t.Errorf("canServe(%s, %v) = %v, want ok %v", tc.scenario, tc.servers, err, tc.ok)
		}
	}
}

func TestLabels(t *testing.T) {
	s1, _ := scenario.Find("S1")
	runs := []*run{{sc: s1, via: scenario.ServerNginx}, {sc: s1, via: scenario.ServerGo}, {sc: s1, via: scenario.ServerNginx}}
	if got, want := labels(runs, "S1"), []string{"S1", "S1@nginx"}; !slices.Equal(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if got := siteArgs(runs[1]); !slices.Equal(got, []string{"-scenario", "S1"}) {
		t.Errorf("siteArgs on the Go site = %v: the default command line must not change", got)
	}
}

// -scenarios names scenarios or their families; a typo is a usage error
// naming it, not a run that silently does nothing.
func TestParseScenarios(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"S1", []string{"S1"}, false},
		{"S1, S2", []string{"S1", "S2"}, false},
		{"S2-alone", []string{"S2-alone"}, false},
		{"S1M", []string{"S1M"}, false},
		{"S5", nil, true},
		{"s1", nil, true},
		{",", nil, true},
	} {
		got, err := parseScenarios(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseScenarios(%q): error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, errUsage) {
				t.Errorf("parseScenarios(%q): %v is not a usage error", tt.in, err)
			}
			continue
		}
		for _, w := range tt.want {
			if !got[w] {
				t.Errorf("parseScenarios(%q) = %v, want %s", tt.in, got, w)
			}
		}
	}
}
