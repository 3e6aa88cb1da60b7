package redisjob

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/throttling"
)

// Report is what `gocrawl jobs inspect --redis URL JOB` shows of a job.
type Report struct {
	Job      string
	Meta     Metadata
	Seed     string // "done", "by WORKER" (seeding), or "" (not started)
	Counts   redisq.Counts
	Seen     int64 // fingerprints recorded (new ones, for a Bloom filter)
	Queues   []QueueCount
	NQueues  int // sub-queues in all
	Workers  []WorkerReport
	Scopes   []ScopeReport
	Totals   map[string]float64
	Reclaims int64 // requests put back after a worker's lease expired
}

// QueueCount is the number of requests queued for one set of scopes.
type QueueCount struct {
	Scopes string // scope names joined by " + "
	Queued int64
	Where  string // ready, waiting until TIME, waiting for a slot of SCOPE
}

// WorkerReport is one live worker.
type WorkerReport struct {
	ID       string
	Host     string
	PID      int
	Started  time.Time
	Expires  time.Time // heartbeat expiry (Redis clock)
	InFlight int64     // requests it holds
}

// ScopeReport is the throttling state of one scope.
type ScopeReport struct {
	Scope        string
	Delay        time.Duration
	Concurrency  int
	Active       int
	BlockedUntil time.Time
	Level        int           // backoff steps, from the scope's policy
	Pace         time.Duration // Retry-After pacing floor of the delay
	// Rate and RateEstimate are the rate controller's pace and its
	// estimate of the server's limit, in requests per second (zeros when
	// it does not pace the scope: THROTTLING_RATE_CONTROL).
	Rate, RateEstimate float64
	Policy             string // the policy's record (JSON), if any
}

// ErrNoJob is returned by Inspect and Delete for a job that does not
// exist.
var ErrNoJob = errors.New("no such job")

// ErrLiveWorkers is returned by Delete for a job whose workers are alive.
var ErrLiveWorkers = errors.New("the job has live workers")

// Inspect reads what a job holds: counts, the top queues (top <= 0: all),
// live workers and their requests in flight, the throttling state of the
// busiest scopes (backing off first), and the counters added up over every
// worker.
func Inspect(ctx context.Context, c redis.UniversalClient, prefix, job string, top int) (*Report, error) {
	l0, err := redisq.NewLayout(prefix, job, 1)
	if err != nil {
		return nil, err
	}
	mv, err := c.HGetAll(ctx, l0.JobKey("meta")).Result()
	if err != nil {
		return nil, err
	}
	if len(mv) == 0 {
		return nil, fmt.Errorf("%w %q under prefix %q", ErrNoJob, job, prefix)
	}
	r := &Report{Job: job, Meta: parseMeta(mv)}
	l, err := redisq.NewLayout(prefix, job, r.Meta.Shards)
	if err != nil {
		return nil, err
	}
	if s, err := c.Get(ctx, l.JobKey("seed")).Result(); err == nil {
		r.Seed = strings.Replace(s, "by:", "by ", 1)
	}
	store, err := redisq.NewStore(redisq.Options{Client: c, Layout: l, Codec: reqcodec.Codec{}, Owner: "inspect"})
	if err != nil {
		return nil, err
	}
	if r.Counts, err = store.Counts(ctx); err != nil {
		return nil, err
	}
	dd := redisq.Dedupe{Bloom: r.Meta.Dupefilter == "bloom", Bits: r.Meta.BloomBits, Hashes: r.Meta.BloomHashes}
	if r.Seen, err = redisq.NewSet(c, l, dd).Count(ctx); err != nil {
		return nil, err
	}
	if err := r.readQueues(ctx, c, l, top); err != nil {
		return nil, err
	}
	if err := r.readWorkers(ctx, c, l); err != nil {
		return nil, err
	}
	if err := r.readScopes(ctx, c, l, top); err != nil {
		return nil, err
	}
	if r.Totals, err = store.Stats(ctx); err != nil {
		return nil, err
	}
	for k := range l.Shards() {
		n, _ := c.HGet(ctx, l.ShardKey(k, "c"), "reclaimed").Int64()
		r.Reclaims += n
	}
	return r, nil
}

