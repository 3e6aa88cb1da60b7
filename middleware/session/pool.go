package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
)

// ErrRetired is the kind of the error a request pinned to a retired
// session fails with: errors.Is(err, ErrRetired).
var ErrRetired = errors.New("session retired")

// Options configure a Pool.
type Options struct {
	// Size is SESSION_POOL_SIZE: sessions requests rotate over.
	Size int
	// MaxUses retires a session after that many requests (0 = never).
	MaxUses int
	// MaxErrors retires a session after that many failures in a row.
	MaxErrors int
	// UserAgents are handed to new sessions in turn (SESSION_USER_AGENTS).
	UserAgents []string
	// Headers are every session's headers (SESSION_HEADERS).
	Headers map[string]string
	// SaveEvery is how often changes are saved to the Store at most; 0
	// saves at Flush and Close only.
	SaveEvery time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Stats receives the session/* counters; may be nil.
	Stats *stats.Collector
}

// Pool hands out sessions. It is safe for concurrent use.
type Pool struct {
	opts  Options
	store Store

	mu       sync.Mutex
	live     map[string]*Session
	order    []string // rotation order of the unpinned live sessions
	next     int
	seq      int    // numbers new session IDs
	run      string // tells this run's session IDs from earlier runs' ones
	uaNext   int
	dirty    map[string]bool
	retired  []string        // retired since the last save
	gone     map[string]bool // every session retired in this run
	lastSave time.Time
}

// NewPool opens a pool over store, restoring the sessions it holds.
func NewPool(ctx context.Context, opts Options, store Store) (*Pool, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Size < 1 {
		opts.Size = 1
	}
	if opts.Stats == nil {
		opts.Stats = stats.New()
	}
	p := &Pool{opts: opts, store: store, live: map[string]*Session{}, dirty: map[string]bool{}, gone: map[string]bool{}, lastSave: opts.Clock.Now()}
	p.run = strconv.FormatUint(uint64(opts.Clock.Now().UnixNano())%(36*36*36*36), 36)
	recs, err := store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("sessions: loading: %w", err)
	}
	now := opts.Clock.Now()
	for _, r := range recs {
		s := newSession(r, now)
		p.live[r.ID] = s
		if !r.Pinned {
			p.order = append(p.order, r.ID)
		}
	}
	if len(recs) > 0 {
		opts.Stats.Inc("session/restored", float64(len(recs)))
	}
	return p, nil
}

// Pick returns the next unpinned session in turn, making a new one while
// there are fewer than Size. New sessions are named s1-RUN, s2-RUN, ...,
// where RUN differs from one run to the next, so that a resumed crawl
// never gives a new session the name of a retired one.
func (p *Pool) Pick() *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.order) < p.opts.Size {
		p.seq++
		return p.createLocked("s"+strconv.Itoa(p.seq)+"-"+p.run, false)
	}
	id := p.order[p.next%len(p.order)]
	p.next = (p.next + 1) % len(p.order)
	return p.live[id]
}

// Lookup returns the live session named id, or nil (unknown or retired).
func (p *Pool) Lookup(id string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[id]
}

// Get returns the session named id, making a pinned one when it does not
// exist yet. A pinned session that was retired gives ErrRetired: a request
// pinned to an identity must not silently change identity.
func (p *Pool) Get(id string) (*Session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.live[id]; s != nil {
		return s, nil
	}
	if p.gone[id] {
		return nil, fmt.Errorf("%w: %s", ErrRetired, id)
	}
	return p.createLocked(id, true), nil
}

func (p *Pool) createLocked(id string, pinned bool) *Session {
	h := make(map[string]string, len(p.opts.Headers)+1)
	for k, v := range p.opts.Headers {
		h[k] = v
	}
	if len(p.opts.UserAgents) > 0 {
		h["User-Agent"] = p.opts.UserAgents[p.uaNext%len(p.opts.UserAgents)]
		p.uaNext++
	}
	s := newSession(Record{ID: id, Headers: h, Pinned: pinned, Created: p.opts.Clock.Now()}, p.opts.Clock.Now())
	p.live[id] = s
	if !pinned {
		p.order = append(p.order, id)
	}
	p.dirty[id] = true
	p.opts.Stats.Inc("session/created", 1)
	return s
}

// Succeeded records a request of s that went well: its use is counted and
// its error streak ends; a session that reached MaxUses is retired.
func (p *Pool) Succeeded(s *Session) {
	s.mu.Lock()
	s.rec.Uses++
	s.rec.Errors = 0
	used := s.rec.Uses
	s.mu.Unlock()
	p.touch(s)
	if p.opts.MaxUses > 0 && used >= p.opts.MaxUses {
		p.Retire(s, "max_uses")
	}
}

// Failed records a failed request of s; MaxErrors in a row retire it.
func (p *Pool) Failed(s *Session) {
	s.mu.Lock()
	s.rec.Uses++
	s.rec.Errors++
	errs := s.rec.Errors
	s.mu.Unlock()
	p.touch(s)
	if p.opts.MaxErrors > 0 && errs >= p.opts.MaxErrors {
		p.Retire(s, "errors")
	}
}

// Retire takes s out of the pool for good (reason names it in the stats:
// session/retired/<reason>); a new session takes its place at the next
// Pick.
func (p *Pool) Retire(s *Session, reason string) {
	s.mu.Lock()
	if s.retired {
		s.mu.Unlock()
		return
	}
	s.retired = true
	s.mu.Unlock()
	p.mu.Lock()
	delete(p.live, s.rec.ID)
	delete(p.dirty, s.rec.ID)
	for i, id := range p.order {
		if id == s.rec.ID {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	p.retired = append(p.retired, s.rec.ID)
	p.gone[s.rec.ID] = true
	p.mu.Unlock()
	p.opts.Stats.Inc("session/retired/"+reason, 1)
	p.maybeSave()
}

func (p *Pool) touch(s *Session) {
	p.mu.Lock()
	if p.live[s.rec.ID] == s {
		p.dirty[s.rec.ID] = true
	}
	p.mu.Unlock()
	p.maybeSave()
}

func (p *Pool) maybeSave() {
	if p.opts.SaveEvery <= 0 {
		return
	}
	p.mu.Lock()
	due := p.opts.Clock.Now().Sub(p.lastSave) >= p.opts.SaveEvery
	p.mu.Unlock()
	if due {
		_ = p.Flush(context.Background())
	}
}

// Flush saves the changes since the last save to the store.
func (p *Pool) Flush(ctx context.Context) error {
	p.mu.Lock()
	now := p.opts.Clock.Now()
	var changed []Record
	for id := range p.dirty {
		if s := p.live[id]; s != nil {
			changed = append(changed, s.record(now))
		}
	}
	retired := p.retired
	p.dirty = map[string]bool{}
	p.retired = nil
	p.lastSave = now
	p.mu.Unlock()
	if len(changed) == 0 && len(retired) == 0 {
		return nil
	}
	if err := p.store.Save(ctx, changed, retired); err != nil {
		return err
	}
	return nil
}

// Live returns the IDs of the live sessions (tests, stats).
func (p *Pool) Live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.live))
	for id := range p.live {
		out = append(out, id)
	}
	return out
}

// Close saves the pool and closes its store.
func (p *Pool) Close() error {
	return errors.Join(p.Flush(context.Background()), p.store.Close())
}
