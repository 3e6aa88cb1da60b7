package redisjob

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

type seedSpider struct{ spider.Base }

func (*seedSpider) Name() string { return "seed" }
func (*seedSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

func open(t *testing.T, url, job, worker string) *Job {
	t.Helper()
	s := settings.New()
	if err := s.SetMap(map[string]any{"REDIS_URL": url, "JOB": job, "REDIS_WORKER_ID": worker, "REDIS_LEASE_TTL": 0.3},
		settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	j, err := Open(context.Background(), s, &seedSpider{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The first worker seeds; a worker that joins later does not, until the
// seeder dies before seeding is done: its lease expires and the other
// takes over. Once seeding is done nobody seeds again.
func TestSeedingTakeover(t *testing.T) {
	url := redistest.Shared(t).URL()
	job := "takeover" + time.Now().Format("150405.000000")
	a := open(t, url, job, "a")
	b := open(t, url, job, "b")
	defer b.Close()
	if !a.Seeding() || b.Seeding() {
		t.Fatalf("seeding: a %v, b %v; want the first worker only", a.Seeding(), b.Seeding())
	}
	// a dies: its heartbeat stops, it does not leave.
	a.stop()
	a.bg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !b.Seeding() {
		if time.Now().After(deadline) {
			t.Fatal("b did not take seeding over after a's lease expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.c.Set(context.Background(), b.l.JobKey("seed"), "done", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := open(t, url, job, "c")
	defer c.Close()
	if c.Seeding() || !c.seedDone.Load() {
		t.Fatal("a worker joining after seeding is done seeds")
	}
	a.c.Close()
}
