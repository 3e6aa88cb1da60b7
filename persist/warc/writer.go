package warc

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/gocrawl/gocrawl/clock"
)

// Dedup says which earlier responses make a payload a duplicate, written
// as a revisit record instead of a full copy.
type Dedup int

const (
	// DedupOff writes every payload in full.
	DedupOff Dedup = iota
	// DedupURL: a payload identical to the last one archived for the same
	// URL.
	DedupURL
	// DedupDigest: a payload identical to any archived earlier, whatever
	// the URL.
	DedupDigest
)

// ParseDedup reads a WARC_DEDUP value: off, url or digest.
func ParseDedup(s string) (Dedup, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none", "false", "":
		return DedupOff, nil
	case "url":
		return DedupURL, nil
	case "digest", "any":
		return DedupDigest, nil
	}
	return 0, fmt.Errorf("%q is not a deduplication mode; use off, url or digest", s)
}

// Options configure a Writer.
type Options struct {
	// Dir is the folder of the WARC files; it is created if missing.
	Dir string
	// Prefix starts every file name: PREFIX-TIMESTAMP-SERIAL.warc.gz.
	Prefix string
	// MaxSize is the size past which a file is closed and the next one
	// opened (0 = never). A file holds at least one exchange, so it may
	// pass MaxSize by one exchange.
	MaxSize int64
	// SyncInterval is how often written records are synced to disk
	// (fsync): 0 syncs after every exchange; files are always synced when
	// they are closed.
	SyncInterval time.Duration
	// Dedup chooses which identical payloads become revisit records.
	Dedup Dedup
	// Software is the warcinfo's software field ("gocrawl/1.2.3").
	Software string
	// Info are more warcinfo fields (name, value), such as the crawl's
	// settings.
	Info [][2]string
	// Clock dates the files; the real clock when nil.
	Clock clock.Clock
	// Create opens a new file for writing; os.OpenFile (exclusive) when
	// nil. Tests use it to simulate a full disk.
	Create func(path string) (File, error)
}

// File is what a Writer writes to.
type File interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Writer writes exchanges to rotating WARC files. It is safe for concurrent
// use: records are compressed by the calling goroutine and appended to the
// file in one write each, so a kill loses at most the exchange being
// written, and NewWriter cuts such a partial record away.
type Writer struct {
	opts Options

	mu      sync.Mutex
	f       File
	path    string // of the open file, with its .open suffix
	size    int64
	infoID  string
	serial  int
	entries []Entry
	dirty   bool
	failed  error

	dedup *dedupTable

	stopSync chan struct{}
	syncDone chan struct{}
	closed   bool
}

