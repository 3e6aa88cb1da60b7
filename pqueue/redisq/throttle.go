package redisq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// Throttling is the throttler's shared store (throttling.Shared) on Redis:
// the gate of each scope is its hash in the scope's shard, run by the
// scripts; the policy's record sits in the same hash and is updated by
// read (pread) - apply in Go - write if unchanged (pwrite). It works with
// the job's Frontier, which it shares reservations, the clock offset and
// the outbox with: create it with the store, then pass it to NewFrontier.
type Throttling struct {
	s *Store

	mu  sync.Mutex
	f   *Frontier
	rnd *rand.Rand
}

var (
	_ throttling.Shared          = (*Throttling)(nil)
	_ throttling.SharedWirer     = (*Throttling)(nil)
	_ throttling.SharedSendTimes = (*Throttling)(nil)
)

// NewThrottling returns the shared throttling store of s's job.
func NewThrottling(s *Store) *Throttling {
	return &Throttling{s: s, rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

func (t *Throttling) attach(f *Frontier) {
	t.mu.Lock()
	t.f = f
	t.mu.Unlock()
}

func (t *Throttling) frontier() (*Frontier, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil, errors.New("redisq: Throttling used before its Frontier was created")
	}
	return t.f, nil
}

// Offset implements throttling.Shared.
func (t *Throttling) Offset() time.Duration {
	f, err := t.frontier()
	if err != nil {
		return 0
	}
	return f.Offset()
}

// Admit implements throttling.Shared with one script call (more when a
// gate must be refreshed first). Under throttling.WithTurnOf naming a
// request this worker holds, the request takes that one's turn in each
// scope where it made the last send (see WithTurnOf). While Redis does not answer it asks the
// caller to wait and try again; once the frontier gave up on Redis it
// returns the error.
func (t *Throttling) Admit(ctx context.Context, scopes throttling.Scopes, noSlot bool) (time.Time, time.Duration, error) {
	f, err := t.frontier()
	if err != nil {
		return time.Time{}, 0, err
	}
	l := t.s.l
	k, err := l.ShardOfScopes(scopes)
	if err != nil {
		return time.Time{}, 0, err
	}
	body, err := encodeBody(nil, scopes.Key(), 0, scopes, nil)
	if err != nil {
		return time.Time{}, 0, err
	}
	rate, burst := f.startRate()
	ns := "0"
	if noSlot {
		ns = "1"
	}
	turn := ""
	if at := throttling.TurnOf(ctx); !at.IsZero() {
		// robots.txt fetched for a request of this worker that has not
		// reached the server: it goes in that request's turn.
		if tl := f.leases.bySentAt(at); tl != nil {
			turn = idBytes(tl.id)
		}
	}
	for attempt := 0; ; attempt++ {
		t.mu.Lock()
		u := t.rnd.Float64()
		t.mu.Unlock()
		t0 := f.clk.Now()
		v, err := scriptAdmit.run(ctx, t.s.c, l, k, k, t.s.owner, t.s.lease.Milliseconds(), u, rate, burst, ns, body, turn).Slice()
		if err != nil {
			if !isUnavailable(err) {
				return time.Time{}, 0, err
			}
			f.noteUnavailable(err)
			if ferr := f.Err(); ferr != nil {
				return time.Time{}, 0, ferr
			}
			return time.Time{}, 200 * time.Millisecond, nil
		}
		f.noteAvailable()
		if len(v) < 2 {
			return time.Time{}, 0, fmt.Errorf("redisq: unexpected admit reply %v", v)
		}
		local := f.noteOffset(atof(v[0]), t0, f.clk.Now())
		switch v[1] {
		case "ok":
			id8, _ := v[2].(string)
			return f.leases.add(idOf(id8), local, msTime(atof(v[0])), true), 0, nil
		case "slot":
			return time.Time{}, throttling.UntilSlotFree, nil
		case "wait":
			return time.Time{}, max(msDuration(atof(v[2])), time.Millisecond), nil
		case "stale":
			scope, _ := v[2].(string)
			if attempt >= 3 {
				return time.Time{}, 10 * time.Millisecond, nil
			}
			if err := f.gates.RefreshScope(ctx, scope); err != nil {
				return time.Time{}, 0, fmt.Errorf("refreshing the gate of scope %q: %w", scope, err)
			}
		default:
			return time.Time{}, 0, fmt.Errorf("redisq: unexpected admit reply %v", v)
		}
	}
}

// Release implements throttling.Shared. A queued request's release goes
// with its acknowledgement (no round trip); a request sent outside the
// queue is acknowledged through the outbox; now costs one round trip.
func (t *Throttling) Release(ctx context.Context, sentAt time.Time, classes []throttling.OutcomeClass, latency time.Duration, now bool) error {
	f, err := t.frontier()
	if err != nil {
		return err
	}
	letters := classLetters(classes)
	ms := float64(latency) / float64(time.Millisecond)
	l := f.leases.setOutcome(sentAt, letters, ms, false)
	if l == nil {
		return nil
	}
	if now {
		err := scriptRelease.run(ctx, t.s.c, t.s.l, shardOfID(l.id), idBytes(l.id), letters, strconv.FormatFloat(ms, 'f', 3, 64)).Err()
		if err != nil {
			return err // the acknowledgement releases it
		}
	}
	if l.admission {
		f.leases.markAcking(l.id)
		f.out.add(&op{kind: opAck, shard: shardOfID(l.id), ack: ack{id: l.id, classes: letters, latency: ms}})
	}
	return nil
}

// SharedSentAt implements throttling.SharedSendTimes: the Redis time of
// the pop or admit script that admitted the request sent at sentAt, which
// its gates recorded as their last send, while this worker holds it.
func (t *Throttling) SharedSentAt(sentAt time.Time) (time.Time, bool) {
	f, err := t.frontier()
	if err != nil {
		return time.Time{}, false
	}
	if l := f.leases.bySentAt(sentAt); l != nil && !l.admitted.IsZero() {
		return l.admitted, true
	}
	return time.Time{}, false
}

// Wired implements throttling.SharedWirer: the request sent at sentAt
// reached its connection now. The mark goes to the outbox with its
// acknowledgements and pushes (no round trip of its own); the apply
// script records, in each scope where the request is still the last send,
// Redis's now minus the time the mark waited here as the moment it
// reached the wire (lw, beside its admission ls), so the next request of
// any worker waits the delay after the request reached the server, not
// after its admission.
func (t *Throttling) Wired(sentAt time.Time) {
	f, err := t.frontier()
	if err != nil {
		return
	}
	l := f.leases.bySentAt(sentAt)
	if l == nil {
		return
	}
	f.out.add(&op{kind: opWire, shard: shardOfID(l.id), ack: ack{id: l.id}, at: f.clk.Now()})
}

// Update implements throttling.Shared: pread, fn, pwrite; again on a
// version conflict (at most 16 times).
func (t *Throttling) Update(ctx context.Context, scope string, fn throttling.PolicyUpdate) error {
	l := t.s.l
	k := l.ShardOf(scope)
	first := true
	for range 16 {
		v, err := scriptPRead.run(ctx, t.s.c, l, k, scope).Slice()
		if err != nil {
			return err
		}
		if len(v) < 2 {
			return fmt.Errorf("redisq: unexpected pread reply %v", v)
		}
		now := atof(v[0])
		flat := strs(v[1])
		fields := make(map[string]string, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			fields[flat[i]] = flat[i+1]
		}
		w, ok := fn(msTime(now), []byte(fields["p"]), decodeState(fields))
		if !ok {
			return nil
		}
		score := ""
		if w.BackingOff {
			score = msString(msTime(now))
			if w.Params.BlockedUntil.After(msTime(now)) {
				score = msString(w.Params.BlockedUntil)
			}
		}
		consumed, remaining := "", ""
		if first { // a quota correction applies once, whatever the version
			if w.Consumed != nil {
				consumed = strconv.FormatFloat(*w.Consumed, 'g', -1, 64)
			}
			if w.Remaining != nil {
				remaining = strconv.FormatFloat(*w.Remaining, 'g', -1, 64)
			}
		}
		first = false
		n, err := scriptPWrite.run(ctx, t.s.c, l, k, scope, fields["pv"], encodeParams(w.Params), w.Record, score, consumed, remaining).Int()
		if err != nil {
			return err
		}
		if n == 1 {
			if f, _ := t.frontier(); f != nil {
				f.wakeShard(k) // new parameters: its groups may be ready (or no longer)
			}
			return nil
		}
	}
	return fmt.Errorf("scope %q: its policy was updated by other workers 16 times in a row; feedback dropped", scope)
}

func idOf(id8 string) pqueue.ID {
	if len(id8) != 8 {
		return 0
	}
	var n uint64
	for i := range 8 {
		n = n<<8 | uint64(id8[i])
	}
	return pqueue.ID(n)
}
