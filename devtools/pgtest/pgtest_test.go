package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	url := s.CreateDB(t, "crawl")
	s.Exec(t, "crawl", "CREATE TABLE t (x int)", "INSERT INTO t VALUES (7)")
	s.Stop()
	ctx := context.Background()
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("the server answers after Stop")
	}
	s.Restart(t)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var x int
	if err := c.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 7 {
		t.Fatalf("after restart: x = %d, %v; want 7", x, err)
	}
	if _, err := pgx.Connect(ctx, s.UserURL(Superuser, "wrong", "crawl")); err == nil {
		t.Fatal("a wrong password is accepted")
	}
}
