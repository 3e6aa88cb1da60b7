package redisq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file is how the frontier lives with Redis: noticing it is gone and
// back (REDIS_UNAVAILABLE_TIMEOUT), renewing the leases of what this
// worker holds, and listening to the shards' wake-up channels.

// Err returns the error that stopped the frontier: Redis unreachable for
// longer than UnavailableTimeout, or a failed script.
func (f *Frontier) Err() error {
	f.unavailMu.Lock()
	defer f.unavailMu.Unlock()
	return f.fatal
}

// Fail stops the frontier with err: Pop returns it from now on (the crawl
// stops, exit status 1). The job uses it when its state vanished.
func (f *Frontier) Fail(err error) { f.setFatal(err) }

func (f *Frontier) setFatal(err error) {
	f.unavailMu.Lock()
	if f.fatal == nil {
		f.fatal = err
	}
	f.unavailMu.Unlock()
}

// noteUnavailable records that Redis did not answer; after
// UnavailableTimeout without an answer the frontier fails.
func (f *Frontier) noteUnavailable(err error) {
	now := f.clk.Now()
	f.unavailMu.Lock()
	defer f.unavailMu.Unlock()
	if f.unavail.IsZero() {
		f.unavail = now
		f.unavailN = 0
		f.log.Warn().Err(err).Str("redis", f.addr()).Dur("timeout", f.o.UnavailableTimeout).
			Msg("Redis unavailable: no new requests start; retrying with backoff")
	}
	f.unavailN++
	if d := now.Sub(f.unavail); d >= f.o.UnavailableTimeout && f.fatal == nil {
		f.fatal = fmt.Errorf("%w at %s for %s (REDIS_UNAVAILABLE_TIMEOUT): %v; requests in flight stay leased and come back to the other workers",
			ErrUnreachable, f.addr(), d.Round(time.Second), err)
	} else if f.unavailN%20 == 0 {
		f.log.Warn().Err(err).Str("redis", f.addr()).Dur("for", d.Round(time.Millisecond)).Msg("Redis still unavailable; retrying")
	}
}

func (f *Frontier) noteAvailable() {
	f.unavailMu.Lock()
	defer f.unavailMu.Unlock()
	if !f.unavail.IsZero() && f.fatal == nil {
		f.log.Warn().Str("redis", f.addr()).Dur("after", f.clk.Now().Sub(f.unavail).Round(time.Millisecond)).Msg("Redis is back; resuming")
		f.unavail = time.Time{}
	}
}

func (f *Frontier) addr() string {
	switch c := f.c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return "?"
}

// renewLoop renews the leases of the held reservations every third of
// the lease TTL.
func (f *Frontier) renewLoop(ctx context.Context) {
	every := f.store.lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lost, err := f.renew(ctx)
		if err != nil {
			if isUnavailable(err) {
				f.noteUnavailable(err)
			}
			continue
		}
		if len(lost) > 0 {
			f.log.Warn().Int("count", len(lost)).
				Msg("leases lost (Redis was unreachable for longer than the lease TTL?): other workers took the requests back and may fetch them again")
		}
	}
}

// subscribe subscribes to the wake-up channels of the shards (a script
// that frees slots wanted by parked requests publishes on its shard's
// channel) and returns once Redis has confirmed every channel: a wake-up
// published after Open returns is never missed. Without the confirmation
// a slot freed in the first milliseconds would only be noticed at the next
// PollInterval. A Redis that accepts the connection but never confirms
// makes it fail after UnavailableTimeout (go-redis sets no read deadline
// of its own on a subscription).
func (f *Frontier) subscribe(ctx context.Context) (*redis.PubSub, []string, error) {
	chans := make([]string, f.l.shards)
	for k := range chans {
		chans[k] = f.l.ShardKey(k, "wake")
	}
	ps := f.c.Subscribe(ctx, chans...)
	for confirmed := 0; confirmed < len(chans); {
		msg, err := ps.ReceiveTimeout(ctx, f.o.UnavailableTimeout)
		if err != nil {
			ps.Close()
			return nil, nil, fmt.Errorf("redisq: subscribing to the wake-up channels: %w", err)
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				confirmed++
			}
		case *redis.Message: // a wake-up right after a confirmation
			f.wakeChannel(chans, m.Channel)
		}
	}
	return ps, chans, nil
}

// listen turns the messages of the wake-up channels into wake-ups until ctx
// ends.
func (f *Frontier) listen(ctx context.Context, ps *redis.PubSub, chans []string) {
	defer ps.Close()
	ch := ps.Channel(redis.WithChannelHealthCheckInterval(5 * time.Second))
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			f.wakeChannel(chans, m.Channel)
		}
	}
}

func (f *Frontier) wakeChannel(chans []string, name string) {
	for k, c := range chans {
		if c == name {
			f.wakeShard(k)
		}
	}
}
