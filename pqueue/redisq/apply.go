package redisq

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/pqueue"
)

// A batch is what one apply call tells one shard (see lua/apply.lua).
type batch struct {
	inits  []gateInit
	pushes []push
	acks   []ack
	nacks  []pqueue.ID
	stats  []statDelta
	wires  []wire // reservations whose request reached its connection
}

// wire marks the moment a reservation's request reached its connection
// (local clock; sent as its age when the call is built).
type wire struct {
	id pqueue.ID
	at time.Time
}

// gateInit creates the gate of a scope seen for the first time.
type gateInit struct {
	scope  string
	params string
}

// push stores one request.
type push struct {
	fp        string // 16-byte fingerprint, "" = not filtered
	notBefore string // "" none, "+ms" relative to Redis time, "@ms" absolute
	body      []byte
	done      func(id pqueue.ID) // called with the new ID, or 0 for a duplicate
}

// ack acknowledges (or releases, for an admission lease) a reservation.
type ack struct {
	id      pqueue.ID
	classes string  // outcome per scope (classLetters), "" for none
	latency float64 // ms
}

type statDelta struct {
	name  string
	delta float64
}

type applyResult struct {
	ids     []pqueue.ID // per push: the new ID, 0 for a duplicate
	unknown int         // acks and nacks of IDs not reserved (lease lost)
	woke    int
	ready   int // groups in the ready set after the call
	counts  Counts
}

// Dedupe is how the frontier records fingerprints.
type Dedupe struct {
	// Bloom, when true, records them in a Bloom filter per shard instead
	// of a set: Bits bits and Hashes hash functions (see BloomFor).
	Bloom  bool
	Bits   uint64
	Hashes int
}

func (d Dedupe) args() (string, uint64, int) {
	if d.Bloom {
		return "b", d.Bits, d.Hashes
	}
	return "s", 0, 0
}

// applyArgs returns the ARGV of an apply call for b on shard k.
func applyArgs(k int, d Dedupe, b *batch, now time.Time) []any {
	mode, bits, hashes := d.args()
	args := make([]any, 0, 10+2*len(b.wires)+2*len(b.inits)+3*len(b.pushes)+3*len(b.acks)+len(b.nacks)+2*len(b.stats))
	args = append(args, k, mode, bits, hashes, len(b.inits), len(b.pushes), len(b.acks), len(b.nacks), len(b.stats), len(b.wires))
	for _, w := range b.wires {
		args = append(args, idBytes(w.id), strconv.FormatFloat(max(0, float64(now.Sub(w.at))/float64(time.Millisecond)), 'f', 3, 64))
	}
	for _, in := range b.inits {
		args = append(args, in.scope, in.params)
	}
	for _, p := range b.pushes {
		args = append(args, p.fp, p.notBefore, p.body)
	}
	for _, a := range b.acks {
		args = append(args, idBytes(a.id), a.classes, strconv.FormatFloat(a.latency, 'f', 3, 64))
	}
	for _, id := range b.nacks {
		args = append(args, idBytes(id))
	}
	for _, s := range b.stats {
		args = append(args, s.name, strconv.FormatFloat(s.delta, 'g', -1, 64))
	}
	return args
}

// parseApply reads an apply reply.
func parseApply(v any) (applyResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 4 {
		return applyResult{}, fmt.Errorf("redisq: unexpected apply reply %T", v)
	}
	var r applyResult
	if ids, ok := arr[0].([]any); ok {
		r.ids = make([]pqueue.ID, len(ids))
		for i, x := range ids {
			if s, ok := x.(string); ok && len(s) == 8 {
				r.ids[i] = pqueue.ID(binary.BigEndian.Uint64([]byte(s)))
			}
		}
	}
	u, _ := arr[1].(int64)
	w, _ := arr[2].(int64)
	r.unknown, r.woke = int(u), int(w)
	if c, ok := arr[3].([]any); ok {
		r.counts.add(c)
	}
	if len(arr) > 4 {
		n, _ := arr[4].(int64)
		r.ready = int(n)
	}
	return r, nil
}

// apply runs one apply call on shard k.
func (s *Store) apply(ctx context.Context, k int, b batch) (applyResult, error) {
	v, err := scriptApply.run(ctx, s.c, s.l, k, applyArgs(k, s.dedupe, &b, time.Now())...).Result()
	if err != nil {
		return applyResult{}, err
	}
	return parseApply(v)
}

// isNoScript reports whether err says the server does not know a script
// (it restarted, or a new node took over the slot).
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// loadScripts loads every script on every master, so that pipelined
// EVALSHA calls (which cannot fall back to EVAL one by one) find them.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, n redis.Scripter) error {
		for _, s := range allScripts {
			if err := s.Load(ctx, n).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return load(ctx, n) })
	}
	return load(ctx, c)
}

// call is one script call of a pipeline.
type call struct {
	s    script
	k    int
	args []any
	cmd  *redis.Cmd
}

// runCalls runs calls in one pipeline (one round trip; on a cluster, one
// per node, in parallel). Calls that failed because a node did not know
// the script (it restarted, or took over the slot) are run once more after
// loading the scripts; the others are not repeated.
func runCalls(ctx context.Context, c redis.UniversalClient, l *Layout, calls []*call) error {
	pending := calls
	for attempt := 0; ; attempt++ {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, cl := range pending {
				cl.cmd = cl.s.evalsha(ctx, p, l, cl.k, cl.args...)
			}
			return nil
		})
		var retry []*call
		for _, cl := range pending {
			if isNoScript(cl.cmd.Err()) {
				retry = append(retry, cl)
			}
		}
		if len(retry) == 0 || attempt > 0 {
			return err
		}
		if lerr := loadScripts(ctx, c); lerr != nil {
			return lerr
		}
		pending = retry
	}
}

// evalsha queues script s on shard k in a pipeline. Pipelines use EVALSHA
// only (see pipeline for the fallback).
func (s script) evalsha(ctx context.Context, p redis.Pipeliner, l *Layout, k int, args ...any) *redis.Cmd {
	return p.EvalSha(ctx, s.Hash(), []string{l.routeKey(k)}, args...)
}
