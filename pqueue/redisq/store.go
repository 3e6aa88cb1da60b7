package redisq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// DefaultLeaseTTL is how long a reservation lasts without being renewed.
const DefaultLeaseTTL = 30 * time.Second

// Options configure a Store.
type Options struct {
	// Client is the connection (Dial); the caller closes it.
	Client redis.UniversalClient
	// Layout names the job's keys. Required.
	Layout *Layout
	// Codec encodes requests (reqcodec.Codec). Required.
	Codec pqueue.Codec
	// Owner identifies this process in reservations (the worker ID): a
	// store opened again with the same owner gets the reservations it
	// left unacknowledged back at once; other owners' come back when their
	// leases expire. Required.
	Owner string
	// LeaseTTL is how long a reservation lasts without renewal
	// (DefaultLeaseTTL when 0).
	LeaseTTL time.Duration
	// Dedupe is how the frontier records fingerprints (a set by default).
	Dedupe Dedupe
}

// Store is a pqueue.Store kept in Redis, shared by every process that
// opens the same job: sub-queues are sorted sets, the delayed set another,
// and a reservation is a lease (Options.LeaseTTL) that any process puts
// back once it expires. See the package documentation for the key layout.
//
// The Store is storage only, like every pqueue.Store; the Frontier adds
// the throttling-aware selection, atomic across workers, on the same keys.
type Store struct {
	c      redis.UniversalClient
	l      *Layout
	codec  pqueue.Codec
	owner  string
	lease  time.Duration
	dedupe Dedupe
}

var _ pqueue.Store = (*Store)(nil)

// NewStore returns a store; call Open before use.
func NewStore(o Options) (*Store, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("redisq: Options.Client is required")
	case o.Layout == nil:
		return nil, errors.New("redisq: Options.Layout is required")
	case o.Codec == nil:
		return nil, errors.New("redisq: Options.Codec is required")
	case o.Owner == "" || len(o.Owner) > 255:
		return nil, fmt.Errorf("redisq: Options.Owner must have 1 to 255 bytes, got %q", o.Owner)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	return &Store{c: o.Client, l: o.Layout, codec: o.Codec, owner: o.Owner, lease: o.LeaseTTL, dedupe: o.Dedupe}, nil
}

// Layout returns the store's key layout.
func (s *Store) Layout() *Layout { return s.l }

// Client returns the store's connection.
func (s *Store) Client() redis.UniversalClient { return s.c }

// Owner returns the store's owner (worker ID).
func (s *Store) Owner() string { return s.owner }

// Open implements pqueue.Store: the reservations this owner left
// unacknowledged (a crash, a Close without Ack) go back into their
// sub-queues with their IDs.
func (s *Store) Open(ctx context.Context) error {
	for k := range s.l.shards {
		if err := scriptReclaim.run(ctx, s.c, s.l, k, s.owner).Err(); err != nil {
			return fmt.Errorf("redisq: reclaiming %s's reservations: %w", s.owner, err)
		}
	}
	return nil
}

// Push implements pqueue.Store.
func (s *Store) Push(ctx context.Context, e *pqueue.Entry) error {
	req, err := s.codec.Encode(e.Req)
	if err != nil {
		return err
	}
	body, err := encodeBody(nil, e.Queue, e.Priority, e.Scopes, req)
	if err != nil {
		return err
	}
	nb := ""
	if !e.NotBefore.IsZero() {
		nb = "@" + msString(e.NotBefore)
	}
	k := s.l.shardOfQueue(e.Queue)
	r, err := s.apply(ctx, k, batch{pushes: []push{{notBefore: nb, body: body}}})
	if err != nil {
		return err
	}
	e.ID = r.ids[0]
	return nil
}

// Head implements pqueue.Store.
func (s *Store) Head(ctx context.Context, queue string) (pqueue.Info, bool, error) {
	k := s.l.shardOfQueue(queue)
	v, err := s.c.ZRange(ctx, s.l.ShardKey(k, "q:"+queue), 0, 0).Result()
	if err != nil || len(v) == 0 {
		return pqueue.Info{}, false, err
	}
	in, _, err := decodeMember(v[0])
	return in, err == nil, err
}

