package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file wires recrawling (docs/recrawl.md): every response of a crawl
// with a job updates its URL's record (validators, fingerprint, change,
// schedule state); RECRAWL_ENABLED begins a new round that enqueues every
// known URL again with its validators; continuous mode (a recrawl policy)
// enqueues each visited URL again, held in the frontier until its due
// time.

// Recrawler is implemented by a Job or Shared that keeps recrawl records
// next to its queue (JOBDIR, REDIS_URL). A crawl with another job, or
// none, keeps no records unless it runs in continuous mode (then in
// memory).
type Recrawler interface {
	// RecrawlStore returns the job's records and the codec its queue
	// encodes requests with (records keep the request to enqueue again).
	RecrawlStore(c *spider.Crawler) (recrawl.Store, pqueue.Codec, error)
}

// MetaRevisit marks a request that revisits a known URL (a recrawl round,
// continuous mode): it is sent with its record's validators, and a 304
// answers it.
const MetaRevisit = "recrawl_revisit"

// recrawler is a crawl's recrawl state.
type recrawler struct {
	e       *Engine
	store   recrawl.Store
	codec   pqueue.Codec // nil: records keep no request (memory)
	mode    recrawl.FingerprintMode
	enabled bool // RECRAWL_ENABLED
	policy  recrawl.Policy
	budget  *recrawl.Budget
	round   recrawl.Round
	revisit bool // this run seeds the known URLs (a new round)
	track   recrawl.Tracker

	// due holds the due time of every revisit this process scheduled and
	// has not yet made (continuous mode), for the freshness stat.
	dueMu   sync.Mutex
	due     map[string]time.Time
	freshAt time.Time

	cNew, cChanged, cUnchanged, cGone, c304, cRevisits *stats.Counter
}

// newRecrawler reads the recrawl settings and opens the job's records; it
// returns nil when the crawl keeps none.
func newRecrawler(ctx context.Context, e *Engine) (*recrawler, error) {
	policy, err := recrawl.PolicyFromSettings(e.set)
	if err != nil {
		return nil, err
	}
	return newRecrawlerWith(ctx, e, policy)
}

// newRecrawlerWith is newRecrawler with the continuous mode's policy (nil:
// none).
func newRecrawlerWith(ctx context.Context, e *Engine, policy recrawl.Policy) (*recrawler, error) {
	s := e.set
	mode, err := recrawl.ParseFingerprintMode(s.String("RECRAWL_FINGERPRINT"))
	if err != nil {
		return nil, fmt.Errorf("RECRAWL_FINGERPRINT: %w", err)
	}
	budget, err := recrawl.BudgetFromSettings(s, e.clock)
	if err != nil {
		return nil, err
	}
	r := &recrawler{e: e, mode: mode, enabled: s.Bool("RECRAWL_ENABLED"), policy: policy, budget: budget}
	var src any = e.job
	if e.shared != nil {
		src = e.shared
	}
	if rc, ok := src.(Recrawler); ok && src != nil {
		if r.store, r.codec, err = rc.RecrawlStore(e.crawler); err != nil {
			return nil, fmt.Errorf("recrawl records: %w", err)
		}
	}
	switch {
	case r.store == nil && r.enabled:
		return nil, errors.New("RECRAWL_ENABLED: a recrawl revisits a job's known URLs: set JOBDIR or REDIS_URL to the job of the first crawl")
	case r.store == nil && policy == nil:
		return nil, nil
	case r.store == nil:
		r.store = recrawl.NewMemoryStore()
	}
	if err := r.openRound(ctx); err != nil {
		return nil, fmt.Errorf("recrawl records: %w", err)
	}
	st := e.stats
	st.Set("recrawl/oldest_due_age_seconds", 0)
	r.cNew, r.cChanged, r.cUnchanged, r.cGone = st.Counter("recrawl/new"), st.Counter("recrawl/changed"), st.Counter("recrawl/unchanged"), st.Counter("recrawl/gone")
	r.c304, r.cRevisits = st.Counter("recrawl/not_modified"), st.Counter("recrawl/revisits")
	r.track.OnChurn = func(scope string) {
		e.stats.Inc("recrawl/etag_churn_scopes", 1)
		e.log.Warn().Str("scope", scope).Msg("this server sends a new ETag on every response and never answers 304: its ETags are ignored from now on, the content fingerprint decides whether its pages changed")
	}
	return r, nil
}

