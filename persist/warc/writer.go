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
	// GzipLevel is the compression level of the gzip members: 1 (the
	// fastest, used when 0) to 9 (the smallest), or GzipStore to store
	// the records in gzip members uncompressed. At level 1 a record of up
	// to 16 KiB (a small page, a redirect, an error) is compressed with
	// Huffman codes set in advance for the text of web pages, about three
	// times faster than with codes of its own and a few percent larger.
	GzipLevel int
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

// GzipStore is the Options.GzipLevel of gzip members that store their
// record uncompressed (deflate's level 0): the cheapest to write, and
// still read by every WARC tool.
const GzipStore = -1

// File is what a Writer writes to.
type File interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Writer writes exchanges to rotating WARC files. It is safe for concurrent
// use: records are compressed by the calling goroutine, in parallel, and
// appended to the file by group commit: one goroutine of the Writer's own
// writes, in one system call, every exchange queued while it was writing
// the previous ones. Write returns once its exchange is in the file, so a
// kill loses at most the exchanges being written, and NewWriter cuts such
// a partial record away.
type Writer struct {
	opts Options

	inMu     sync.RWMutex  // Write holds it to send, Close to stop sending
	stopped  bool          // under inMu: in is closed
	in       chan *pending // compressed exchanges waiting for the file
	loopDone chan struct{} // closed when commitLoop ends
	batch    []byte        // the bytes of one group commit, reused

	mu      sync.Mutex
	f       File
	path    string // of the open file, with its .open suffix
	size    int64
	infoID  string
	serial  int
	index   []indexLine // of the open file
	lineBuf []byte      // where index lines are formatted
	dirty   bool
	failed  error

	dedup *dedupTable

	closed bool
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
	switch {
	case opts.GzipLevel == 0:
		opts.GzipLevel = gzip.BestSpeed
	case opts.GzipLevel == GzipStore, opts.GzipLevel >= gzip.BestSpeed && opts.GzipLevel <= gzip.BestCompression:
	default:
		return nil, nil, fmt.Errorf("gzip level %d: use 1 (fastest) to 9 (smallest), or store (uncompressed)", opts.GzipLevel)
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
	w.in, w.loopDone = make(chan *pending, queueLen), make(chan struct{})
	go w.commitLoop()
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
	p, revisit, err := w.prepare(ex)
	if err != nil {
		return false, err
	}
	err = w.commit(p)
	putPending(p)
	if err != nil {
		return false, err
	}
	return revisit, nil
}

// prepare compresses ex's records, ready for commit.
func (w *Writer) prepare(ex *Exchange) (p *pending, revisit bool, err error) {
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
	// Room for every field of both records, so that Add does not grow them.
	var fields [24][2]string
	reqH := append(Header(fields[0:0:9]), [2]string{"WARC-Type", TypeRequest}, [2]string{"WARC-Record-ID", reqID},
		[2]string{"WARC-Date", date}, [2]string{"WARC-Target-URI", ex.URL}, [2]string{"WARC-Concurrent-To", resID})
	if ex.IP != "" {
		reqH.Add("WARC-IP-Address", ex.IP)
	}
	if ex.Protocol != "" {
		reqH.Add("WARC-Protocol", ex.Protocol)
	}
	reqH = append(reqH, ex.Fields...)
	reqH.Add("Content-Type", "application/http;msgtype=request")
	reqH.Add("WARC-Block-Digest", Digest(ex.Request))

	// The response block is its head, a blank line and (unless a revisit)
	// the payload: written and hashed in parts, never copied into one.
	block := [][]byte{ex.ResponseHead, crlf, ex.Payload}
	typ := TypeResponse
	if profile != "" {
		typ = TypeRevisit
		block = block[:2]
	}
	resH := append(Header(fields[9:9:24]), [2]string{"WARC-Type", typ}, [2]string{"WARC-Record-ID", resID},
		[2]string{"WARC-Date", date}, [2]string{"WARC-Target-URI", ex.URL}, [2]string{"WARC-Concurrent-To", reqID})
	if ex.IP != "" {
		resH.Add("WARC-IP-Address", ex.IP)
	}
	if ex.Protocol != "" {
		resH.Add("WARC-Protocol", ex.Protocol)
	}
	resH = append(resH, ex.Fields...)
	resH.Add("Content-Type", "application/http;msgtype=response")
	if profile != "" {
		resH.Add("WARC-Profile", profile)
		if ref != nil {
			resH.Add("WARC-Refers-To-Target-URI", ref.url)
			resH.Add("WARC-Refers-To-Date", FormatDate(ref.date))
		}
	}
	if profile != ProfileServerNotModified {
		resH.Add("WARC-Payload-Digest", digest)
	}
	resH.Add("WARC-Block-Digest", digestOf(block...))
	if ex.Truncated != "" {
		resH.Add("WARC-Truncated", ex.Truncated)
	}

	p = getPending(len(ex.Request) + len(ex.ResponseHead) + len(ex.Payload) + 2048)
	reqLevel := w.opts.GzipLevel
	if len(ex.Request) <= storeRequestsUnder {
		reqLevel = GzipStore
	}
	if p.data, err = w.member(p.data, reqLevel, reqH, ex.Request); err != nil {
		return nil, false, err
	}
	p.reqLen = int64(len(p.data))
	resLevel := w.opts.GzipLevel
	if typ == TypeResponse && len(ex.Payload) >= storeEncodedFrom && (contentEncoded(ex.ResponseHead) || compressedMedia(ex.MIME)) {
		resLevel = GzipStore
	}
	if p.data, err = w.member(p.data, resLevel, resH, block...); err != nil {
		return nil, false, err
	}
	var key string
	if ex.Parsed != nil {
		key = SURTOf(ex.Parsed)
	} else {
		key = SURT(ex.URL)
	}
	e := Entry{SURT: key, Time: ex.Date, URL: ex.URL, Type: typ, Status: ex.Status, MIME: ex.MIME,
		Length: int64(len(p.data)) - p.reqLen}
	if ex.Method != http.MethodGet {
		e.Method = ex.Method
	}
	if i := bytes.Index(ex.Request, []byte("\r\n\r\n")); i >= 0 && i+4 < len(ex.Request) {
		e.RequestBody = Digest(ex.Request[i+4:])
	}
	if profile != ProfileServerNotModified {
		e.Digest = digest
	}
	p.entry = e
	return p, profile != "", nil
}

// member appends to dst the gzip member of the record of header h and
// block parts at level: a small record stored or compressed with preset
// codes (appendMember), any other by the general compressor.
func (w *Writer) member(dst []byte, level int, h Header, parts ...[]byte) ([]byte, error) {
	if level == GzipStore || level == gzip.BestSpeed {
		if out, ok := appendMember(dst, level == GzipStore, h, parts...); ok {
			return out, nil
		}
	}
	return compressWith(gzipPool(level), dst, h, parts...)
}

// ready opens a file, or the next one when the open one would pass
// MaxSize with n more bytes. Called with w.mu held.
func (w *Writer) ready(n int64) error {
	if w.failed != nil {
		return w.failed
	}
	if w.closed {
		return errClosed
	}
	if w.rotates(n) {
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
		w.f, w.path, w.size, w.index = f, path, 0, nil
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
	if err := writeIndexLines(IndexPath(final), filepath.Base(final), w.index); err != nil {
		return err
	}
	if err := os.Rename(path, final); err != nil {
		return err
	}
	w.index = nil
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
	// Exchanges already queued are written; later ones are refused.
	w.inMu.Lock()
	if w.stopped {
		w.inMu.Unlock()
		return nil
	}
	w.stopped = true
	close(w.in)
	w.inMu.Unlock()
	<-w.loopDone
	w.mu.Lock()
	w.closed = true
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