// Reserve implements pqueue.Store.
func (s *Store) Reserve(ctx context.Context, queue string) (pqueue.Entry, error) {
	k := s.l.shardOfQueue(queue)
	v, err := scriptReserve.run(ctx, s.c, s.l, k, queue, s.owner, s.lease.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return pqueue.Entry{}, fmt.Errorf("reserve from %q: %w", queue, pqueue.ErrEmpty)
	}
	if err != nil {
		return pqueue.Entry{}, err
	}
	return s.entry(v)
}

// entry decodes a stored member with its request.
func (s *Store) entry(m string) (pqueue.Entry, error) {
	in, reqb, err := decodeMember(m)
	if err != nil {
		return pqueue.Entry{}, err
	}
	req, err := s.codec.Decode(reqb)
	if err != nil {
		return pqueue.Entry{}, fmt.Errorf("redisq: entry %d: %w", in.ID, err)
	}
	return pqueue.Entry{Info: in, Req: req}, nil
}

// Ack implements pqueue.Store.
func (s *Store) Ack(ctx context.Context, id pqueue.ID) error {
	if shardOfID(id) >= s.l.shards {
		return fmt.Errorf("ack %d: %w", id, pqueue.ErrUnknownID)
	}
	r, err := s.apply(ctx, shardOfID(id), batch{acks: []ack{{id: id}}})
	if err != nil {
		return err
	}
	if r.unknown > 0 {
		return fmt.Errorf("ack %d: %w", id, pqueue.ErrUnknownID)
	}
	return nil
}

// Nack implements pqueue.Store.
func (s *Store) Nack(ctx context.Context, id pqueue.ID) error {
	if shardOfID(id) >= s.l.shards {
		return fmt.Errorf("nack %d: %w", id, pqueue.ErrUnknownID)
	}
	r, err := s.apply(ctx, shardOfID(id), batch{nacks: []pqueue.ID{id}})
	if err != nil {
		return err
	}
	if r.unknown > 0 {
		return fmt.Errorf("nack %d: %w", id, pqueue.ErrUnknownID)
	}
	return nil
}

// NextDue implements pqueue.Store.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var best float64
	found := false
	for k := range s.l.shards {
		v, err := s.c.ZRangeWithScores(ctx, s.l.ShardKey(k, "d"), 0, 0).Result()
		if err != nil {
			return time.Time{}, false, err
		}
		if len(v) > 0 && (!found || v[0].Score < best) {
			best, found = v[0].Score, true
		}
	}
	if !found {
		return time.Time{}, false, nil
	}
	return msTime(best), true, nil
}

// PromoteDue implements pqueue.Store.
func (s *Store) PromoteDue(ctx context.Context, now time.Time) ([]pqueue.Info, error) {
	type due struct {
		at float64
		in pqueue.Info
	}
	var all []due
	for k := range s.l.shards {
		v, err := scriptPromote.run(ctx, s.c, s.l, k, msString(now)).StringSlice()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(v); i += 2 {
			in, _, err := decodeMember(v[i])
			if err != nil {
				return nil, err
			}
			at, _ := strconv.ParseFloat(v[i+1], 64)
			all = append(all, due{at, in})
		}
	}
	slices.SortStableFunc(all, func(a, b due) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return int(a.in.ID) - int(b.in.ID)
	})
	out := make([]pqueue.Info, len(all))
	for i, d := range all {
		out[i] = d.in
	}
	return out, nil
}

