package pebbleq

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/pqueue"
)

// This file is the store's write path: Push and Ack, each committed alone
// or, with Options.GroupWrites, added to one pending batch that Flush
// commits.

var _ pqueue.Flusher = (*Store)(nil)

// Push implements pqueue.Store. A request the codec cannot encode is
// rejected with the codec's error and nothing is stored.
func (s *Store) Push(ctx context.Context, e *pqueue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return pqueue.ErrClosed
	}
	// The record and the key are built in scratch buffers: the batch
	// copies them, and inLine copies them only if it keeps the entry.
	val, err := s.appendEntryRecord(s.valBuf[:0], e)
	if err != nil {
		return err
	}
	if cap(val) <= maxScratch {
		s.valBuf = val[:0] // a large request's record is not kept for the store's life
	}
	if err := s.writable("push"); err != nil {
		return err
	}
	b := s.batch()
	if !s.group {
		defer b.Close()
	}
	id := s.nextID + 1
	idLimit := s.idLimit
	if id > idLimit {
		idLimit = id + idBlock - 1
		if err := b.Set(s.np, binary.BigEndian.AppendUint64(nil, idLimit), nil); err != nil {
			return s.broken("push", err)
		}
	}
	info := e.Info
	info.ID = pqueue.ID(id)
	var key []byte
	if !info.NotBefore.IsZero() {
		key = s.delayedKey(info.NotBefore, id)
	} else {
		key = appendQueueKey(s.keyBuf[:0], s.subq(info.Queue), info.Priority, id)
		s.keyBuf = key[:0]
	}
	if err := b.Set(key, val, nil); err != nil {
		return s.broken("push", err)
	}
	switch {
	case s.seen == nil:
	case s.group:
		s.seen.stage() // written, sorted, when the batch is committed
	default:
		if err := s.seen.writePending(b); err != nil {
			return s.broken("push", err)
		}
	}
	if s.group {
		if err := s.spill(); err != nil {
			return err
		}
	} else {
		if err := s.commit("push", b); err != nil {
			return fmt.Errorf("pebbleq: push %s: %w: %w", e.Req, pqueue.ErrStorage, err)
		}
		if s.seen != nil {
			s.seen.committed()
		}
		s.wrote()
	}
	s.nextID, s.idLimit = id, idLimit
	e.ID = info.ID
	if !info.NotBefore.IsZero() {
		if s.delayed == 0 || info.NotBefore.Before(s.due) {
			s.due = info.NotBefore
		}
		s.delayed++
		return nil
	}
	// key and val are scratch buffers: copied only if the entry joins
	// the read-ahead buffer.
	s.inLine(s.subq(info.Queue), key, func() *item {
		return &item{key: slices.Clone(key), info: info, val: slices.Clone(val)}
	})
	return nil
}

// maxScratch is the largest record buffer a store keeps between pushes.
const maxScratch = 64 << 10

// Ack implements pqueue.Store: the entry is deleted from disk (with
// GroupWrites, at the next flush). The deletion is a Pebble SingleDelete:
// an entry's key holds its ID, IDs are never handed out twice, and no
// path writes an entry's key again (Nack and Open put entries back in
// line in memory only), so every key is set once and deleted once. A
// SingleDelete and the Set it deletes then cancel out when they meet in a
// flush or compaction, instead of leaving a tombstone to carry down the
// levels until it reaches the bottom (see doc.go).
func (s *Store) Ack(ctx context.Context, id pqueue.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return pqueue.ErrClosed
	}
	if err := s.writable("ack"); err != nil {
		return err
	}
	it, ok := s.reserved[id]
	if !ok {
		return fmt.Errorf("ack %d: %w", id, pqueue.ErrUnknownID)
	}
	switch {
	case s.group:
		if err := s.pendingBatch().SingleDelete(it.key, nil); err != nil {
			return s.broken("ack", err)
		}
		s.pendAcks++
		if err := s.spill(); err != nil {
			return err
		}
	case s.onAck == nil:
		if err := s.write("ack", func() error { return s.db.SingleDelete(it.key, pebble.NoSync) }); err != nil {
			return fmt.Errorf("pebbleq: ack %d: %w: %w", id, pqueue.ErrStorage, err)
		}
		s.wrote()
	default:
		b := s.db.NewBatch()
		defer b.Close()
		if err := s.onAck(b); err != nil {
			// The acknowledgement's companions (the feeds' flush) failed:
			// the entry stays, and the crawl cannot go on.
			return fmt.Errorf("pebbleq: ack %d: %w: %w", id, pqueue.ErrStorage, err)
		}
		_ = b.SingleDelete(it.key, nil)
		if err := s.commit("ack", b); err != nil {
			return fmt.Errorf("pebbleq: ack %d: %w: %w", id, pqueue.ErrStorage, err)
		}
		s.wrote()
	}
	delete(s.reserved, id)
	return nil
}

