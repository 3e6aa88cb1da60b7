package simsite

import (
	"math/rand/v2"
	"sync"
	"time"
)

// latencySampler draws delays from a host's LatencyConfig with a seeded
// generator, so a host's sequence of delays is the same on every run.
type latencySampler struct {
	cfg LatencyConfig
	mu  sync.Mutex
	rng *rand.Rand
}

func newLatencySampler(cfg LatencyConfig, seed int64) *latencySampler {
	return &latencySampler{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(seed), 0x1a7e_4c7))}
}

// sample returns the next delay.
func (s *latencySampler) sample() time.Duration {
	c := s.cfg
	var d time.Duration
	switch c.Kind {
	case LatencyFixed:
		return c.Fixed
	case LatencyUniform:
		if c.Max == c.Min {
			return c.Min
		}
		s.mu.Lock()
		d = c.Min + time.Duration(s.rng.Int64N(int64(c.Max-c.Min)+1))
		s.mu.Unlock()
	case LatencyNormal:
		s.mu.Lock()
		d = c.Mean + time.Duration(s.rng.NormFloat64()*float64(c.StdDev))
		s.mu.Unlock()
		d = max(d, c.Min)
	case LatencyExponential:
		s.mu.Lock()
		d = c.Min + time.Duration(s.rng.ExpFloat64()*float64(c.Mean))
		s.mu.Unlock()
	default:
		return 0
	}
	if c.Max > 0 {
		d = min(d, c.Max)
	}
	return max(d, 0)
}
