package redisjob

import (
	"context"

	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/throttling"
)

// configGates gives every scope the parameters of its configuration
// (THROTTLING_SCOPES over the defaults): concurrency, delay, jitter and
// quota hold across workers.
type configGates struct {
	cfg *throttling.Config
	j   *Job
}

func newGates(s *settings.Settings, j *Job) (redisq.Gates, error) {
	cfg, err := throttling.ReadConfig(s)
	if err != nil {
		return nil, err
	}
	return &configGates{cfg: cfg, j: j}, nil
}

func (g *configGates) Initial(scope string) redisq.GateParams {
	c := g.cfg.Scope(scope)
	conc := c.Concurrency
	if c.Rampup.Enabled {
		conc = max(c.MinConcurrency, 1)
		if c.Concurrency > 0 {
			conc = min(conc, c.Concurrency)
		}
	}
	return redisq.GateParams{Delay: c.Delay, JitterLo: c.Jitter[0], JitterHi: c.Jitter[1], Concurrency: conc,
		Quota: c.Quota, Window: c.Window}
}

func (g *configGates) Refresh(ctx context.Context, scope string) error {
	f := g.j.front()
	if f == nil {
		return nil
	}
	return f.Store().SetGate(ctx, scope, g.Initial(scope))
}
