package redisq

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
)

// The outbox holds what this worker must tell Redis but need not wait
// for: requests to store (children, start requests), reservations to
// acknowledge, release or put back, new gates, stats. A flusher goroutine
// sends whatever accumulated in one apply call per shard (pipelined), as
// soon as the previous flush returned, so a busy worker batches many jobs
// per round trip. Ops are applied in order; in particular a job's children
// (enqueued by the engine before the job is acknowledged) are stored no
// later than the acknowledgement: in the same script call when they live
// in the job's shard, else in an earlier flush (the acknowledgement is
// held back one flush). If Redis does not answer, the flusher retries with
// backoff and keeps everything; what was not flushed when the worker dies
// is not lost: the jobs it would have acknowledged are still leased, come
// back when their leases expire, and produce their children again.

type opKind uint8

const (
	opPush opKind = iota
	opAck
	opNack
	opWire
)

type op struct {
	seq   uint64
	kind  opKind
	shard int
	inits []gateInit
	push  push
	ack   ack
	at    time.Time // opWire: when the request reached its connection (local clock)
}

type outbox struct {
	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64 // last seq handed out
	pending []*op  // not yet taken by a flush, in seq order
	carry   []*op  // taken by a flush but not applied (failed or held back)
	busy    bool   // a flush is running
	pushes  int    // pushes not yet applied
	signal  chan struct{}
	// hurry cuts the FlushInterval wait short (Flush, Close); urgent
	// stays set while someone waits for a flush.
	hurry  chan struct{}
	urgent atomic.Int32
}

func newOutbox() *outbox {
	o := &outbox{signal: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *outbox) add(x *op) {
	o.mu.Lock()
	o.seq++
	x.seq = o.seq
	o.pending = append(o.pending, x)
	if x.kind == opPush {
		o.pushes++
	}
	o.mu.Unlock()
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// maxFlush bounds the ops of one flush, so that one script call never
// holds Redis (and the other workers) for long: a bigger backlog goes in
// several flushes, in order.
const maxFlush = 2000

// take returns the ops of the next flush: what the last one carried over,
// then what accumulated since, in order, at most maxFlush.
func (o *outbox) take() []*op {
	o.mu.Lock()
	defer o.mu.Unlock()
	ops := append(o.carry, o.pending...)
	o.carry, o.pending = nil, nil
	if len(ops) > maxFlush {
		o.pending = ops[maxFlush:]
		ops = ops[:maxFlush:maxFlush]
	}
	o.busy = len(ops) > 0
	return ops
}

// finish records a flush: carry goes again in the next one.
func (o *outbox) finish(carry []*op, applied int) {
	o.mu.Lock()
	slices.SortFunc(carry, func(a, b *op) int { return cmp.Compare(a.seq, b.seq) })
	o.carry = carry
	o.busy = false
	o.pushes -= applied
	o.cond.Broadcast()
	o.mu.Unlock()
}

// empty reports whether nothing waits to be flushed.
func (o *outbox) empty() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)+len(o.carry) == 0 && !o.busy
}

// waitFlushed waits until every op added before the call is applied, or
// ctx ends.
func (o *outbox) waitFlushed(ctx context.Context) error {
	o.urgent.Add(1)
	defer o.urgent.Add(-1)
	select {
	case o.hurry <- struct{}{}:
	default:
	}
	o.mu.Lock()
	target := o.seq
	o.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		oldest := uint64(0)
		for _, x := range o.carry {
			if oldest == 0 || x.seq < oldest {
				oldest = x.seq
			}
		}
		if len(o.pending) > 0 && (oldest == 0 || o.pending[0].seq < oldest) {
			oldest = o.pending[0].seq
		}
		if (oldest == 0 || oldest > target) && !o.busy {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		o.cond.Wait()
	}
}

