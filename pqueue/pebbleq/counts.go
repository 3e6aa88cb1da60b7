package pebbleq

import "context"

// This file holds the Store's read-only views of its counts, kept in
// memory: sub-queue names, waiting and delayed entries, reservations.

// Queues implements pqueue.Store.
func (s *Store) Queues(ctx context.Context, fn func(queue string) error) error {
	s.mu.Lock()
	names := make([]string, 0, len(s.queues))
	for n, q := range s.queues {
		if q.n > 0 {
			names = append(names, n)
		}
	}
	s.mu.Unlock()
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// Counts returns the number of waiting entries per sub-queue (delayed ones
// not included) and the size of the delayed set.
func (s *Store) Counts() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.queues))
	for n, q := range s.queues {
		if q.n > 0 {
			out[n] = q.n
		}
	}
	return out, s.delayed
}

// Len implements pqueue.Store.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting + s.delayed
}

// Reserved returns how many entries are reserved and not yet acked.
func (s *Store) Reserved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reserved)
}
