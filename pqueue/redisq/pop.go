package redisq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// scanLimit bounds the groups one pop call evaluates (parks or times
// before it finds a ready one), so that a call stays short; the next call
// goes on.
const scanLimit = 64

// Pop implements pqueue.PriorityQueue: it asks the shards worth asking
// (see hints), in round-robin order, until one yields a request. A shard
// that had nothing ready is not asked again before its next timed group,
// delayed request or lease expiry is due, before another worker frees a
// slot it waits for (wake-up channel), or before PollInterval. While Redis
// does not answer, Pop returns no request and a short wait; after
// UnavailableTimeout it returns the error.
func (f *Frontier) Pop(ctx context.Context, now time.Time) (*pqueue.Popped, time.Duration, error) {
	ps, wait, err := f.PopN(ctx, now, 1)
	if len(ps) == 0 {
		return nil, wait, err
	}
	return ps[0], 0, err
}

// PopN implements pqueue.BatchPopper: Pop for up to n requests, taken
// from as few shards as possible (one script call per shard asked).
func (f *Frontier) PopN(ctx context.Context, now time.Time, n int) ([]*pqueue.Popped, time.Duration, error) {
	if err := f.Err(); err != nil {
		return nil, 0, err
	}
	shards := f.l.shards
	f.mu.Lock()
	start := f.rr
	f.mu.Unlock()
	var out []*pqueue.Popped
	for i := 0; i < shards && len(out) < n; i++ {
		k := (start + i) % shards
		f.mu.Lock()
		skip := f.hints[k].After(now) || f.nextPop[k].After(now)
		f.mu.Unlock()
		if skip {
			continue
		}
		ps, err := f.popShard(ctx, k, now, n-len(out))
		if err != nil {
			if ctx.Err() != nil {
				// The caller gave up (an aborted crawl): not the
				// frontier's failure, which Close would report.
				return out, 0, ctx.Err()
			}
			if !isUnavailable(err) {
				f.setFatal(err)
				return out, 0, err
			}
			f.noteUnavailable(err)
			if ferr := f.Err(); ferr != nil {
				return out, 0, ferr
			}
			if len(out) > 0 {
				return out, 0, nil
			}
			return nil, 200 * time.Millisecond, nil
		}
		if len(ps) > 0 {
			out = append(out, ps...)
			f.mu.Lock()
			f.rr = (k + 1) % shards
			f.mu.Unlock()
		}
	}
	if len(out) > 0 {
		return out, 0, nil
	}
	return nil, f.wait(now), nil
}

// wait is how long until a shard is worth asking again.
func (f *Frontier) wait(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.o.PollInterval
	for k, h := range f.hints {
		if f.nextPop[k].After(h) {
			h = f.nextPop[k]
		}
		if d := h.Sub(now); d < w {
			w = d
		}
	}
	return max(w, time.Millisecond)
}

// popShard runs the pop script on shard k for up to n requests,
// refreshing stale gates (at most a few times: then it gives up until the
// next call).
func (f *Frontier) popShard(ctx context.Context, k int, now time.Time, n int) ([]*pqueue.Popped, error) {
	rate, burst := f.startRate()
	f.mu.Lock()
	gen := f.gens[k]
	f.mu.Unlock()
	for attempt := 0; ; attempt++ {
		t0 := f.clk.Now()
		v, err := scriptPop.run(ctx, f.c, f.l, k, f.store.owner, n, f.store.lease.Milliseconds(), f.rnd.Float64(),
			rate, burst, scanLimit).Slice()
		if err != nil {
			return nil, err
		}
		f.noteAvailable()
		r, err := parsePop(v)
		if err != nil {
			return nil, err
		}
		local := f.noteOffset(r.now, t0, f.clk.Now())
		f.setCounts(k, r.counts)
		if len(r.stale) > 0 && attempt < 3 {
			for _, s := range r.stale {
				if err := f.gates.RefreshScope(ctx, s); err != nil {
					return nil, fmt.Errorf("refreshing the gate of scope %q: %w", s, err)
				}
			}
			if len(r.jobs) == 0 {
				continue
			}
		}
		f.setHint(k, gen, now, r)
		var out []*pqueue.Popped
		for _, m := range r.jobs {
			p, err := f.popped(m, local, msTime(r.now))
			if err != nil {
				return out, err
			}
			if p != nil {
				out = append(out, p)
			}
		}
		return out, nil
	}
}

