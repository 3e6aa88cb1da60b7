package redistest

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestStandaloneRestart(t *testing.T) {
	s := Start(t, Options{AppendOnly: true})
	if _, err := Command(s.Addr, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if _, err := Command(s.Addr, "PING"); err == nil {
		t.Fatal("server answers after Kill")
	}
	s.Restart(t)
	if v, err := Command(s.Addr, "GET", "k"); err != nil || v != "v" {
		t.Fatalf("after restart with AOF: GET k = %q, %v; want v", v, err)
	}
}

func TestCluster(t *testing.T) {
	c := SharedCluster(t)
	for _, n := range c.Nodes {
		info, err := Command(n.Addr, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_known_nodes:3") {
			t.Fatalf("node %s: %v\n%s", n.Addr, err, info)
		}
	}
}