// NewWriter prepares a Writer over opts.Dir: files left open by a crawl that was
// killed are repaired first (a partial last record cut, the index
// rebuilt), and the indexes present seed deduplication, so that a recrawl
// writes revisit records for what an earlier crawl archived. No file is
// created before the first exchange.
func NewWriter(opts Options) (*Writer, []Repair, error) {
	if opts.Dir == "" {
		return nil, nil, errors.New("no WARC folder given")
	}
	if strings.ContainsAny(opts.Prefix, `/\`) {
		return nil, nil, fmt.Errorf("file prefix %q holds a path separator", opts.Prefix)
	}
	if opts.Prefix == "" {
		opts.Prefix = "gocrawl"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Create == nil {
		opts.Create = func(path string) (File, error) {
			return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, nil, err
	}
	repairs, err := RepairDir(opts.Dir)
	if err != nil {
		return nil, repairs, err
	}
	w := &Writer{opts: opts, dedup: newDedupTable(opts.Dedup)}
	if err := w.dedup.seed(opts.Dir); err != nil {
		return nil, repairs, err
	}
	if opts.SyncInterval > 0 {
		w.stopSync, w.syncDone = make(chan struct{}), make(chan struct{})
		go w.syncLoop(opts.SyncInterval)
	}
	return w, repairs, nil
}

// Err returns the write error that stopped the writer (a full disk), or
// nil. Once it is set, every Write returns it.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Write archives ex: a request record and a response record, or a revisit
// record when ex's payload is a duplicate (see Dedup) or a 304 answer. It
// reports whether a revisit was written.
func (w *Writer) Write(ex *Exchange) (revisit bool, err error) {
	digest := Digest(ex.Payload)
	var ref *original
	profile := ""
	switch {
	case ex.Status == http.StatusNotModified:
		profile = ProfileServerNotModified
		ref = w.dedup.lastOf(ex.URL)
	case ex.Truncated == "":
		full := ex.Status >= 200 && ex.Status < 300
		if ref = w.dedup.claim(ex.URL, digest, ex.Date, full); ref != nil {
			profile = ProfileIdenticalPayload
		}
	}
	reqID, resID := NewRecordID(), NewRecordID()
	date := FormatDate(ex.Date)
	req := &Record{Block: ex.Request}
	req.Header = Header{{"WARC-Type", TypeRequest}, {"WARC-Record-ID", reqID}, {"WARC-Date", date},
		{"WARC-Target-URI", ex.URL}, {"WARC-Concurrent-To", resID}}
	if ex.IP != "" {
		req.Header.Add("WARC-IP-Address", ex.IP)
	}
	req.Header.Add("Content-Type", "application/http;msgtype=request")
	req.Header.Add("WARC-Block-Digest", Digest(ex.Request))

	res := &Record{}
	typ := TypeResponse
	if profile != "" {
		typ = TypeRevisit
		res.Block = append(append(make([]byte, 0, len(ex.ResponseHead)+2), ex.ResponseHead...), "\r\n"...)
	} else {
		res.Block = make([]byte, 0, len(ex.ResponseHead)+2+len(ex.Payload))
		res.Block = append(append(append(res.Block, ex.ResponseHead...), "\r\n"...), ex.Payload...)
	}
	res.Header = Header{{"WARC-Type", typ}, {"WARC-Record-ID", resID}, {"WARC-Date", date},
		{"WARC-Target-URI", ex.URL}, {"WARC-Concurrent-To", reqID}}
	if ex.IP != "" {
		res.Header.Add("WARC-IP-Address", ex.IP)
	}
	res.Header.Add("Content-Type", "application/http;msgtype=response")
	if profile != "" {
		res.Header.Add("WARC-Profile", profile)
		if ref != nil {
			res.Header.Add("WARC-Refers-To-Target-URI", ref.url)
			res.Header.Add("WARC-Refers-To-Date", FormatDate(ref.date))
		}
	}
	if profile != ProfileServerNotModified {
		res.Header.Add("WARC-Payload-Digest", digest)
	}
	res.Header.Add("WARC-Block-Digest", Digest(res.Block))
	if ex.Truncated != "" {
		res.Header.Add("WARC-Truncated", ex.Truncated)
	}

	var buf bytes.Buffer
	buf.Grow(len(req.Block) + len(res.Block)/2 + 1024)
	reqLen, err := compressRecord(&buf, req)
	if err != nil {
		return false, err
	}
	if _, err := compressRecord(&buf, res); err != nil {
		return false, err
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ready(int64(buf.Len())); err != nil {
		return false, err
	}
	if err := w.append(buf.Bytes()); err != nil {
		return false, err
	}
	base := filepath.Base(strings.TrimSuffix(w.path, openSuffix))
	resOff := w.size - int64(buf.Len()) + reqLen
	e := Entry{SURT: SURT(ex.URL), Time: ex.Date, URL: ex.URL, Type: typ, Status: ex.Status, MIME: ex.MIME,
		Offset: resOff, Length: int64(buf.Len()) - reqLen, File: base}
	if ex.Method != http.MethodGet {
		e.Method = ex.Method
	}
	if profile != ProfileServerNotModified {
		e.Digest = digest
	}
	w.entries = append(w.entries, e)
	if w.opts.SyncInterval <= 0 {
		if err := w.f.Sync(); err != nil {
			return false, w.fail(err)
		}
	}
	return profile != "", nil
}

// compressRecord writes rec as one gzip member to buf and returns the
// member's length.
func compressRecord(buf *bytes.Buffer, rec *Record) (int64, error) {
	start := buf.Len()
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(buf)
	if err := rec.writeTo(zw); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return int64(buf.Len() - start), nil
}

var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// ready opens a file, or the next one when the open one would pass
// MaxSize with n more bytes. Called with w.mu held.
func (w *Writer) ready(n int64) error {
	if w.failed != nil {
		return w.failed
	}
	if w.closed {
		return errors.New("the WARC writer is closed")
	}
	if w.f != nil && w.opts.MaxSize > 0 && w.size+n > w.opts.MaxSize && len(w.entries) > 0 {
		if err := w.closeFile(); err != nil {
			return w.fail(err)
		}
	}
	if w.f == nil {
		if err := w.openFile(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// append writes b at the end of the open file; a short write is cut away
// so that the file ends with a whole record.
func (w *Writer) append(b []byte) error {
	n, err := w.f.Write(b)
	if err != nil {
		if n > 0 {
			_ = w.f.Truncate(w.size)
		}
		return w.fail(err)
	}
	w.size += int64(n)
	w.dirty = true
	return nil
}

// fail makes err the writer's lasting error. Called with w.mu held.
func (w *Writer) fail(err error) error {
	if w.failed == nil {
		w.failed = fmt.Errorf("WARC file %s: %w", w.pathOr(w.opts.Dir), err)
	}
	return w.failed
}

func (w *Writer) pathOr(def string) string {
	if w.path != "" {
		return w.path
	}
	return def
}

// openFile creates the next file and writes its warcinfo record.
func (w *Writer) openFile() error {
	now := w.opts.Clock.Now().UTC()
	for {
		name := fmt.Sprintf("%s-%s%03d-%05d.warc.gz", w.opts.Prefix, now.Format("20060102150405"), now.Nanosecond()/1e6, w.serial)
		w.serial++
		path := filepath.Join(w.opts.Dir, name) + openSuffix
		if _, err := os.Stat(filepath.Join(w.opts.Dir, name)); err == nil {
			continue
		}
		f, err := w.opts.Create(path)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		w.f, w.path, w.size, w.entries = f, path, 0, nil
		break
	}
	info := w.warcinfo(filepath.Base(strings.TrimSuffix(w.path, openSuffix)), now)
	var buf bytes.Buffer
	if _, err := compressRecord(&buf, info); err != nil {
		return err
	}
	w.infoID = info.ID()
	return w.append(buf.Bytes())
}

func (w *Writer) warcinfo(name string, now time.Time) *Record {
	var b bytes.Buffer
	fmt.Fprintf(&b, "software: %s\r\n", w.opts.Software)
	b.WriteString("format: WARC File Format 1.1\r\n")
	b.WriteString("conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n")
	for _, f := range w.opts.Info {
		fmt.Fprintf(&b, "%s: %s\r\n", f[0], sanitizeField(f[1]))
	}
	return &Record{Header: Header{{"WARC-Type", TypeWarcinfo}, {"WARC-Record-ID", NewRecordID()},
		{"WARC-Date", FormatDate(now)}, {"WARC-Filename", name}, {"Content-Type", "application/warc-fields"}},
		Block: b.Bytes()}
}

// closeFile syncs and closes the open file, writes its index, and drops
// its .open suffix. Called with w.mu held.
func (w *Writer) closeFile() error {
	f, path := w.f, w.path
	w.f = nil
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	final := strings.TrimSuffix(path, openSuffix)
	if err := WriteIndex(IndexPath(final), w.entries); err != nil {
		return err
	}
	if err := os.Rename(path, final); err != nil {
		return err
	}
	w.entries = nil
	return syncDir(w.opts.Dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every file system syncs folders
	return nil
}

// Path returns the path of the file being written ("" when none).
func (w *Writer) Path() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.path
}

// Close closes the open file (synced, indexed, renamed without .open).
// After a write failure the file keeps its .open suffix, and the next NewWriter
// repairs it.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	if w.stopSync != nil {
		close(w.stopSync)
		<-w.syncDone
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	if w.failed != nil {
		_ = w.f.Close()
		w.f = nil
		return nil
	}
	if err := w.closeFile(); err != nil {
		return fmt.Errorf("closing WARC file %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) syncLoop(every time.Duration) {
	defer close(w.syncDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stopSync:
			return
		case <-t.C:
		}
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