func (r *Report) readQueues(ctx context.Context, c redis.UniversalClient, l *redisq.Layout, top int) error {
	for k := range l.Shards() {
		locs, err := c.HGetAll(ctx, l.ShardKey(k, "gl")).Result()
		if err != nil {
			return err
		}
		names := make([]string, 0, len(locs))
		for g := range locs {
			names = append(names, g)
		}
		cmds := make([]*redis.IntCmd, len(names))
		timed := map[string]float64{}
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, g := range names {
				cmds[i] = p.ZCard(ctx, l.ShardKey(k, "q:"+g))
			}
			return nil
		}); err != nil {
			return err
		}
		if ts, err := c.ZRangeWithScores(ctx, l.ShardKey(k, "timed"), 0, -1).Result(); err == nil {
			for _, z := range ts {
				timed[z.Member.(string)] = z.Score
			}
		}
		for i, g := range names {
			where := "ready"
			switch loc := locs[g]; {
			case loc == "t":
				where = "waiting until " + msTime(timed[g]).Format("15:04:05.000")
			case strings.HasPrefix(loc, "p"):
				where = "waiting for a slot of " + loc[1:]
			}
			r.Queues = append(r.Queues, QueueCount{Scopes: strings.ReplaceAll(g, "\x00", " + "), Queued: cmds[i].Val(), Where: where})
		}
	}
	r.NQueues = len(r.Queues)
	slices.SortFunc(r.Queues, func(a, b QueueCount) int {
		return cmp.Or(cmp.Compare(b.Queued, a.Queued), strings.Compare(a.Scopes, b.Scopes))
	})
	if top > 0 && len(r.Queues) > top {
		r.Queues = r.Queues[:top]
	}
	return nil
}

func (r *Report) readWorkers(ctx context.Context, c redis.UniversalClient, l *redisq.Layout) error {
	live, err := c.ZRangeWithScores(ctx, l.JobKey("workers"), 0, -1).Result()
	if err != nil {
		return err
	}
	infos, err := c.HGetAll(ctx, l.JobKey("winfo")).Result()
	if err != nil {
		return err
	}
	inflight := map[string]int64{}
	for k := range l.Shards() {
		wc, err := c.HGetAll(ctx, l.ShardKey(k, "wc")).Result()
		if err != nil {
			return err
		}
		for w, n := range wc {
			x, _ := strconv.ParseInt(n, 10, 64)
			inflight[w] += x
		}
	}
	seen := map[string]bool{}
	for _, z := range live {
		id := z.Member.(string)
		seen[id] = true
		w := WorkerReport{ID: id, Expires: msTime(z.Score), InFlight: inflight[id]}
		var info workerInfo
		if json.Unmarshal([]byte(infos[id]), &info) == nil {
			w.Host, w.PID, w.Started = info.Host, info.PID, info.Started
		}
		r.Workers = append(r.Workers, w)
	}
	for id, n := range inflight { // requests held by workers whose heartbeat stopped
		if !seen[id] && n > 0 {
			r.Workers = append(r.Workers, WorkerReport{ID: id + " (no heartbeat: dead?)", InFlight: n})
		}
	}
	slices.SortFunc(r.Workers, func(a, b WorkerReport) int { return strings.Compare(a.ID, b.ID) })
	return nil
}

