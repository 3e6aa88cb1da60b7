package redisq

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

// BloomFor returns the Bloom filter parameters for capacity fingerprints
// spread over shards shards at the given false-positive rate: per shard,
// m = -n ln p / (ln 2)^2 bits and k = (m/n) ln 2 hash functions, n being
// the shard's share of capacity. A false positive drops a request the
// crawl never saw as a duplicate; below capacity the rate stays at most
// errorRate. At 100 M fingerprints and 0.001 that is 1.44e9 bits (172 MiB,
// 1.8 bytes per fingerprint) and 10 hash functions, against about 60 bytes
// per fingerprint in a set.
func BloomFor(capacity int64, errorRate float64, shards int) (Dedupe, error) {
	if capacity <= 0 {
		return Dedupe{}, fmt.Errorf("Bloom filter capacity %d: must be positive", capacity)
	}
	if errorRate <= 0 || errorRate >= 1 {
		return Dedupe{}, fmt.Errorf("Bloom filter error rate %v: must be between 0 and 1", errorRate)
	}
	n := math.Ceil(float64(capacity) / float64(shards))
	m := math.Ceil(-n * math.Log(errorRate) / (math.Ln2 * math.Ln2))
	if m > 1<<32 {
		return Dedupe{}, fmt.Errorf("Bloom filter of %.0f bits per shard: Redis strings hold at most 2^32 bits; use more shards or a larger error rate", m)
	}
	k := max(1, int(math.Round(m/n*math.Ln2)))
	return Dedupe{Bloom: true, Bits: uint64(m), Hashes: k}, nil
}

// BloomRate returns the expected false-positive rate of a Bloom filter of
// bits bits and hashes hash functions holding n fingerprints:
// (1 - e^(-kn/m))^k.
func BloomRate(bits uint64, hashes int, n int64) float64 {
	k := float64(hashes)
	return math.Pow(1-math.Exp(-k*float64(n)/float64(bits)), k)
}

// Set is a dupefilter.Set kept in Redis: the 16-byte fingerprints in a
// set per shard (a Redis set of fingerprints), or a Bloom filter per shard
// (Dedupe.Bloom) for very large crawls. A fingerprint's shard is chosen by
// its first bytes. The frontier records the fingerprints of the requests
// it stores in the same structures, but in the shard of the request's
// scopes; with one shard, Set and the frontier share one set.
type Set struct {
	c  redis.UniversalClient
	l  *Layout
	dd Dedupe
}

var (
	_ dupefilter.Set       = (*Set)(nil)
	_ dupefilter.Forgetter = (*Set)(nil)
)

// NewSet returns the fingerprint set of a job.
func NewSet(c redis.UniversalClient, l *Layout, d Dedupe) *Set { return &Set{c: c, l: l, dd: d} }

func (s *Set) shard(fp dupefilter.Fingerprint) int {
	return int(binary.BigEndian.Uint32(fp[12:]) % uint32(s.l.shards))
}

// Add implements dupefilter.Set: one script call.
func (s *Set) Add(ctx context.Context, fp dupefilter.Fingerprint) (bool, error) {
	mode, bits, hashes := s.dd.args()
	n, err := scriptSeen.run(ctx, s.c, s.l, s.shard(fp), mode, bits, hashes, string(fp[:])).Int()
	return n == 1, err
}

// AddAll records many fingerprints in one pipelined round trip (per
// node): for bulk loading, when which were seen does not matter.
func (s *Set) AddAll(ctx context.Context, fps []dupefilter.Fingerprint) error {
	mode, bits, hashes := s.dd.args()
	calls := make([]*call, len(fps))
	for i, fp := range fps {
		calls[i] = &call{s: scriptSeen, k: s.shard(fp), args: []any{mode, bits, hashes, string(fp[:])}}
	}
	return runCalls(ctx, s.c, s.l, calls)
}

// Forget implements dupefilter.Forgetter. A Bloom filter cannot forget:
// the fingerprint stays.
func (s *Set) Forget(ctx context.Context, fp dupefilter.Fingerprint) error {
	if s.dd.Bloom {
		return nil
	}
	return scriptForget.run(ctx, s.c, s.l, s.shard(fp), string(fp[:])).Err()
}

// Len implements dupefilter.Set: the fingerprints recorded in every shard
// (for a Bloom filter, those added as new). 0 when Redis does not answer.
func (s *Set) Len() int {
	n, _ := s.Count(context.Background())
	return int(n)
}

// Count is Len with the error.
func (s *Set) Count(ctx context.Context) (int64, error) {
	var total int64
	for k := range s.l.shards {
		var n int64
		var err error
		if s.dd.Bloom {
			n, err = s.c.Get(ctx, s.l.ShardKey(k, "bloomn")).Int64()
			if err == redis.Nil {
				err = nil
			}
		} else {
			n, err = s.c.SCard(ctx, s.l.ShardKey(k, "seen")).Result()
		}
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Close implements dupefilter.Set; the fingerprints stay in Redis.
func (s *Set) Close(ctx context.Context) error { return nil }
