package jobdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/spider"
)

// The recrawl records (package recrawl) live under PrefixRecrawl: one key
// per URL (PrefixRecrawl + "u/" + request fingerprint in hex) and the
// round (PrefixRecrawl + "round"). They are written like the queue
// (NoSync, synced by the job's syncer), so they survive a killed process
// as the queue does.
const (
	PrefixRecrawl = "r/"
	keyRound      = PrefixRecrawl + "round"
	keyRecordPref = PrefixRecrawl + "u/"
)

// RecrawlStore returns the job's recrawl records (an engine.Recrawler).
// A job created before records were kept, and not yet given a round, is
// reported as legacy by the store's Round. A job opened read-only has
// none (nil).
func (j *Job) RecrawlStore(c *spider.Crawler) (recrawl.Store, pqueue.Codec, error) {
	if j.ro {
		return nil, nil, nil // inspection: no records are written
	}
	return &recrawlStore{j: j}, reqcodec.Codec{Spider: c.Spider}, nil
}

// recrawlStore is a recrawl.Store on the job's database.
type recrawlStore struct{ j *Job }

func (s *recrawlStore) Get(_ context.Context, key string) (recrawl.Record, bool, error) {
	raw, closer, err := s.j.db.Get([]byte(keyRecordPref + key))
	if errors.Is(err, pebble.ErrNotFound) {
		return recrawl.Record{}, false, nil
	}
	if err != nil {
		return recrawl.Record{}, false, err
	}
	defer closer.Close()
	r, err := recrawl.UnmarshalRecord(raw)
	if err != nil {
		return recrawl.Record{}, false, fmt.Errorf("%w: JOBDIR %s: recrawl record %s: %w", ErrCorrupt, s.j.dir, key, err)
	}
	return r, true, nil
}

func (s *recrawlStore) Put(_ context.Context, key string, r recrawl.Record) error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	return s.j.write("saving a recrawl record", func() error { return s.j.db.Set([]byte(keyRecordPref+key), b, pebble.NoSync) })
}

func (s *recrawlStore) Each(_ context.Context, fn func(string, recrawl.Record) error) error {
	lo := []byte(keyRecordPref)
	it, err := s.j.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		key := string(it.Key()[len(lo):])
		r, err := recrawl.UnmarshalRecord(it.Value())
		if err != nil {
			return fmt.Errorf("%w: JOBDIR %s: recrawl record %s: %w", ErrCorrupt, s.j.dir, key, err)
		}
		if err := fn(key, r); err != nil {
			return err
		}
	}
	return it.Error()
}

func (s *recrawlStore) Round(context.Context) (recrawl.Round, bool, error) {
	var r recrawl.Round
	ok, err := s.j.getJSON(keyRound, &r)
	if err != nil || ok {
		return r, ok, err
	}
	// No round: a new job, or one a gocrawl without recrawl records wrote.
	return recrawl.Round{Legacy: s.j.Resumed() && s.hasFingerprints()}, false, nil
}

// hasFingerprints reports whether the job has seen a request.
func (s *recrawlStore) hasFingerprints() bool {
	lo := []byte(PrefixDupes)
	it, err := s.j.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return false
	}
	defer it.Close()
	return it.First()
}

func (s *recrawlStore) BeginRound(ctx context.Context, legacy bool) (recrawl.Round, bool, error) {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	cur, known, err := s.Round(ctx)
	if err != nil {
		return recrawl.Round{}, false, err
	}
	next, begun := recrawl.NextRound(cur, known, legacy)
	if !begun {
		return cur, false, nil
	}
	if err := s.putRound(next); err != nil {
		return recrawl.Round{}, false, err
	}
	return next, true, nil
}

func (s *recrawlStore) SaveRound(ctx context.Context, r recrawl.Round) error {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	cur, known, err := s.Round(ctx)
	if err != nil || !known || cur.N != r.N {
		return err
	}
	return s.putRound(r)
}

// putRound writes the round at once to disk: a round begun or ended is
// rare and must not be lost to a kill (a lost "done" would resume a
// finished round; a lost begin would begin it again).
func (s *recrawlStore) putRound(r recrawl.Round) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.j.write("saving the recrawl round", func() error { return s.j.db.Set([]byte(keyRound), b, pebble.Sync) })
}