// openRound finds the job's round: a recrawl (RECRAWL_ENABLED) begins the
// next one once the last is done, or resumes the one under way.
func (r *recrawler) openRound(ctx context.Context) error {
	cur, known, err := r.store.Round(ctx)
	if err != nil {
		return err
	}
	begin := r.enabled || !known && !cur.Legacy
	if r.e.shared != nil && r.enabled {
		// A shared job begins its round when the worker joins, before it
		// competes for seeding (package redisjob): exactly one worker does.
		begin = false
	}
	if !begin {
		// A round under way is seeded again: the revisits already queued
		// are duplicates of themselves (see markRoundRevisit) and those
		// already made are skipped, so what a kill cut short is queued
		// and nothing twice.
		r.round = cur
		r.revisit = r.enabled && cur.N > 0 && !cur.Seeded && !cur.Legacy
		r.logRound(false)
		return nil
	}
	round, begun, err := r.store.BeginRound(ctx, cur.Legacy)
	if err != nil {
		return err
	}
	r.round = round
	r.revisit = round.N > 0 && !round.Seeded && !round.Legacy
	r.logRound(begun)
	return nil
}

func (r *recrawler) logRound(begun bool) {
	e := r.e
	e.stats.Set("recrawl/round", float64(r.round.N))
	switch {
	case r.round.Legacy && r.enabled:
		e.log.Warn().Int("round", r.round.N).Msg("this job was written before gocrawl kept recrawl records: it has no validators and no list of known URLs, " +
			"so this recrawl fetches again every page the spider reaches from its start requests, once; later recrawls send validators")
	case r.enabled && begun:
		e.log.Info().Int("round", r.round.N).Msg("recrawl: revisiting every known URL with its validators")
	case r.enabled:
		e.log.Info().Int("round", r.round.N).Msg("recrawl: resuming the round under way")
	}
}

// key is the record key of req: the fingerprint of the resource it asks
// for (without a round's salt).
func key(req *spider.Request) string { return dupefilter.Unsalted(req).String() }

