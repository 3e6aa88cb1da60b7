package redisq

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
)

// lease is a reservation this process holds: a request popped from the
// frontier (a job) or an admission of a request sent outside it. Its
// Redis lease is renewed until it is acknowledged (and the
// acknowledgement flushed), so that only a dead or cut-off worker's
// requests come back to the queue.
type lease struct {
	id     pqueue.ID
	sentAt int64 // UnixNano in the local clock, unique in the process
	// admitted is the admission in Redis's clock: the send time the gates
	// of its scopes recorded (ls), which names it to the policies. Set
	// when the lease is made, never changed: read without the lock.
	admitted  time.Time
	admission bool
	classes   string  // outcome per scope, set by the throttler when the download ends
	latency   float64 // ms
	released  bool    // its slots were freed already (the throttler released it)
	acking    bool    // its acknowledgement is in the outbox
	lost      bool    // another worker took it back (renewal failed)
}

// leases is the set of reservations held by this process, by ID and by
// send time (the throttler knows a request by the time it was sent).
type leases struct {
	mu     sync.Mutex
	byID   map[pqueue.ID]*lease
	bySent map[int64]*lease
}

func newLeases() *leases {
	return &leases{byID: map[pqueue.ID]*lease{}, bySent: map[int64]*lease{}}
}

// add records a reservation sent at sentAt (local clock), admitted at
// admitted in Redis's clock, and returns the send time it is known by:
// sentAt, moved by nanoseconds when another reservation has the same, so
// that the send time names one reservation.
func (ls *leases) add(id pqueue.ID, sentAt, admitted time.Time, admission bool) time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := sentAt.UnixNano()
	for ls.bySent[n] != nil {
		n++
	}
	l := &lease{id: id, sentAt: n, admitted: admitted, admission: admission}
	ls.byID[id] = l
	ls.bySent[n] = l
	return time.Unix(0, n)
}

// bySentAt returns the reservation sent at t, or nil.
func (ls *leases) bySentAt(t time.Time) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.bySent[t.UnixNano()]
}

// setOutcome records how the request sent at t ended (for its
// acknowledgement) and returns its reservation, nil if unknown.
func (ls *leases) setOutcome(t time.Time, classes string, latency float64, released bool) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.bySent[t.UnixNano()]
	if l == nil {
		return nil
	}
	l.classes, l.latency = classes, latency
	l.released = l.released || released
	c := *l
	return &c
}

// outcome returns what the acknowledgement of id must count.
func (ls *leases) outcome(id pqueue.ID) (string, float64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.byID[id]; l != nil {
		return l.classes, l.latency
	}
	return "", 0
}

// remove forgets the reservations whose acknowledgement was stored.
func (ls *leases) remove(ids ...pqueue.ID) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, id := range ids {
		if l := ls.byID[id]; l != nil {
			delete(ls.byID, id)
			delete(ls.bySent, l.sentAt)
		}
	}
}

// ids returns the held reservations by shard.
func (ls *leases) ids(shards int) [][]pqueue.ID {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([][]pqueue.ID, shards)
	for id, l := range ls.byID {
		if !l.lost {
			k := shardOfID(id)
			out[k] = append(out[k], id)
		}
	}
	return out
}

// unacked returns the held reservations no acknowledgement was asked for
// (requests an aborted crawl cut short).
func (ls *leases) unacked() []pqueue.ID {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var out []pqueue.ID
	for id, l := range ls.byID {
		if !l.acking && !l.lost {
			out = append(out, id)
		}
	}
	return out
}

func (ls *leases) len() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.byID)
}

// markAcking records that id's acknowledgement is in the outbox: a
// renewal that misses it may have raced with the flush that applied it.
func (ls *leases) markAcking(id pqueue.ID) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.byID[id]; l != nil {
		l.acking = true
	}
}

// markLost flags reservations another worker took back, and returns
// them; those being acknowledged are left to their acknowledgement, which
// reports a lost lease itself.
func (ls *leases) markLost(ids []pqueue.ID) []pqueue.ID {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var out []pqueue.ID
	for _, id := range ids {
		if l := ls.byID[id]; l != nil && !l.acking {
			l.lost = true
			out = append(out, id)
		}
	}
	return out
}

// renew extends the leases of every held reservation: one pipelined
// round trip over the shards. It returns the reservations found lost.
func (f *Frontier) renew(ctx context.Context) ([]pqueue.ID, error) {
	per := f.leases.ids(f.l.shards)
	var calls []*call
	for k, ids := range per {
		if len(ids) == 0 {
			continue
		}
		args := make([]any, 0, len(ids)+1)
		args = append(args, f.store.lease.Milliseconds())
		for _, id := range ids {
			args = append(args, idBytes(id))
		}
		calls = append(calls, &call{s: scriptRenew, k: k, args: args})
	}
	if len(calls) == 0 {
		return nil, nil
	}
	if err := runCalls(ctx, f.c, f.l, calls); err != nil {
		return nil, err
	}
	var lost []pqueue.ID
	for _, cl := range calls {
		v, _ := cl.cmd.StringSlice()
		for _, s := range v {
			if len(s) == 8 {
				lost = append(lost, pqueue.ID(binary.BigEndian.Uint64([]byte(s))))
			}
		}
	}
	return f.leases.markLost(lost), nil
}