// Queues implements pqueue.Store.
func (s *Store) Queues(ctx context.Context, fn func(queue string) error) error {
	for k := range s.l.shards {
		var cursor uint64
		for {
			keys, next, err := s.c.HScan(ctx, s.l.ShardKey(k, "gl"), cursor, "", 1000).Result()
			if err != nil {
				return err
			}
			for i := 0; i < len(keys); i += 2 {
				if err := fn(keys[i]); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// Len implements pqueue.Store with one round trip per shard: entries
// waiting in sub-queues or delayed. It returns 0 when Redis does not
// answer.
func (s *Store) Len() int {
	c, err := s.Counts(context.Background())
	if err != nil {
		return 0
	}
	return int(c.Waiting + c.Delayed)
}

// Counts are what a job's frontier holds, summed over its shards.
type Counts struct {
	Waiting  int64 // in sub-queues
	Delayed  int64 // in the delayed set (throttling_delay)
	Reserved int64 // leased to workers (being crawled)
	Stored   int64 // entries ever stored (grows with every push)
}

// Empty reports whether nothing is waiting, delayed or reserved.
func (c Counts) Empty() bool { return c.Waiting == 0 && c.Delayed == 0 && c.Reserved == 0 }

func (c *Counts) add(v []any) {
	n := func(i int) int64 {
		if i < len(v) {
			if x, ok := v[i].(int64); ok {
				return x
			}
		}
		return 0
	}
	c.Waiting += n(0)
	c.Delayed += n(1)
	c.Reserved += n(2)
	c.Stored += n(3)
}

// Counts returns the frontier's counts, one pipelined round trip over the
// shards.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	per, err := s.ShardCounts(ctx)
	var c Counts
	for _, p := range per {
		c.Waiting += p.Waiting
		c.Delayed += p.Delayed
		c.Reserved += p.Reserved
		c.Stored += p.Stored
	}
	return c, err
}

// ShardCounts returns the counts of each shard.
func (s *Store) ShardCounts(ctx context.Context) ([]Counts, error) {
	calls := make([]*call, s.l.shards)
	for k := range calls {
		calls[k] = &call{s: scriptCounts, k: k}
	}
	if err := runCalls(ctx, s.c, s.l, calls); err != nil {
		return nil, err
	}
	out := make([]Counts, s.l.shards)
	for k, cl := range calls {
		v, err := cl.cmd.Slice()
		if err != nil {
			return nil, err
		}
		out[k].add(v)
	}
	return out, nil
}

// Close implements pqueue.Store. Every entry not acknowledged stays in
// Redis; reservations come back when their leases expire, or at once when
// a store with the same owner is opened.
func (s *Store) Close(ctx context.Context) error { return nil }

// msString is t in Unix milliseconds with microseconds, as the scripts
// store times.
func msString(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMicro())/1000, 'f', 3, 64)
}

// msTime is the inverse of msString.
func msTime(ms float64) time.Time {
	return time.UnixMicro(int64(math.Round(ms * 1000)))
}

// msDuration converts milliseconds to a duration.
func msDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

// SetGate writes the parameters of scope's gate directly, without its
// policy (tests, tools). The throttler writes them through the scope's
// policy instead (Throttling.Update).
func (s *Store) SetGate(ctx context.Context, scope string, p throttling.GateParams) error {
	vals := strings.Split(encodeParams(p), ",")
	names := []string{"d", "jl", "jh", "c", "bu", "q", "w", "vu", "vo", "sl", "su"}
	args := make([]any, 0, 2*len(names))
	for i, n := range names {
		args = append(args, n, vals[i])
	}
	k := s.l.ShardOf(scope)
	return s.c.HSet(ctx, s.l.ShardKey(k, "s:"+scope), args...).Err()
}

// Gate returns the parameters and state of scope's gate, and whether it
// exists.
func (s *Store) Gate(ctx context.Context, scope string) (throttling.Gate, bool, error) {
	v, err := s.c.HGetAll(ctx, s.l.ShardKey(s.l.ShardOf(scope), "s:"+scope)).Result()
	if err != nil || len(v) == 0 {
		return throttling.Gate{}, false, err
	}
	return throttling.Gate{Params: decodeParams(v), State: decodeState(v)}, true, nil
}