// starts returns the requests a crawl begins with: in a round under way,
// every known URL not yet revisited in it (its stored request, marked as
// the round's revisit: see markRoundRevisit), then the spider's own start
// requests.
//
// Seeding is idempotent, so it keeps no cursor: a run that resumes a
// round after a kill seeds it again from the start. A revisit the killed
// run queued is in the queue with its round fingerprint (the fingerprint
// and the request are written together: in the same Pebble batch for
// JOBDIR, the same script for Redis), so the duplicate filter drops the
// copy; one it made has the round in its record and is skipped. Nothing
// in the round is queued twice, and nothing is lost: a revisit whose
// queueing the kill undid is queued again.
func (r *recrawler) starts(ctx context.Context, spiders iter.Seq2[*spider.Request, error]) iter.Seq2[*spider.Request, error] {
	if !r.revisit {
		return r.legacyStarts(spiders)
	}
	return func(yield func(*spider.Request, error) bool) {
		errStop := errors.New("stop")
		n := 0
		err := r.store.Each(ctx, func(_ string, rec recrawl.Record) error {
			if len(rec.Request) == 0 || r.codec == nil || rec.Round >= r.round.N {
				// Nothing to enqueue, or already visited in this round (a
				// round resumed after its seeding was cut short).
				return nil
			}
			req, err := r.codec.Decode(rec.Request)
			if err != nil {
				if !yield(nil, fmt.Errorf("recrawl record of %s: %w", rec.URL, err)) {
					return errStop
				}
				return nil
			}
			markRoundRevisit(req, r.round.N)
			n++
			if !yield(req, nil) {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			return
		}
		if err != nil {
			yield(nil, fmt.Errorf("reading the recrawl records: %w", err))
			return
		}
		r.e.log.Info().Int("urls", n).Int("round", r.round.N).Msg("recrawl: known URLs queued")
		for req, err := range spiders {
			if !yield(req, err) {
				return
			}
		}
	}
}

// legacyStarts lets the spider's start requests past the duplicate filter
// in a legacy round (see admit).
func (r *recrawler) legacyStarts(spiders iter.Seq2[*spider.Request, error]) iter.Seq2[*spider.Request, error] {
	if !r.round.Legacy || !r.enabled {
		return spiders
	}
	return func(yield func(*spider.Request, error) bool) {
		for req, err := range spiders {
			if req != nil {
				r.admit(context.Background(), req)
			}
			if !yield(req, err) {
				return
			}
		}
	}
}

// admit prepares a request the spider made, before the scheduler sees
// it. In a legacy round (a job from before records were kept) a URL not
// yet visited in the round goes past the duplicate filter: it is fetched
// again once.
func (r *recrawler) admit(ctx context.Context, req *spider.Request) {
	if !r.round.Legacy || !r.enabled || req.DontFilter || req.URL == nil {
		return
	}
	rec, ok, err := r.store.Get(ctx, key(req))
	if err == nil && ok && rec.Round >= r.round.N {
		return
	}
	req.DontFilter = true
}

// markRevisit marks req as a revisit of continuous mode: validators are
// added when it is sent, and the duplicate filter lets it pass.
func markRevisit(req *spider.Request) {
	req.DontFilter = true
	req.Set(MetaRevisit, true)
}

// markRoundRevisit marks req as a revisit of round n: validators are
// added when it is sent, and its fingerprint is salted with the round
// (dupefilter.MetaSalt), so the duplicate filter lets it pass once in the
// round and drops any later copy of it.
func markRoundRevisit(req *spider.Request, n int) {
	req.DontFilter = false
	req.Set(MetaRevisit, true)
	req.Set(dupefilter.MetaSalt, roundSalt(n))
}

// roundSalt is the fingerprint salt of round n's revisits.
func roundSalt(n int) string { return "recrawl round " + strconv.Itoa(n) }

func isRevisit(req *spider.Request) bool {
	v, _ := req.Get(MetaRevisit).(bool)
	return v
}

// fetch downloads req through the downloader middlewares, as a revisit
// when it is one: the Budget may hold it back (it is rescheduled for when
// the budget allows), and it is sent with its record's validators.
func (r *recrawler) fetch(ctx context.Context, req *spider.Request, scopes throttling.Scopes) (*spider.Response, error) {
	e := r.e
	if r.round.Legacy && r.enabled && !isRevisit(req) {
		if rec, ok, err := r.store.Get(ctx, key(req)); err == nil && ok && rec.Round >= r.round.N {
			return nil, &middleware.DropError{Reason: "recrawl_visited", Err: errors.New("already fetched in this recrawl round")}
		}
	}
	if !isRevisit(req) {
		return e.fetch.Fetch(ctx, req)
	}
	scope := req.Host()
	if r.budget != nil {
		if ok, wait := r.budget.Take(scope, e.clock.Now()); !ok {
			later := req.Clone()
			later.DontFilter = true // its round fingerprint is taken: by itself
			throttling.SetRequestDelay(later, wait)
			e.stats.Inc("recrawl/budget_delayed", 1)
			return nil, &middleware.RescheduleError{Requests: []*spider.Request{later}, Reason: "recrawl_budget"}
		}
	}
	rec, ok, err := r.store.Get(ctx, key(req))
	if err != nil {
		return nil, fmt.Errorf("recrawl record of %s: %w", req.URL.Redacted(), err)
	}
	r.cRevisits.Add(1)
	send := req
	if ok && req.EffectiveMethod() == http.MethodGet {
		v := recrawl.Validators(rec, r.track.UseETag(scope))
		if len(v) > 0 {
			send = req.Clone()
			if send.Header == nil {
				send.Header = http.Header{}
			}
			for k, vs := range v {
				if send.Header.Get(k) == "" {
					send.Header[k] = vs
				}
			}
		}
	}
	res, err := e.fetch.Fetch(ctx, send)
	if err == nil && res != nil {
		// Told before the next request of the scope is prepared (the
		// slot is freed when this returns), so that a server whose
		// ETags churn gets no more If-None-Match than the threshold.
		r.observeETag(scope, rec, ok, res)
	}
	return res, err
}

// observeETag tells the Tracker how the server answered a revisit that
// may have sent If-None-Match.
func (r *recrawler) observeETag(scope string, prev recrawl.Record, found bool, res *spider.Response) {
	sent := validatorSent(prev, found)
	if sent == "" {
		return
	}
	var fp recrawl.Hash
	if res.Status >= 200 && res.Status < 300 {
		fp = recrawl.Fingerprint(r.mode, res.Body)
	}
	r.track.Observe(scope, sent, res.Status, res.Header.Get("ETag"), recrawl.Classify(prev, found, res.Status, fp))
}

// visited records what res (the answer to req) found, sets res.Change,
// and returns the request of the URL's next visit in continuous mode (nil
// otherwise).
func (r *recrawler) visited(ctx context.Context, req *spider.Request, res *spider.Response) *spider.Request {
	e := r.e
	k := key(req)
	var (
		prev  recrawl.Record
		found bool
	)
	if r.readsRecords() {
		var err error
		if prev, found, err = r.store.Get(ctx, k); err != nil {
			e.log.Error().Err(err).Str("url", req.URL.Redacted()).Msg("recrawl: cannot read the URL's record")
			return nil
		}
	}
	var fp recrawl.Hash
	if res.Status >= 200 && res.Status < 300 {
		fp = recrawl.Fingerprint(r.mode, res.Body)
	}
	c := recrawl.Classify(prev, found, res.Status, fp)
	switch c {
	case recrawl.ChangeNew:
		r.cNew.Add(1)
	case recrawl.ChangeChanged:
		r.cChanged.Add(1)
	case recrawl.ChangeUnchanged:
		r.cUnchanged.Add(1)
		if res.Status == http.StatusNotModified {
			r.c304.Add(1)
		}
	case recrawl.ChangeGone:
		r.cGone.Add(1)
		e.log.Info().Str("url", res.URL.Redacted()).Int("status", res.Status).Msg("recrawl: page gone")
	}
	res.Change = c.String()
	rec := recrawl.Next(prev, c, res.Status, res.Header, fp, r.round.N)
	rec.URL = req.URL.Redacted()
	if r.codec != nil && (!found || len(rec.Request) == 0) {
		if b, err := r.codec.Encode(stripRevisit(req)); err == nil {
			rec.Request = b
		}
	}
	var next *spider.Request
	if r.policy != nil {
		now := e.clock.Now()
		rec.State = r.policy.Next(prev.State, recrawl.Visit{At: now, Changed: c == recrawl.ChangeNew || c == recrawl.ChangeChanged, Gone: c == recrawl.ChangeGone}, recrawl.HintsOf(req))
		next = stripRevisit(req)
		markRevisit(next)
		throttling.SetRequestDelay(next, max(rec.State.Due.Sub(now), 0))
	}
	if err := r.store.Put(ctx, k, rec); err != nil {
		e.log.Error().Err(err).Str("url", req.URL.Redacted()).Msg("recrawl: cannot save the URL's record")
	}
	if r.policy != nil {
		r.freshness(k, rec.State.Due)
	}
	return next
}

// readsRecords says whether a visit reads the URL's record before writing
// its new one. The first crawl of a job (round 0, no continuous mode) has
// no earlier round to compare with: every page in it is new, and a record
// it finds can only be its own round's (a page visited again in the same
// round), so it writes without reading. That saves a store read per page,
// a round trip in a distributed crawl.
func (r *recrawler) readsRecords() bool {
	return r.round.N > 0 || r.round.Legacy || r.policy != nil
}

// freshness records that the URL of key was visited and is due again at
// due, and, at most once a second, sets recrawl/oldest_due_age_seconds:
// how long the most overdue URL has waited past its due time.
func (r *recrawler) freshness(key string, due time.Time) {
	now := r.e.clock.Now()
	r.dueMu.Lock()
	defer r.dueMu.Unlock()
	if r.due == nil {
		r.due = map[string]time.Time{}
	}
	r.due[key] = due
	if now.Sub(r.freshAt) < time.Second {
		return
	}
	r.freshAt = now
	oldest := now
	for _, d := range r.due {
		if d.Before(oldest) {
			oldest = d
		}
	}
	r.e.stats.Set("recrawl/oldest_due_age_seconds", now.Sub(oldest).Seconds())
}

// validatorSent is the ETag a revisit with record prev sent.
func validatorSent(prev recrawl.Record, found bool) string {
	if !found || prev.Change == recrawl.ChangeGone {
		return ""
	}
	return prev.ETag
}

// stripRevisit returns a copy of req without the revisit mark, salt and
// delay: the request as the spider made it.
func stripRevisit(req *spider.Request) *spider.Request {
	c := req.Clone()
	delete(c.Meta, MetaRevisit)
	delete(c.Meta, dupefilter.MetaSalt)
	delete(c.Meta, throttling.MetaDelay)
	if isRevisit(req) {
		c.DontFilter = false
	}
	return c
}

// notModified hands a 304 to the spider's NotModified hook, when it has
// one; a 304 never reaches the callback. It reports whether res was a 304.
func (r *recrawler) notModified(ctx context.Context, res *spider.Response, out spider.Output) bool {
	if res.Status != http.StatusNotModified || res.Change != spider.ChangeUnchanged {
		return false
	}
	if h, ok := r.e.sp.(spider.NotModifiedHandler); ok {
		if err := h.NotModified(ctx, res, out); err != nil {
			r.e.callbackError(ctx, res, err, out)
		}
	}
	return true
}

// finished marks the round done when the crawl ran to its end.
func (r *recrawler) finished(ctx context.Context, reason string) {
	if reason != "finished" {
		return
	}
	round := r.round
	round.Done, round.Seeded = true, true
	if err := r.store.SaveRound(ctx, round); err != nil {
		r.e.log.Error().Err(err).Msg("recrawl: cannot record the end of the round")
	}
}