// Flush implements pqueue.Flusher: with GroupWrites, it commits the
// pending writes as one Pebble write (after OnAck, when they hold an
// acknowledgement). Without GroupWrites there is nothing to do. An error
// wraps pqueue.ErrStorage; the store then refuses every later write, and
// the pending writes are dropped, never committed later: a feed whose
// flush failed must not have its items acknowledged.
func (s *Store) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

// Pending returns how many writes (puts and deletes) wait in the pending
// batch of GroupWrites.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pend == nil {
		return 0
	}
	return int(s.pend.Count())
}

// flushLocked is Flush with s.mu held.
func (s *Store) flushLocked() error {
	if s.failed != nil {
		return s.failed
	}
	if s.pend == nil || s.pend.Empty() {
		return nil
	}
	if s.seen != nil {
		if err := s.seen.writeStaged(s.pend); err != nil {
			return s.broken("flush", err)
		}
	}
	if s.pendAcks > 0 && s.onAck != nil {
		if err := s.onAck(s.pend); err != nil {
			return s.broken("flush", err)
		}
	}
	if err := s.commit("flush", s.pend); err != nil {
		return s.broken("flush", err)
	}
	acks := s.pendAcks
	s.pend.Reset()
	s.pendAcks = 0
	if s.seen != nil {
		s.seen.committed()
	}
	s.wrote()
	if acks > 0 && s.acked != nil {
		if err := s.acked(acks); err != nil {
			return s.broken("flush", err)
		}
	}
	return nil
}

// broken records that a grouped write failed: the pending writes are
// dropped and every later write fails with the same error.
func (s *Store) broken(op string, err error) error {
	if !s.group {
		return err
	}
	s.failed = fmt.Errorf("pebbleq: %s: %w: %w", op, pqueue.ErrStorage, err)
	if s.pend != nil {
		s.pend.Reset()
	}
	s.pendAcks = 0
	return s.failed
}

// writable returns the error a write must fail with at once: that of a
// failed flush, or that of the database's breaker after a fatal write
// error (a full disk) elsewhere, so that grouped writes do not pile up in
// memory when they can never be committed.
func (s *Store) writable(op string) error {
	if s.failed != nil {
		return s.failed
	}
	if !s.group {
		return nil // the write itself goes through the breaker
	}
	if err := s.write(op, noWrite); err != nil {
		return s.broken(op, err)
	}
	return nil
}

func noWrite() error { return nil }

// batch returns the batch a Push writes to: the pending one with
// GroupWrites, else a new one.
func (s *Store) batch() *pebble.Batch {
	if s.group {
		return s.pendingBatch()
	}
	return s.db.NewBatch()
}

// spill commits the pending batch once it holds MaxPendingBytes. s.mu is
// held.
func (s *Store) spill() error {
	if s.pend != nil && s.pend.Len() >= s.maxPen {
		return s.flushLocked()
	}
	return nil
}

func (s *Store) pendingBatch() *pebble.Batch {
	if s.pend == nil {
		s.pend = s.db.NewBatch()
	}
	return s.pend
}

// wrote tells AfterWrite that a write was committed.
func (s *Store) wrote() {
	if s.after != nil {
		s.after()
	}
}

// commit commits b through the write hook.
func (s *Store) commit(op string, b *pebble.Batch) error {
	return s.write(op, func() error { return b.Commit(pebble.NoSync) })
}
