package redisjob

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// coalescer sends the record reads and writes of a worker's crawl
// (a Get and a Put per page) in as few round trips as it can without
// holding any back: a call made while no pipeline is in flight is sent
// at once; calls made while one is in flight wait for it and then go
// together, in one pipeline, in the order they were made. Each caller
// still waits for its own command's answer, so a Put that returned is in
// Redis, as with a command sent alone; what changes is only that a busy
// worker pays one round trip for many pages instead of two per page.
type coalescer struct {
	c redis.UniversalClient

	mu      sync.Mutex
	queue   []*coalesced
	sending bool
}

// coalesced is one call waiting for its pipeline.
type coalesced struct {
	add  func(p redis.Pipeliner) redis.Cmder
	cmd  redis.Cmder
	done chan struct{}
}

// maxCoalesced bounds the commands of one pipeline.
const maxCoalesced = 256

// do queues the command add builds and waits for its answer, or for ctx
// (the command may then still be sent).
func (q *coalescer) do(ctx context.Context, add func(p redis.Pipeliner) redis.Cmder) (redis.Cmder, error) {
	w := &coalesced{add: add, done: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, w)
	if !q.sending {
		q.sending = true
		go q.send()
	}
	q.mu.Unlock()
	select {
	case <-w.done:
		return w.cmd, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends what is queued, one pipeline at a time, until the queue is
// empty.
func (q *coalescer) send() {
	for {
		q.mu.Lock()
		n := min(len(q.queue), maxCoalesced)
		if n == 0 {
			q.sending = false
			q.mu.Unlock()
			return
		}
		batch := q.queue[:n:n]
		q.queue = q.queue[n:]
		if len(q.queue) == 0 {
			q.queue = nil
		}
		q.mu.Unlock()

		p := q.c.Pipeline()
		for _, w := range batch {
			w.cmd = w.add(p)
		}
		// The client's read and write timeouts bound the call; each
		// command keeps its own error (redis.Nil for a missing field).
		_, _ = p.Exec(context.Background())
		for _, w := range batch {
			close(w.done)
		}
	}
}
