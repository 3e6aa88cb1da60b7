package redisq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// The job's robots.txt answers (throttling.SharedRobots): one key per
// origin in the shard of the origin's name, written by the worker that
// fetched it, read by the others (lua/robots.lua). One round trip per
// origin and worker that has it not cached.

var _ throttling.SharedRobots = (*Throttling)(nil)

// RobotsTxt implements throttling.SharedRobots: the stored answer, or
// this worker's claim of the fetch (valid for the lease TTL).
func (t *Throttling) RobotsTxt(ctx context.Context, origin string) (int, []byte, bool, bool, error) {
	l := t.s.l
	v, err := scriptRobots.run(ctx, t.s.c, l, l.ShardOf(origin), "get", origin, t.s.owner, t.s.lease.Milliseconds()).Slice()
	if err != nil {
		return 0, nil, false, false, err
	}
	if len(v) == 0 {
		return 0, nil, false, false, fmt.Errorf("redisq: unexpected robots reply %v", v)
	}
	switch v[0] {
	case "hit":
		s, _ := v[1].(string)
		code, body, ok := strings.Cut(s, " ")
		status, err := strconv.Atoi(code)
		if !ok || err != nil {
			return 0, nil, false, false, fmt.Errorf("redisq: stored robots.txt answer of %s has no status", origin)
		}
		return status, []byte(body), true, false, nil
	case "claim":
		return 0, nil, false, true, nil
	}
	return 0, nil, false, false, nil
}

// StoreRobotsTxt implements throttling.SharedRobots.
func (t *Throttling) StoreRobotsTxt(ctx context.Context, origin string, status int, body []byte, ttl time.Duration) error {
	l := t.s.l
	answer := strconv.Itoa(status) + " " + string(body)
	return scriptRobots.run(ctx, t.s.c, l, l.ShardOf(origin), "put", origin, t.s.owner, max(ttl.Milliseconds(), 1), answer).Err()
}

// ReleaseRobotsTxt implements throttling.SharedRobots.
func (t *Throttling) ReleaseRobotsTxt(ctx context.Context, origin string) {
	l := t.s.l
	_ = scriptRobots.run(ctx, t.s.c, l, l.ShardOf(origin), "drop", origin, t.s.owner).Err()
}
