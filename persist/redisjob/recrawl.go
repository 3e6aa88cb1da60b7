package redisjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/spider"
)

// The recrawl keys (hash tag {JOB}, next to the job's other keys):
//
//	PREFIX:{JOB}:recrawl  hash: request fingerprint (hex) -> record (JSON)
//	PREFIX:{JOB}:round    the recrawl round (JSON)
//
// Every worker reads and writes the same records, so a page revisited by
// one worker is not revisited by another: the round's known URLs are
// enqueued once, by the job's seeder.

// RecrawlStore returns the job's recrawl records (an engine.Recrawler).
func (j *Job) RecrawlStore(c *spider.Crawler) (recrawl.Store, pqueue.Codec, error) {
	return j.recrawlStore(), reqcodec.Codec{Spider: c.Spider}, nil
}

func (j *Job) recrawlStore() *recrawlStore {
	return &recrawlStore{c: j.c, q: &coalescer{c: j.c}, recs: j.l.JobKey("recrawl"), round: j.l.JobKey("round"), seed: j.l.JobKey("seed")}
}

// beginRecrawl begins the job's next round when RECRAWL_ENABLED asks for
// it and the last round is done. Beginning a round clears the job's
// seeding mark, so the workers elect one seeder that enqueues the known
// URLs once. Called when the worker joins, before its first heartbeat.
func (j *Job) beginRecrawl(ctx context.Context) error {
	if !j.set.Bool("RECRAWL_ENABLED") {
		return nil
	}
	st := j.recrawlStore()
	cur, known, err := st.Round(ctx)
	if err != nil {
		return err
	}
	r, begun, err := st.BeginRound(ctx, !known && cur.Legacy)
	if err != nil {
		return err
	}
	if begun {
		j.log.Info().Int("round", r.N).Msg("recrawl: this worker began the job's next round")
	}
	return nil
}

// recrawlStore is a recrawl.Store in the job's Redis. Get and Put, called
// for every page, go through q: the calls of concurrent pages share round
// trips.
type recrawlStore struct {
	c                 redis.UniversalClient
	q                 *coalescer
	recs, round, seed string
}

func (s *recrawlStore) Get(ctx context.Context, key string) (recrawl.Record, bool, error) {
	cmd, err := s.q.do(ctx, func(p redis.Pipeliner) redis.Cmder { return p.HGet(ctx, s.recs, key) })
	if err != nil {
		return recrawl.Record{}, false, err
	}
	b, err := cmd.(*redis.StringCmd).Bytes()
	if errors.Is(err, redis.Nil) {
		return recrawl.Record{}, false, nil
	}
	if err != nil {
		return recrawl.Record{}, false, err
	}
	r, err := recrawl.UnmarshalRecord(b)
	if err != nil {
		return recrawl.Record{}, false, fmt.Errorf("recrawl record %s: %w", key, err)
	}
	return r, true, nil
}

func (s *recrawlStore) Put(ctx context.Context, key string, r recrawl.Record) error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	cmd, err := s.q.do(ctx, func(p redis.Pipeliner) redis.Cmder { return p.HSet(ctx, s.recs, key, b) })
	if err != nil {
		return err
	}
	return cmd.Err()
}

func (s *recrawlStore) Each(ctx context.Context, fn func(string, recrawl.Record) error) error {
	var cursor uint64
	for {
		kv, next, err := s.c.HScan(ctx, s.recs, cursor, "", 512).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			r, err := recrawl.UnmarshalRecord([]byte(kv[i+1]))
			if err != nil {
				return fmt.Errorf("recrawl record %s: %w", kv[i], err)
			}
			if err := fn(kv[i], r); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func (s *recrawlStore) Round(ctx context.Context) (recrawl.Round, bool, error) {
	b, err := s.c.Get(ctx, s.round).Bytes()
	if errors.Is(err, redis.Nil) {
		// No round: a new job, or one a gocrawl without recrawl records
		// crawled (its seeding is done).
		seed, err := s.c.Get(ctx, s.seed).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return recrawl.Round{}, false, err
		}
		return recrawl.Round{Legacy: seed == "done"}, false, nil
	}
	if err != nil {
		return recrawl.Round{}, false, err
	}
	var r recrawl.Round
	if err := json.Unmarshal(b, &r); err != nil {
		return recrawl.Round{}, false, fmt.Errorf("%w: %s: %v", recrawl.ErrCorrupt, s.round, err)
	}
	return r, true, nil
}

// BeginRound begins the next round in a transaction on the round key: of
// workers racing, one begins it, the others see it under way. A round
// after the first clears the seeding mark (PREFIX:{JOB}:seed) so that
// the job is seeded again.
func (s *recrawlStore) BeginRound(ctx context.Context, legacy bool) (recrawl.Round, bool, error) {
	var out recrawl.Round
	var begun bool
	err := s.c.Watch(ctx, func(tx *redis.Tx) error {
		cur, known, err := s.Round(ctx)
		if err != nil {
			return err
		}
		next, ok := recrawl.NextRound(cur, known, legacy)
		out, begun = next, ok
		if !ok {
			return nil
		}
		b, _ := json.Marshal(next)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, s.round, b, 0)
			if next.N > 0 {
				p.Del(ctx, s.seed)
			}
			return nil
		})
		return err
	}, s.round)
	if errors.Is(err, redis.TxFailedErr) {
		// Another worker began it first.
		r, _, err := s.Round(ctx)
		return r, false, err
	}
	return out, begun, err
}

func (s *recrawlStore) SaveRound(ctx context.Context, r recrawl.Round) error {
	err := s.c.Watch(ctx, func(tx *redis.Tx) error {
		cur, known, err := s.Round(ctx)
		if err != nil || !known || cur.N != r.N {
			return err
		}
		b, _ := json.Marshal(r)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, s.round, b, 0)
			return nil
		})
		return err
	}, s.round)
	if errors.Is(err, redis.TxFailedErr) {
		return nil // the round moved on
	}
	return err
}
