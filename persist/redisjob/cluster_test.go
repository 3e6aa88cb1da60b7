package redisjob_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
)

// A job on a three-master Redis Cluster: its shards (9 by default, 3 per
// master) spread its scopes over the nodes, every script call touches one
// slot, and two workers crawl it as on one server.
func TestCluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	srv := site(t, 24, 10) // 24 hosts: every node gets some (a node gets none with probability 3*(2/3)^24)
	job := nextJob()
	var wg sync.WaitGroup
	results := make([]*engine.Result, 2)
	for i := range 2 {
		wg.Go(func() {
			results[i], _ = crawl(t, config(t, cl.URL(), job, fmt.Sprintf("w%d", i), nil), followSpider(t, starts(srv)...))
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.Reason != "finished" {
			t.Errorf("worker %d ended %q", i, r.Reason)
		}
	}
	fetchedOnce(t, srv, 10)

	// The job's keys are on every node.
	for _, addr := range cl.Addrs() {
		keys, err := redistest.Command(addr, "KEYS", "gocrawl:{"+job+"*")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Fields(keys)); n == 0 {
			t.Errorf("node %s holds none of the job's keys: its shards did not spread", addr)
		}
	}
	ctx := context.Background()
	c, err := redisq.Dial(ctx, cl.URL(), redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !redisq.IsCluster(c) {
		t.Fatal("the cluster was not detected")
	}
	r, err := redisjob.Inspect(ctx, c, "gocrawl", job, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.Shards != 9 || r.Seen != 240 || r.Totals["downloader/response_count"] != 240 {
		t.Fatalf("inspect: %d shards, %d fingerprints, %v responses; want 9, 240, 240", r.Meta.Shards, r.Seen, r.Totals["downloader/response_count"])
	}
	if _, err := redisjob.Delete(ctx, c, "gocrawl", job, false); err != nil {
		t.Fatal(err)
	}
	for _, addr := range cl.Addrs() {
		n, _ := redistest.Command(addr, "DBSIZE")
		if k, _ := strconv.Atoi(n); k != 0 {
			keys, _ := redistest.Command(addr, "KEYS", "*")
			t.Errorf("node %s still holds %d keys after delete: %s", addr, k, keys)
		}
	}
}
