package redisq_test

import (
	"context"
	"testing"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/storetest"
)

func TestConformance(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(map[int]string{1: "OneShard", 3: "ThreeShards"}[shards], func(t *testing.T) {
			c := dial(t)
			storetest.Run(t, storetest.Options{
				New: func(t *testing.T) pqueue.Store { return newStore(t, c, layout(t, shards), "w1") },
				Reopen: func(t *testing.T, old pqueue.Store) pqueue.Store {
					old.Close(context.Background())
					s := old.(interface{ Owner() string })
					return newStore(t, c, old.(layoutOf).Layout(), s.Owner())
				},
			})
		})
	}
}