// readScopes reports the scopes backing off (by how long they are held
// back), then those of the largest queues.
func (r *Report) readScopes(ctx context.Context, c redis.UniversalClient, l *redisq.Layout, top int) error {
	if top <= 0 {
		top = 20
	}
	var names []string
	seen := map[string]bool{}
	for k := range l.Shards() {
		bo, err := c.ZRevRange(ctx, l.ShardKey(k, "backoff"), 0, int64(top-1)).Result()
		if err != nil {
			return err
		}
		for _, s := range bo {
			if !seen[s] {
				seen[s] = true
				names = append(names, s)
			}
		}
	}
	for _, q := range r.Queues {
		for _, s := range strings.Split(q.Scopes, " + ") {
			if !seen[s] && len(names) < 2*top {
				seen[s] = true
				names = append(names, s)
			}
		}
	}
	for _, s := range names {
		v, err := c.HGetAll(ctx, l.ShardKey(l.ShardOf(s), "s:"+s)).Result()
		if err != nil {
			return err
		}
		num := func(k string) float64 { x, _ := strconv.ParseFloat(v[k], 64); return x }
		sr := ScopeReport{Scope: s, Delay: time.Duration(num("d") * float64(time.Millisecond)), Concurrency: int(num("c")),
			Active: int(num("a")), Policy: v["p"]}
		if bu := num("bu"); bu > 0 {
			sr.BlockedUntil = msTime(bu)
		}
		sr.Level, sr.Pace, sr.Rate, sr.RateEstimate = policyLevel(v["p"])
		r.Scopes = append(r.Scopes, sr)
	}
	return nil
}

// policyLevel reads the backoff level, the pace and the rate controller's
// rate and estimate from a scope's policy record (throttling's shared
// record: {"policy": PolicyState, ...}).
func policyLevel(p string) (level int, pace time.Duration, rate, estimate float64) {
	var v struct {
		Policy throttling.PolicyState `json:"policy"`
	}
	_ = json.Unmarshal([]byte(p), &v)
	st := v.Policy
	if st.RateOn {
		rate, estimate = st.Rate, st.RateEstimate
	}
	return st.Level, st.Pace, rate, estimate
}

func msTime(ms float64) time.Time { return time.UnixMicro(int64(ms * 1000)) }

// Delete removes every key of a job (on every master of a cluster) and
// returns how many. It refuses while workers of the job are alive (their
// heartbeats have not expired), unless force.
func Delete(ctx context.Context, c redis.UniversalClient, prefix, job string, force bool) (int64, error) {
	l, err := redisq.NewLayout(prefix, job, 1)
	if err != nil {
		return 0, err
	}
	if !force {
		t, err := c.Time(ctx).Result()
		if err != nil {
			return 0, err
		}
		live, err := c.ZCount(ctx, l.JobKey("workers"), strconv.FormatInt(t.UnixMilli(), 10), "+inf").Result()
		if err != nil {
			return 0, err
		}
		if live > 0 {
			return 0, fmt.Errorf("%w: job %s has %d worker(s) whose heartbeat has not expired; stop them first, or use --force", ErrLiveWorkers, job, live)
		}
	}
	// The job name and prefix hold no glob characters (NewLayout), so
	// the patterns match only the job's keys; braces are literal in SCAN.
	var total atomic.Int64
	del := func(ctx context.Context, n *redis.Client) error {
		for _, pat := range l.Patterns() {
			iter := n.Scan(ctx, 0, pat, 1000).Iterator()
			var batch []string
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				for _, k := range batch { // one key per call: keys of a batch may be in different slots
					if err := n.Unlink(ctx, k).Err(); err != nil {
						return err
					}
				}
				total.Add(int64(len(batch)))
				batch = batch[:0]
				return nil
			}
			for iter.Next(ctx) {
				batch = append(batch, iter.Val())
				if len(batch) == 1000 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, del)
	} else if cl, ok := c.(*redis.Client); ok {
		err = del(ctx, cl)
	} else {
		err = fmt.Errorf("unsupported client %T", c)
	}
	if err == nil && total.Load() == 0 {
		return 0, fmt.Errorf("%w %q under prefix %q", ErrNoJob, job, prefix)
	}
	return total.Load(), err
}
