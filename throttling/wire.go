package throttling

import "time"

// The delay counts from the wire.
//
// A request is admitted (Sent, Admit: the gate's LastSent) before the
// downloader has a connection for it. On a reused connection it reaches
// the server at once; on a new one, after the dial and the TLS handshake,
// which may take tens of milliseconds. Counting the next request's delay
// from the admission would then let the server see a gap shorter than the
// delay (the next request, on the now open connection, goes out at once).
// So the engine reports when each request was written to its connection
// (Wired), and the gate records that moment beside the request's
// admission (GateState.Wired): the delay to the next request counts from
// the later of the admission and the moment the request reached the wire,
// while the admission still names the request.

// WireRecorder is an optional ScopeManager method: the request admitted at
// sentAt was written to its connection at now. The default
// ThrottlingScopeManager implements it (Gate.RecordWired).
type WireRecorder interface {
	RecordWired(now, sentAt time.Time)
}

// RecordWired records that the request sent at sentAt was written to its
// connection at now, when it is still the last send and now is later than
// what the gate knew (its admission, or an earlier report: net/http may
// write a request again on another connection): the delay to the next
// send counts from now (Wired), with the same jitter factor, and so does
// the gap to the next send that the rate controller reads (the next
// send's PrevSent). A request written after another was admitted changes
// nothing (the next send's turn is already taken). A wired request's turn
// can no longer be given back (it reached the server), even when the
// report is no later than its admission (a coarse or fake clock: Wired is
// then LastSent and the delay is unchanged); LastSent keeps its admission
// time, which names it in the outcome that follows.
func (g *Gate) RecordWired(sentAt, now time.Time) {
	s := &g.State
	if !s.LastSent.Equal(sentAt) {
		return
	}
	switch {
	case now.After(s.LastOnWire()):
		s.Wired = now
	case s.Wired.IsZero():
		s.Wired = s.LastSent
	}
}

// RecordWired implements WireRecorder.
func (m *ThrottlingScopeManager) RecordWired(now, sentAt time.Time) {
	m.gate.RecordWired(sentAt, now)
}

// Wired records that the request admitted at sentAt with scopes was
// written to its connection now (the throttler's clock): in each scope
// where it is still the last send, the delay to the next request counts
// from now (see WireRecorder). The engine calls it from the downloader's
// report (downloader.WithWire). Scopes whose state was evicted meanwhile
// are left as they are. In a distributed crawl (Options.Shared) the send
// times live in the shared store: a Shared that implements SharedWirer
// is told, and moves them there.
func (t *Throttler) Wired(scopes Scopes, sentAt time.Time) {
	if sentAt.IsZero() {
		return
	}
	if t.shared != nil {
		if w, ok := t.shared.(SharedWirer); ok {
			w.Wired(sentAt)
		}
		return
	}
	now := t.clock.Now()
	t.mu.Lock()
	for _, s := range scopes {
		if e, ok := t.scopes[s.Name]; ok {
			if r, ok := e.mgr.(WireRecorder); ok {
				r.RecordWired(now, sentAt)
			}
		}
	}
	t.mu.Unlock()
}

// SharedWirer is an optional Shared method: the request whose send time
// is sentAt (as Admit or the shared frontier gave it) was just written to
// its connection. In each of its scopes where it is still the last send,
// the store records, beside the send's admission, the moment it learns of
// the write (never earlier than the write, whatever the workers' clocks
// say), so that the next request of any worker waits the delay after the
// server saw this one; and the request can no longer give its turn back. Without it a
// worker whose request waits between its admission and the wire (a dial,
// a busy machine) lets another worker's next request reach the server
// less than the delay after it.
type SharedWirer interface {
	Wired(sentAt time.Time)
}
