package downloader

import (
	"context"
	"errors"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// This file reads a response body into memory under its size limit and
// the crawl's memory budget. The buffer grows geometrically but never past
// the limit (a bytes.Buffer would double to twice the limit), every growth
// is counted in the lease before it is allocated, and the buffers left
// behind by large growths are returned to the system at once
// (releaseGarbage); so a body costs at most its limit plus a small
// constant, however much the server sends and however well it compresses.
// The growth policy lives in nextCap alone; the first buffer of a body of
// unknown length comes from a pool (firstBufs), and a body that fits in it
// is kept as a copy of its size.

// Sizes of the body buffer.
const (
	// firstBuf is the first buffer when the length is unknown.
	firstBuf = 16 << 10
	// maxHintBuf bounds the first buffer a Content-Length may ask for:
	// a server may announce a length it never sends.
	maxHintBuf = 8 << 20
	// gcAfterGrowth: after a buffer of this size or more is replaced by a
	// larger one, the garbage is collected and returned to the system.
	gcAfterGrowth = 8 << 20
)

// freeing is set while releaseGarbage runs.
var freeing atomic.Bool

// releaseGarbage collects the buffers a growing body left behind and
// returns their pages to the system. Without it the series of earlier
// buffers (together as large as the last one) would stay resident until
// the heap doubled, and a body would cost twice its limit; with it, the
// new buffer's pages become resident only as the body fills them, so a
// body costs its limit plus a few megabytes. One call at a time suffices
// for every growing body.
func releaseGarbage() {
	if freeing.CompareAndSwap(false, true) {
		debug.FreeOSMemory()
		freeing.Store(false)
	}
}

// errTooLarge is returned by readBody when the body has more than limit
// bytes; errBudget when it does not fit in what the memory budget allows
// one response.
var (
	errTooLarge = errors.New("body exceeds the limit")
	errBudget   = errors.New("body exceeds what the memory budget allows one response")
)

// bodyReader reads one body.
type bodyReader struct {
	limit int64 // DOWNLOAD_MAXSIZE for this response; 0 = none
	hint  int64 // Content-Length, or -1
	lease *Lease
	// maxHold is the most the lease may hold (old and new buffer while
	// growing); 0 = no budget.
	maxHold int64
	// warn is called once, when the body passes warnAt bytes (0 = never).
	warnAt int64
	warn   func(n int64)
	// pooled is the buffer taken from firstBufs while the body is in it.
	pooled *[]byte
}

// firstBufs holds buffers of firstBuf bytes for bodies of unknown length.
// Most such bodies are a few kilobytes: reading them into a pooled buffer
// and keeping an exact copy allocates their size instead of 16 KB each
// (which the allocator zeroes and the garbage collector then counts
// against the next cycle).
var firstBufs = sync.Pool{New: func() any { b := make([]byte, firstBuf); return &b }}

// read reads r to the end and returns the body. ctx is the download's
// context, used while waiting for budget.
func (b *bodyReader) read(ctx context.Context, r io.Reader) ([]byte, error) {
	buf, err := b.readInto(ctx, r)
	if b.pooled == nil {
		return buf, err
	}
	// The body is still in the pooled buffer: keep a copy of its size,
	// count only that in the lease, and give the buffer back.
	out := make([]byte, len(buf))
	copy(out, buf)
	b.release()
	b.lease.shrink(int64(len(out)))
	return out, err
}

// release gives the pooled first buffer back, if the body holds one.
func (b *bodyReader) release() {
	if b.pooled != nil {
		firstBufs.Put(b.pooled)
		b.pooled = nil
	}
}

// readInto is read without the final copy: the body it returns may be
// the pooled buffer (b.pooled set).
func (b *bodyReader) readInto(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf []byte
	warned := false
	idle := 0 // reads in a row that returned nothing
	for {
		if len(buf) == cap(buf) {
			next, err := b.nextCap(cap(buf))
			if err != nil {
				if errors.Is(err, errTooLarge) || errors.Is(err, errBudget) {
					// Full: the body is too large if anything is left.
					n, rerr := readOne(r)
					if n == 0 && rerr == io.EOF {
						return buf, nil
					}
					if n == 0 && rerr != nil {
						return buf, rerr
					}
				}
				return buf, err
			}
			if err := b.lease.ensure(ctx, int64(cap(buf))+next); err != nil {
				return buf, err
			}
			var nb []byte
			if cap(buf) == 0 && next == firstBuf {
				b.pooled = firstBufs.Get().(*[]byte)
				nb = (*b.pooled)[:0]
			} else {
				nb = make([]byte, len(buf), next)
				copy(nb, buf)
				b.release() // buf was copied: it may have been the pooled one
			}
			old := cap(buf)
			buf = nb
			b.lease.shrink(next)
			if old >= gcAfterGrowth {
				releaseGarbage()
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n == 0 && err == nil {
			if idle++; idle >= maxIdleReads {
				return buf, io.ErrNoProgress
			}
			continue
		}
		idle = 0
		if !warned && b.warnAt > 0 && int64(len(buf)) > b.warnAt && b.warn != nil {
			warned = true
			b.warn(int64(len(buf)))
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// maxIdleReads is how many reads in a row may return nothing before the
// reader is deemed stuck (io.ErrNoProgress), as bufio does.
const maxIdleReads = 100

// readOne reads one byte, to see whether a full buffer was the whole body.
func readOne(r io.Reader) (int, error) {
	var one [1]byte
	for range maxIdleReads {
		n, err := r.Read(one[:])
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// nextCap returns the capacity of the next buffer when one of capacity
// cur is full: the Content-Length (plus one byte, to see EOF without
// growing again) for the first one, otherwise double, never above the
// limit or what the budget allows. A buffer that would pass half the limit
// grows to the limit at once, so that the old and new buffers together
// never hold more than 1.5 × the limit. errTooLarge or errBudget say that
// the buffer cannot grow.
func (b *bodyReader) nextCap(cur int) (int64, error) {
	c := int64(cur)
	next := 2 * c
	if c == 0 {
		next = firstBuf
		if b.hint >= 0 {
			next = min(b.hint+1, maxHintBuf)
		}
	}
	next = max(next, 512)
	if b.limit > 0 {
		if c >= b.limit {
			return 0, errTooLarge
		}
		if next > b.limit/2 && (c > 0 || b.hint < 0) {
			next = b.limit
		}
		next = min(next, b.limit)
	}
	if b.maxHold > 0 {
		// Old and new buffer are both held while copying.
		if room := b.maxHold - c; next > room {
			if room <= c {
				return 0, errBudget
			}
			next = room
		}
	}
	return next, nil
}
