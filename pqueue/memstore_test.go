package pqueue_test

import (
	"testing"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Options{
		New: func(t *testing.T) pqueue.Store { return pqueue.NewMemoryStore() },
	})
}
