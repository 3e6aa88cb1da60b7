package warc

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// This file holds how compressed exchanges reach the file: the committer
// goroutine (commit, commitLoop, writeBatch), the compressors and the
// buffers they fill.

// pending is an exchange compressed and waiting for the file. Pendings
// are reused (pendingPool) with their buffer and their wake channel.
type pending struct {
	data   []byte // the request's gzip member, then the response's
	reqLen int64  // length of the request's member
	entry  Entry  // its index line, less the file and offset

	done bool          // written (or failed), set by writeBatch
	err  error         // why not written
	wake chan struct{} // receives once writeBatch is done with it
}

// pendingPool holds pendings given back once written: a crawl's exchanges
// are mostly of similar sizes, so their buffers fit the next ones.
var pendingPool = sync.Pool{New: func() any { return &pending{wake: make(chan struct{}, 1)} }}

// getPending returns an empty pending whose buffer holds at least n bytes.
func getPending(n int) *pending {
	p := pendingPool.Get().(*pending)
	if cap(p.data) < n {
		p.data = make([]byte, 0, n)
	}
	p.data, p.reqLen, p.entry, p.done, p.err = p.data[:0], 0, Entry{}, false, nil
	return p
}

// putPending gives p back, unless its buffer is huge (left to the
// collector).
func putPending(p *pending) {
	if cap(p.data) > 1<<20 {
		p.data = nil
	}
	pendingPool.Put(p)
}

var crlf = []byte("\r\n")

// Batches: a batch holds at most batchItems exchanges and, past
// batchBytes, takes no more (one large exchange still makes a batch).
const (
	queueLen   = 256
	batchItems = 256
	batchBytes = 1 << 20
)

// commit hands p to the committer and waits until it is in the file (or
// has failed). Exchanges queued while the committer writes go to the
// file together in its next write.
func (w *Writer) commit(p *pending) error {
	if p.wake == nil { // a pending not from getPending
		p.wake = make(chan struct{}, 1)
	}
	w.inMu.RLock()
	if w.stopped {
		w.inMu.RUnlock()
		return errClosed
	}
	w.in <- p
	w.inMu.RUnlock()
	<-p.wake
	return p.err
}

var errClosed = errors.New("the WARC writer is closed")

// commitLoop is the committer: the one goroutine that writes to the
// files. It takes the exchanges queued (the first one, then, after
// letting the other goroutines run once, every one queued meanwhile),
// writes them in one system call, and wakes their goroutines; it syncs
// the file every SyncInterval. It ends when w.in is closed and drained.
func (w *Writer) commitLoop() {
	defer close(w.loopDone)
	var tick <-chan time.Time
	if w.opts.SyncInterval > 0 {
		t := time.NewTicker(w.opts.SyncInterval)
		defer t.Stop()
		tick = t.C
	}
	var batch []*pending
	for {
		select {
		case p, ok := <-w.in:
			if !ok {
				return
			}
			// The goroutine that queued p made this one runnable next:
			// yielding once lets the other downloads queue theirs, so
			// that a busy crawl writes many exchanges per system call.
			runtime.Gosched()
			batch = append(batch[:0], p)
			n := len(p.data)
		drain:
			for len(batch) < batchItems && n < batchBytes {
				select {
				case q, ok := <-w.in:
					if !ok {
						break drain
					}
					batch = append(batch, q)
					n += len(q.data)
				default:
					break drain
				}
			}
			w.mu.Lock()
			w.writeBatch(batch)
			w.mu.Unlock()
			for i, q := range batch {
				batch[i] = nil
				q.wake <- struct{}{} // q belongs to its goroutine again
			}
		case <-tick:
			w.mu.Lock()
			if w.dirty && w.f != nil && w.failed == nil {
				w.dirty = false
				if err := w.f.Sync(); err != nil {
					_ = w.fail(err)
				}
			}
			w.mu.Unlock()
		}
	}
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
		e := p.entry // its file's name is written with the index
		e.Offset = w.size + int64(len(out)) + p.reqLen
		var l indexLine
		l, w.lineBuf = newIndexLine(e, w.lineBuf)
		w.index = append(w.index, l)
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

// compressWith appends to dst one gzip member holding the record of
// header h and block parts, compressed with a compressor of pool.
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
// one compressor per core and one more (those the collector does not
// take): compressing a record never waits, so only a goroutine preempted
// in the middle of one makes a compressor more busy than there are cores;
// the sync.Pool keeps the extra ones such moments needed.
type compressors struct {
	level int
	free  chan *gzip.Writer
	spill sync.Pool
}

func newCompressors(level int) *compressors {
	c := &compressors{level: level, free: make(chan *gzip.Writer, runtime.GOMAXPROCS(0)+1)}
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
	return w.f != nil && w.opts.MaxSize > 0 && w.size+n > w.opts.MaxSize && len(w.index) > 0
}

// storeRequestsUnder is the size up to which a request record (the
// request line and header fields of a GET, a small POST) is stored
// uncompressed in its gzip member whatever the level: a request of a few
// hundred bytes gains little from compression (about 100 bytes, as its
// WARC header fields are mostly unique), and building the Huffman tables
// of its deflate block costs more than the rest of its record.
const storeRequestsUnder = 2 << 10

// storeEncodedFrom is the payload size from which a response whose
// payload is compressed already (a Content-Encoding such as gzip or br,
// or a compressed media type: JPEG, PNG, WebP, a video, a zip file...)
// is stored uncompressed in its gzip member whatever the level: deflate
// finds nothing to gain in such bytes, and looking for it costs as much
// as compressing a page of text. A small one is compressed with its
// header fields, which compress well.
const storeEncodedFrom = 1 << 10

// contentEncoded reports whether a response head (status line and header
// fields) names a Content-Encoding other than identity.
func contentEncoded(head []byte) bool {
	const name = "content-encoding:"
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if len(line) > len(name) && bytes.EqualFold(line[:len(name)], []byte(name)) {
			v := bytes.TrimSpace(line[len(name):])
			return len(v) > 0 && !bytes.EqualFold(v, []byte("identity"))
		}
	}
	return false
}

// compressedMedia reports whether the media type mime (lower case, without
// parameters) is of a compressed format.
func compressedMedia(mime string) bool {
	major, minor, _ := strings.Cut(mime, "/")
	switch major {
	case "video":
		return true
	case "audio":
		return !strings.Contains(minor, "wav") && !strings.Contains(minor, "aiff")
	case "image":
		switch minor {
		case "jpeg", "png", "gif", "webp", "avif", "heic", "heif", "jxl":
			return true
		}
	case "font":
		return minor == "woff" || minor == "woff2"
	case "application":
		switch minor {
		case "zip", "gzip", "x-gzip", "zstd", "x-bzip2", "x-xz", "x-7z-compressed", "x-rar-compressed", "vnd.rar", "font-woff":
			return true
		}
	}
	return false
}