// startRate returns each shard's share of MAX_STARTS_PER_SECOND and
// MAX_STARTS_BURST (at least one token).
func (f *Frontier) startRate() (rate, burst float64) {
	if f.o.StartRate <= 0 {
		return 0, 0
	}
	n := float64(f.l.shards)
	return f.o.StartRate / n, max(1, float64(max(f.o.StartBurst, 1))/n)
}

// setHint records when shard k is worth asking again after a pop reply;
// a wake-up that arrived meanwhile (gen changed) wins.
func (f *Frontier) setHint(k int, gen uint64, now time.Time, r popReply) {
	var at time.Time
	switch {
	case len(r.jobs) > 0 || r.readyLeft > 0 || len(r.stale) > 0:
		// more may be ready now
	case r.tokenWait > 0:
		at = now.Add(msDuration(r.tokenWait))
	default:
		at = now.Add(f.o.PollInterval)
		for _, ms := range []float64{r.nextTimed, r.nextDue, r.nextLease} {
			if ms > 0 {
				if t := f.local(ms); t.Before(at) {
					at = t
				}
			}
		}
	}
	f.mu.Lock()
	if f.gens[k] == gen || at.IsZero() {
		f.hints[k] = at
	}
	if f.o.PopInterval > 0 && r.readyLeft == 0 && len(r.stale) == 0 && r.tokenWait == 0 {
		// Everything ready was taken: what becomes ready from now on
		// waits for the next pop, at least PopInterval (drawn between 0.5
		// and 1.5 times it) from now, wake-ups included.
		f.nextPop[k] = now.Add(time.Duration((0.5 + f.rnd.Float64()) * float64(f.o.PopInterval)))
	}
	f.mu.Unlock()
}

// popped turns a reserved entry into a Popped, recorded as held; sentAt
// is its admission in the local clock, admitted in Redis's.
func (f *Frontier) popped(m string, sentAt, admitted time.Time) (*pqueue.Popped, error) {
	in, reqb, err := decodeMember(m)
	if err != nil {
		return nil, err
	}
	req, err := f.store.codec.Decode(reqb)
	if err != nil {
		// Not sendable: acknowledge it so that it does not come back
		// forever, and say so.
		f.log.Error().Err(err).Uint64("id", uint64(in.ID)).Msg("dropping a stored request that does not decode")
		f.leases.add(in.ID, sentAt, admitted, false)
		f.out.add(&op{kind: opAck, shard: shardOfID(in.ID), ack: ack{id: in.ID}})
		return nil, nil
	}
	// Its delay (if any) held it once, in the delayed set: mark it, so
	// that neither the engine nor a copy waits again.
	throttling.MarkRequestDelayTaken(req)
	at := f.leases.add(in.ID, sentAt, admitted, false)
	return &pqueue.Popped{ID: in.ID, Req: req, Scopes: in.Scopes, Admitted: true, SentAt: at}, nil
}

type popReply struct {
	now                           float64
	jobs, stale                   []string
	nextTimed, nextDue, nextLease float64
	readyLeft                     int64
	tokenWait                     float64
	woke                          int64
	counts                        Counts
}

func parsePop(v []any) (popReply, error) {
	var r popReply
	if len(v) < 10 {
		return r, fmt.Errorf("redisq: unexpected pop reply of %d elements", len(v))
	}
	r.now = atof(v[0])
	r.jobs = strs(v[1])
	r.stale = strs(v[2])
	r.nextTimed, r.nextDue = atof(v[3]), atof(v[4])
	r.readyLeft, _ = v[5].(int64)
	r.tokenWait = atof(v[6])
	r.woke, _ = v[7].(int64)
	if c, ok := v[8].([]any); ok {
		r.counts.add(c)
	}
	r.nextLease = atof(v[9])
	return r, nil
}

func atof(x any) float64 {
	switch v := x.(type) {
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	case int64:
		return float64(v)
	}
	return 0
}

func strs(x any) []string {
	arr, _ := x.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
