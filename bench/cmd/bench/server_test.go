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
