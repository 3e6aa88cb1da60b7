package pqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func TestPlain(t *testing.T) {
	ctx := context.Background()
	q, err := pqueue.New("PriorityQueue", pqueue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Open(ctx); err != nil {
		t.Fatal(err)
	}
	push(t, q, t0, "low", 0, sc("a"))
	push(t, q, t0, "high", 5, sc("b"))
	r := spider.MustRequest("https://example.com/later", nil).Set(throttling.MetaDelay, "2")
	if _, err := q.Push(ctx, t0, r, sc("a"), 9); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		p, wake, err := q.Pop(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			if wake != 2*time.Second {
				t.Fatalf("wake = %v, want 2s (the delayed request)", wake)
			}
			break
		}
		if p.Admitted {
			t.Fatal("the plain queue admitted a request; the engine must wait for its scopes")
		}
		got = append(got, p.Req.URL.Path)
	}
	if len(got) != 2 || got[0] != "/high" || got[1] != "/low" {
		t.Fatalf("order = %v, want [/high /low]", got)
	}
	p, _, _ := q.Pop(ctx, t0.Add(2*time.Second))
	if p == nil || p.Req.URL.Path != "/later" || !throttling.DelayTaken(p.Req) {
		t.Fatalf("delayed request: %+v", p)
	}
	if err := q.Ack(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 0 {
		t.Fatalf("Len = %d", q.Len())
	}
}

func TestNewUnknownQueue(t *testing.T) {
	if _, err := pqueue.New("Nope", pqueue.Deps{}); err == nil {
		t.Fatal("unknown queue name accepted")
	}
	if _, err := pqueue.New("ThrottlingAwarePriorityQueue", pqueue.Deps{}); err == nil {
		t.Fatal("throttling-aware queue built without a gate")
	}
}
