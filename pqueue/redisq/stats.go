package redisq

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Each worker keeps its own stats (the engine's collector); the frontier
// adds the changes of their counters to a hash per job in Redis about once
// a second (HINCRBYFLOAT in the next apply call, on shard 0), so that
// `gocrawl jobs inspect` shows the job's totals over every worker, the
// dead ones included up to their last flush.

// additive reports whether a stats key adds up over workers: counters do;
// times, rates, peaks and gauges do not.
func additive(key string) bool {
	switch key {
	case "start_time", "finish_time", "elapsed_time_seconds":
		return false
	}
	for _, s := range []string{"_per_second", "peak", "memusage", "/max_", "_max"} {
		if strings.Contains(key, s) {
			return false
		}
	}
	return true
}

// statsDue reports whether the counters were last added up more than
// every ago.
func (f *Frontier) statsDue(every time.Duration) bool {
	if f.o.Stats == nil {
		return false
	}
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	return f.clk.Now().Sub(f.statsAt) >= every
}

// statsDeltas returns the changes of the additive counters since the last
// call, and takes them as flushed.
func (f *Frontier) statsDeltas() []statDelta {
	if f.o.Stats == nil {
		return nil
	}
	snap := f.o.Stats.Snapshot()
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	if f.statsLast == nil {
		f.statsLast = map[string]float64{}
	}
	var out []statDelta
	for k, v := range snap {
		if !additive(k) {
			continue
		}
		if d := v - f.statsLast[k]; d != 0 {
			out = append(out, statDelta{name: k, delta: d})
			f.statsLast[k] = v
		}
	}
	f.statsAt = f.clk.Now()
	return out
}

// unflushStats takes back deltas whose apply call failed: they go with a
// later one.
func (f *Frontier) unflushStats(ds []statDelta) {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	for _, d := range ds {
		f.statsLast[d.name] -= d.delta
	}
}

// flushStats adds up the counters now, in an apply call of their own.
func (f *Frontier) flushStats(ctx context.Context) {
	ds := f.statsDeltas()
	if len(ds) == 0 {
		return
	}
	if _, err := f.store.apply(ctx, 0, batch{stats: ds}); err != nil {
		f.unflushStats(ds)
	}
}

// Stats returns the job's counters added up over its workers.
func (s *Store) Stats(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	for k := range s.l.shards {
		m, err := s.c.HGetAll(ctx, s.l.ShardKey(k, "stats")).Result()
		if err != nil {
			return nil, err
		}
		for name, v := range m {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				out[name] += x
			}
		}
	}
	return out, nil
}
