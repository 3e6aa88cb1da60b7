package redisq_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"testing"

	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

func fp(i int) dupefilter.Fingerprint {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := sha256.Sum256(b[:])
	var f dupefilter.Fingerprint
	copy(f[:], h[:])
	return f
}

func TestSet(t *testing.T) {
	bloom, err := redisq.BloomFor(2000, 0.01, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dd   redisq.Dedupe
	}{{"set", redisq.Dedupe{}}, {"bloom", bloom}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := redisq.NewSet(dial(t), layout(t, 2), tc.dd)
			const n = 2000
			falsePos := 0
			for i := range n {
				seen, err := s.Add(ctx, fp(i))
				if err != nil {
					t.Fatal(err)
				}
				if seen {
					falsePos++
				}
			}
			for i := range n {
				if seen, _ := s.Add(ctx, fp(i)); !seen {
					t.Fatalf("fingerprint %d added twice is not seen", i)
				}
			}
			if !tc.dd.Bloom {
				if falsePos != 0 || s.Len() != n {
					t.Fatalf("set: %d false positives, Len %d; want 0 and %d", falsePos, s.Len(), n)
				}
				if err := s.Forget(ctx, fp(7)); err != nil {
					t.Fatal(err)
				}
				if seen, _ := s.Add(ctx, fp(7)); seen {
					t.Fatal("a forgotten fingerprint is still seen")
				}
				return
			}
			// Filling to capacity, the running false-positive rate
			// stays below the final one (1%).
			if rate := float64(falsePos) / n; rate > 0.01 {
				t.Fatalf("Bloom filter: %.2f%% false positives while filling to capacity at 1%%", 100*rate)
			}
			if got := int(s.Len()) + falsePos; got != n {
				t.Fatalf("Bloom filter counted %d new + %d false positives, want %d", s.Len(), falsePos, n)
			}
		})
	}
}

func TestBloomFor(t *testing.T) {
	d, err := redisq.BloomFor(100_000_000, 0.001, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Hashes != 10 || math.Abs(float64(d.Bits)/1e8-14.38) > 0.01 {
		t.Fatalf("100M at 0.001: %d bits (%.2f per fingerprint), %d hashes; want 14.38 bits and 10 hashes", d.Bits, float64(d.Bits)/1e8, d.Hashes)
	}
	if r := redisq.BloomRate(d.Bits, d.Hashes, 100_000_000); math.Abs(r-0.001) > 0.0001 {
		t.Fatalf("rate at capacity %v, want 0.001", r)
	}
	if _, err := redisq.BloomFor(1e10, 0.001, 1); err == nil {
		t.Fatal("a Bloom filter above 2^32 bits per shard accepted")
	}
}