// flushLoop sends the outbox until ctx ends.
func (f *Frontier) flushLoop(ctx context.Context) {
	defer close(f.flushDone)
	backoff := 50 * time.Millisecond
	var last time.Time
	for {
		if iv := f.o.FlushInterval; iv > 0 && !last.IsZero() {
			// Let what comes within FlushInterval of the last flush go
			// with the next one (a Flush or Close does not wait).
			if wait := iv - time.Since(last); wait > 0 && f.out.urgent.Load() == 0 {
				select {
				case <-ctx.Done():
					return
				case <-f.out.hurry:
				case <-time.After(wait):
				}
			}
		}
		ops := f.out.take()
		if len(ops) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-f.out.signal:
				continue
			case <-time.After(time.Second):
				if f.statsDue(time.Second) {
					f.flushStats(ctx)
				}
				continue
			}
		}
		last = time.Now()
		carry, applied, err := f.flush(ctx, ops)
		f.out.finish(carry, applied)
		if err == nil {
			if f.Idle() {
				f.Poke() // this worker holds nothing now: the job may be finished
			}
			backoff = 50 * time.Millisecond
			if len(carry) > 0 || !f.out.empty() { // held back, or a backlog beyond maxFlush
				f.out.kick()
			}
			continue
		}
		if !isUnavailable(err) {
			f.setFatal(err)
			return
		}
		f.noteUnavailable(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (o *outbox) kick() {
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// flush applies ops: one apply call per shard, pipelined. It returns the
// ops to carry to the next flush (those of failed calls, and
// acknowledgements held back behind pushes to other shards) and how many
// pushes were applied.
func (f *Frontier) flush(ctx context.Context, ops []*op) ([]*op, int, error) {
	batches := map[int]*batch{}
	members := map[int][]*op{}
	var carry []*op
	pushedTo := map[int]bool{}
	for _, x := range ops {
		if x.kind != opPush && x.kind != opWire && f.l.shards > 1 && pushedElsewhere(pushedTo, x.shard) {
			carry = append(carry, x) // its children may be in those pushes: next flush
			continue
		}
		b := batches[x.shard]
		if b == nil {
			b = &batch{}
			batches[x.shard] = b
		}
		switch x.kind {
		case opPush:
			b.inits = append(b.inits, x.inits...)
			b.pushes = append(b.pushes, x.push)
			pushedTo[x.shard] = true
		case opAck:
			b.acks = append(b.acks, x.ack)
		case opNack:
			b.nacks = append(b.nacks, x.ack.id)
		case opWire:
			b.wires = append(b.wires, wire{id: x.ack.id, at: x.at})
		}
		members[x.shard] = append(members[x.shard], x)
	}
	if f.statsDue(time.Second) {
		b := batches[0]
		if b == nil {
			b = &batch{}
			batches[0] = b
		}
		b.stats = f.statsDeltas()
	}
	calls := make([]*call, 0, len(batches))
	shards := make([]int, 0, len(batches))
	for k, b := range batches {
		calls = append(calls, &call{s: scriptApply, k: k, args: applyArgs(k, f.store.dedupe, b, f.clk.Now())})
		shards = append(shards, k)
	}
	err := runCalls(ctx, f.c, f.l, calls)
	applied := 0
	for i, cl := range calls {
		k := shards[i]
		b := batches[k]
		v, cerr := cl.cmd.Result()
		if cerr != nil {
			carry = append(carry, members[k]...)
			if len(b.stats) > 0 {
				f.unflushStats(b.stats)
			}
			continue
		}
		r, perr := parseApply(v)
		if perr != nil {
			return carry, applied, perr
		}
		f.applied(k, b, r)
		applied += len(b.pushes)
	}
	if err == nil {
		f.noteAvailable()
	}
	return carry, applied, err
}

func pushedElsewhere(pushedTo map[int]bool, k int) bool {
	for s := range pushedTo {
		if s != k {
			return true
		}
	}
	return false
}

// applied takes in the result of shard k's apply call.
func (f *Frontier) applied(k int, b *batch, r applyResult) {
	for i, p := range b.pushes {
		if p.done != nil && i < len(r.ids) {
			p.done(r.ids[i])
		}
	}
	var ids []pqueue.ID
	for _, a := range b.acks {
		ids = append(ids, a.id)
	}
	ids = append(ids, b.nacks...)
	f.leases.remove(ids...)
	for _, in := range b.inits {
		f.markKnown(in.scope)
	}
	if r.unknown > 0 {
		f.log.Warn().Int("count", r.unknown).Int("shard", k).
			Msg("acknowledged requests whose lease had expired: another worker put them back and may fetch them again")
	}
	f.setCounts(k, r.counts)
	if r.woke > 0 || r.ready > 0 && len(b.pushes)+len(b.nacks) > 0 {
		// Groups parked on a freed slot were woken, or stored requests
		// may have made a group ready: worth a pop. Acknowledgements
		// alone make nothing ready that was not (a scope's slots matter
		// only to the groups parked on it).
		f.wakeShard(k)
	}
}
