package warc

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// This file holds how compressed exchanges reach the file: group commit
// (commit, writeBatch), the compressors and the buffers they fill.

// bufPool holds the buffers of compressed exchanges, given back once
// written: a crawl's exchanges are mostly of similar sizes.
var bufPool sync.Pool

// getBuf returns an empty buffer of at least n bytes of capacity.
func getBuf(n int) []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

func putBuf(b []byte) {
	if cap(b) <= 1<<20 { // a huge one is left to the collector
		bufPool.Put(&b)
	}
}

var crlf = []byte("\r\n")

// pending is an exchange compressed and waiting for the file.
type pending struct {
	data   []byte // the request's gzip member, then the response's
	reqLen int64  // length of the request's member
	entry  Entry  // its index line, less the file and offset

	done bool  // written (or failed), under Writer.mu
	err  error // why not written
}

// commit appends p to the file by group commit: whoever holds the file
// writes every exchange queued so far, in one system call (per file).
func (w *Writer) commit(p *pending) error {
	w.qmu.Lock()
	w.queue = append(w.queue, p)
	w.qmu.Unlock()

	w.mu.Lock()
	defer w.mu.Unlock()
	if p.done {
		return p.err // written by the goroutine that held the file
	}
	w.qmu.Lock()
	batch := w.queue
	w.queue = nil
	w.qmu.Unlock()
	w.writeBatch(batch)
	return p.err
}

// writeBatch writes batch in order, rotating files as they fill, and
// marks each exchange done, with the error that kept it from the file.
// Called with w.mu held.
func (w *Writer) writeBatch(batch []*pending) {
	out := w.batch[:0]
	first := 0 // index in batch of the first exchange in out
	var err error
	flush := func(upTo int) {
		if len(out) > 0 {
			err = w.append(out)
		}
		if err != nil {
			return // batch[first:] fail below
		}
		for _, q := range batch[first:upTo] {
			q.done = true
		}
		out, first = out[:0], upTo
	}
	for i, p := range batch {
		n := int64(len(p.data))
		if w.rotates(int64(len(out)) + n) {
			if flush(i); err != nil {
				break
			}
		}
		if err = w.ready(n); err != nil {
			break
		}
		e := p.entry
		e.File = filepath.Base(strings.TrimSuffix(w.path, openSuffix))
		e.Offset = w.size + int64(len(out)) + p.reqLen
		w.entries = append(w.entries, e)
		out = append(out, p.data...)
	}
	if err == nil {
		flush(len(batch))
	}
	if err == nil && w.opts.SyncInterval <= 0 && w.f != nil {
		if serr := w.f.Sync(); serr != nil {
			err = w.fail(serr)
			first = 0 // not durable: every exchange of the batch fails
		}
	}
	if err != nil {
		for _, q := range batch[first:] {
			q.done, q.err = true, err
		}
	}
	if cap(out) <= 4<<20 {
		w.batch = out[:0] // kept for the next batch, unless a huge one
	} else {
		w.batch = nil
	}
}

// compress appends to dst one gzip member holding the record of header h
// and block parts.
func (w *Writer) compress(dst []byte, h Header, parts ...[]byte) ([]byte, error) {
	return compressWith(w.pool, dst, h, parts...)
}

// compressWith is compress with the compressors of pool.
func compressWith(pool *compressors, dst []byte, h Header, parts ...[]byte) ([]byte, error) {
	zw := pool.get()
	defer pool.put(zw)
	b := appendWriter{dst}
	zw.Reset(&b)
	if err := writeRecord(zw, h, parts...); err != nil {
		return dst, err
	}
	if err := zw.Close(); err != nil {
		return dst, err
	}
	return b.b, nil
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// compressRecord writes rec as one gzip member to buf, at the fastest
// level, and returns the member's length.
func compressRecord(buf *bytes.Buffer, rec *Record) (int64, error) {
	start := buf.Len()
	zw := gzipPool(gzip.BestSpeed).get()
	defer gzipPool(gzip.BestSpeed).put(zw)
	zw.Reset(buf)
	if err := rec.writeTo(zw); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return int64(buf.Len() - start), nil
}

// gzipPools hold the compressors of each level, shared by the writers.
var gzipPools sync.Map // level -> *compressors

func gzipPool(level int) *compressors {
	if level == GzipStore {
		level = gzip.NoCompression
	}
	if p, ok := gzipPools.Load(level); ok {
		return p.(*compressors)
	}
	p, _ := gzipPools.LoadOrStore(level, newCompressors(level))
	return p.(*compressors)
}

// compressors is a free list of gzip.Writers of one level. A gzip.Writer
// is costly to make (at level 1, about 800 KB of tables and buffers and
// 300 µs to allocate and clear them) and cheap to reset, so they must be
// reused: a sync.Pool alone is not enough, because it is emptied by the
// garbage collector, which a crawl runs many times a second; each
// compressor made again then costs more than the records it compresses,
// and its garbage brings the next collection closer. The free list keeps
// a few compressors per core (those the collector does not take), and
// the sync.Pool the extra ones a burst of downloads needed.
type compressors struct {
	level int
	free  chan *gzip.Writer
	spill sync.Pool
}

func newCompressors(level int) *compressors {
	c := &compressors{level: level, free: make(chan *gzip.Writer, 4*runtime.GOMAXPROCS(0))}
	c.spill.New = func() any {
		zw, _ := gzip.NewWriterLevel(nil, level)
		return zw
	}
	return c
}

func (c *compressors) get() *gzip.Writer {
	select {
	case zw := <-c.free:
		return zw
	default:
		return c.spill.Get().(*gzip.Writer)
	}
}

func (c *compressors) put(zw *gzip.Writer) {
	select {
	case c.free <- zw:
	default:
		c.spill.Put(zw)
	}
}

// rotates reports whether n more bytes close the open file and start the
// next. Called with w.mu held.
func (w *Writer) rotates(n int64) bool {
	return w.f != nil && w.opts.MaxSize > 0 && w.size+n > w.opts.MaxSize && len(w.entries) > 0
}

// storeRequestsUnder is the size up to which a request record (the
// request line and header fields of a GET, a small POST) is stored
// uncompressed in its gzip member whatever the level: a request of a few
// hundred bytes gains little from compression (about 100 bytes, as its
// WARC header fields are mostly unique), and building the Huffman tables
// of its deflate block costs more than the rest of its record.
const storeRequestsUnder = 2 << 10
