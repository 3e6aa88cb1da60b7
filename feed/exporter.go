package feed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// Options configure an Exporter.
type Options struct {
	// Format of the output; empty means from the file's extension.
	Format Format
	// Overwrite truncates an existing file (-O). Otherwise items are
	// appended (-o): a .jsonl file grows, a .json file's array is
	// continued, a .csv file keeps its header and columns.
	Overwrite bool
	// Fields lists the fields to write, in order (FEED_EXPORT_FIELDS).
	// Empty means every field of each item; CSV columns then come from the
	// first item (or the existing file's header when appending).
	Fields []string
	// Indent indents the json format by this many spaces (0 = one item per
	// line, compact).
	Indent int
	// Resume reopens a file written by an earlier run of the same job and
	// continues at ResumeOffset (a value of Offset saved then), truncating
	// anything after it, so items written after the last checkpoint are
	// not duplicated. Overwrite is ignored when Resume is set.
	Resume       bool
	ResumeOffset int64
	// FlushInterval bounds how long an item stays in the buffer (0 = 1 s;
	// negative = flush after every item).
	FlushInterval time.Duration
}

// Exporter writes items to one file in one format. It implements
// pipeline.ItemPipeline, pipeline.Opener and pipeline.Closer; it is safe
// for concurrent use. The file is opened by Open, not by New.
type Exporter struct {
	path string
	w    io.Writer // set by NewWriter instead of path
	opts Options

	mu        sync.Mutex
	file      *os.File
	bw        *bufio.Writer
	cw        *countingWriter
	csvw      *csv.Writer
	start     int64 // file offset where this run's writing began
	offset    int64 // logical end of the last item
	wrote     bool  // json: an item precedes the next one
	header    []string
	items     int64
	lastFlush time.Time
	opened    bool
	closed    bool
	stopFlush chan struct{} // closed by Close: stops the background flusher
	flushDone chan struct{}
}

// New returns an exporter to path. The format comes from opts.Format or,
// when empty, from path's extension. Bad options are reported here.
func New(path string, opts Options) (*Exporter, error) {
	if path == "" {
		return nil, errors.New("feed: empty file path")
	}
	if opts.Format == "" {
		f, err := FormatFromPath(path)
		if err != nil {
			return nil, err
		}
		opts.Format = f
	} else if _, err := ParseFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("feed %s: %w", path, err)
	}
	return &Exporter{path: path, opts: opts}, nil
}

// NewWriter returns an exporter writing to w (standard output, a buffer),
// which Close flushes but does not close. Appending and resuming do not
// apply.
func NewWriter(w io.Writer, opts Options) (*Exporter, error) {
	if _, err := ParseFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	return &Exporter{path: "<writer>", w: w, opts: opts}, nil
}

func (o Options) check() error {
	if o.Indent < 0 {
		return fmt.Errorf("indent %d is negative", o.Indent)
	}
	if o.Resume && o.ResumeOffset < 0 {
		return fmt.Errorf("resume offset %d is negative", o.ResumeOffset)
	}
	seen := map[string]bool{}
	for _, f := range o.Fields {
		if f == "" {
			return errors.New("empty field name in fields")
		}
		if seen[f] {
			return fmt.Errorf("field %q listed twice in fields", f)
		}
		seen[f] = true
	}
	return nil
}

// Path returns the file written ("<writer>" for NewWriter).
func (e *Exporter) Path() string { return e.path }

// Format returns the export format.
func (e *Exporter) Format() Format { return e.opts.Format }

// Name returns a pipeline name for the exporter: "feed:" and the path.
func (e *Exporter) Name() string { return "feed:" + e.path }

// Open opens the file (creating its directory) and prepares it: truncated
// with Overwrite, continued otherwise, or cut back to ResumeOffset with
// Resume. It implements pipeline.Opener; c may be nil.
func (e *Exporter) Open(ctx context.Context, c *spider.Crawler) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opened {
		return fmt.Errorf("feed %s: already opened", e.path)
	}
	if err := e.open(); err != nil {
		if e.file != nil {
			e.file.Close()
			e.file = nil
		}
		return err
	}
	e.opened = true
	e.lastFlush = time.Now()
	if iv := e.flushInterval(); iv > 0 {
		e.stopFlush, e.flushDone = make(chan struct{}), make(chan struct{})
		go e.flushLoop(iv)
	}
	return nil
}

func (e *Exporter) flushInterval() time.Duration {
	if e.opts.FlushInterval == 0 {
		return time.Second
	}
	return e.opts.FlushInterval
}

// flushLoop flushes the buffer every iv, so items reach the file while the
// crawl is quiet too.
func (e *Exporter) flushLoop(iv time.Duration) {
	defer close(e.flushDone)
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-e.stopFlush:
			return
		case <-t.C:
			e.mu.Lock()
			if !e.closed && e.bw.Buffered() > 0 {
				_ = e.bw.Flush() // a write error is reported by the next item or Close
				e.lastFlush = time.Now()
			}
			e.mu.Unlock()
		}
	}
}

func (e *Exporter) open() error {
	var existing []byte // content kept from an earlier run, for appending
	if e.w == nil {
		if dir := filepath.Dir(e.path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("feed %s: cannot create its directory: %w", e.path, err)
			}
		}
		flag := os.O_RDWR | os.O_CREATE
		if e.opts.Overwrite && !e.opts.Resume {
			flag |= os.O_TRUNC
		}
		f, err := os.OpenFile(e.path, flag, 0o644)
		if err != nil {
			return fmt.Errorf("feed %s: %w", e.path, err)
		}
		e.file = f
		if e.opts.Resume {
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("feed %s: %w", e.path, err)
			}
			if st.Size() < e.opts.ResumeOffset {
				return fmt.Errorf("feed %s: cannot resume at byte %d: the file has only %d bytes (was it replaced since the job was paused?)",
					e.path, e.opts.ResumeOffset, st.Size())
			}
			if err := f.Truncate(e.opts.ResumeOffset); err != nil {
				return fmt.Errorf("feed %s: %w", e.path, err)
			}
		}
		existing, err = io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("feed %s: %w", e.path, err)
		}
		e.bw = bufio.NewWriterSize(f, 64<<10)
		e.cw = &countingWriter{w: e.bw}
	} else {
		e.bw = bufio.NewWriterSize(e.w, 64<<10)
		e.cw = &countingWriter{w: e.bw}
	}
	return e.prepare(existing)
}

// layout is what an exporter keeps of an existing file and writes before
// its first item.
type layout struct {
	keep   int64    // bytes of existing content kept
	prefix []byte   // written before the first item
	header []string // csv: the columns
	wrote  bool     // json: the array already holds an item
}

// inspect decides how to continue existing content (empty for a new or
// truncated file), or says why it cannot be continued.
func (e *Exporter) inspect(existing []byte) (layout, error) {
	size := int64(len(existing))
	l := layout{keep: size}
	switch e.opts.Format {
	case JSONLines:
		if size > 0 && existing[size-1] != '\n' {
			l.prefix = []byte("\n")
		}
	case JSON:
		trimmed := bytes.TrimRight(existing, " \t\r\n")
		switch {
		case len(trimmed) == 0:
			l.keep, l.prefix = 0, []byte("[")
		case e.opts.Resume && !bytes.HasSuffix(trimmed, []byte("]")):
			// Cut at an Offset: the array is open, ending with "[" or an item.
			l.keep = int64(len(trimmed))
			l.wrote = trimmed[len(trimmed)-1] != '['
		default:
			if trimmed[len(trimmed)-1] != ']' || trimmed[0] != '[' {
				return l, fmt.Errorf("feed %s: cannot append: the file is not a JSON array; overwrite it with -O or export to a .jsonl file", e.path)
			}
			body := bytes.TrimRight(trimmed[:len(trimmed)-1], " \t\r\n")
			l.keep = int64(len(body))
			l.wrote = body[len(body)-1] != '['
		}
	case CSV:
		if size > 0 {
			hdr, err := csv.NewReader(bytes.NewReader(existing)).Read()
			if err != nil {
				return l, fmt.Errorf("feed %s: cannot append: the existing file has no readable CSV header (%v); overwrite it with -O", e.path, err)
			}
			if len(e.opts.Fields) > 0 && !slices.Equal(hdr, e.opts.Fields) {
				return l, fmt.Errorf("feed %s: cannot append: the file's columns %v differ from the fields %v; overwrite it with -O or change FEED_EXPORT_FIELDS",
					e.path, hdr, e.opts.Fields)
			}
			l.header = hdr
			if existing[size-1] != '\n' {
				l.prefix = []byte("\n")
			}
		} else if len(e.opts.Fields) > 0 {
			l.header = slices.Clone(e.opts.Fields)
		}
	}
	return l, nil
}

// Check reports, without changing anything, whether Open would fail: a
// directory that cannot be created, a file that cannot be written, or
// existing content that cannot be continued (not a JSON array, other CSV
// columns, too short to resume). The CLI calls it before a crawl starts.
func (e *Exporter) Check() error {
	if e.w != nil {
		return nil
	}
	dir := filepath.Dir(e.path)
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("feed %s: %s is not a directory", e.path, d)
			}
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	existing, err := os.ReadFile(e.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	case err != nil:
		return fmt.Errorf("feed %s: %w", e.path, err)
	default:
		f, err := os.OpenFile(e.path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("feed %s: %w", e.path, err)
		}
		f.Close()
	}
	if e.opts.Resume {
		if int64(len(existing)) < e.opts.ResumeOffset {
			return fmt.Errorf("feed %s: cannot resume at byte %d: the file has only %d bytes (was it replaced since the job was paused?)",
				e.path, e.opts.ResumeOffset, len(existing))
		}
		existing = existing[:e.opts.ResumeOffset]
	} else if e.opts.Overwrite {
		existing = nil
	}
	_, err = e.inspect(existing)
	return err
}

// prepare positions the file after existing content and writes what the
// format needs before the first item.
func (e *Exporter) prepare(existing []byte) error {
	l, err := e.inspect(existing)
	if err != nil {
		return err
	}
	e.header, e.wrote = l.header, l.wrote
	if e.opts.Format == CSV {
		e.csvw = csv.NewWriter(e.cw)
	}
	if e.file != nil {
		if l.keep < int64(len(existing)) {
			if err := e.file.Truncate(l.keep); err != nil {
				return fmt.Errorf("feed %s: %w", e.path, err)
			}
		}
		if _, err := e.file.Seek(l.keep, io.SeekStart); err != nil {
			return fmt.Errorf("feed %s: %w", e.path, err)
		}
	}
	e.start = l.keep
	if _, err := e.cw.Write(l.prefix); err != nil {
		return err
	}
	if e.opts.Format == CSV && e.header != nil && len(existing) == 0 {
		if err := e.writeRecord(e.header); err != nil {
			return err
		}
	}
	e.offset = e.start + e.cw.n
	return nil
}

func (e *Exporter) writeRecord(rec []string) error {
	if err := e.csvw.Write(rec); err != nil {
		return err
	}
	e.csvw.Flush()
	return e.csvw.Error()
}

// ProcessItem writes item and passes it on unchanged. An item that cannot
// be encoded is an error of kind ErrItem (the engine drops it and counts
// it); a write error is returned as is.
func (e *Exporter) ProcessItem(ctx context.Context, item any) (any, error) {
	obj, err := encodeItem(item)
	if err != nil {
		return nil, err
	}
	var sel []byte
	if len(e.opts.Fields) > 0 && e.opts.Format != CSV {
		if sel, err = selectFields(obj, e.opts.Fields); err != nil {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: err.Error()}
		}
		obj = sel
	}
	var fields []field
	if e.opts.Format == CSV {
		if fields, err = fieldsOf(obj); err != nil {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: err.Error()}
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.opened || e.closed {
		return nil, fmt.Errorf("feed %s: item exported while the exporter is not open", e.path)
	}
	switch e.opts.Format {
	case JSONLines:
		_, err = e.cw.Write(append(obj, '\n'))
	case JSON:
		err = e.writeJSON(obj)
	case CSV:
		err = e.writeCSV(fields)
	}
	if err != nil {
		return nil, fmt.Errorf("feed %s: %w", e.path, err)
	}
	e.offset = e.start + e.cw.n
	e.items++
	if iv := e.flushInterval(); iv < 0 || time.Since(e.lastFlush) >= iv {
		if err := e.bw.Flush(); err != nil {
			return nil, fmt.Errorf("feed %s: %w", e.path, err)
		}
		e.lastFlush = time.Now()
	}
	return item, nil
}

func (e *Exporter) writeJSON(obj []byte) error {
	sep := "\n"
	if e.wrote {
		sep = ",\n"
	}
	if e.opts.Indent > 0 {
		var b bytes.Buffer
		pad := bytes.Repeat([]byte(" "), e.opts.Indent)
		if err := json.Indent(&b, obj, string(pad), string(pad)); err != nil {
			return err
		}
		obj = append(pad, b.Bytes()...)
	}
	if _, err := io.WriteString(e.cw, sep); err != nil {
		return err
	}
	if _, err := e.cw.Write(obj); err != nil {
		return err
	}
	e.wrote = true
	return nil
}

func (e *Exporter) writeCSV(fields []field) error {
	if e.header == nil {
		e.header = make([]string, len(fields))
		for i, f := range fields {
			e.header[i] = f.name
		}
		if err := e.writeRecord(e.header); err != nil {
			return err
		}
	}
	byName := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		byName[f.name] = f.value
	}
	rec := make([]string, len(e.header))
	for i, h := range e.header {
		rec[i] = cellText(byName[h])
	}
	return e.writeRecord(rec)
}

// Offset returns the number of bytes of the file that hold complete items
// (and the header): where the next item will go. For the json format the
// closing bracket that Close writes comes after it. Save it with a job's
// state (after Flush) and pass it back as Options.ResumeOffset to continue
// the file without duplicates.
func (e *Exporter) Offset() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.offset
}

// ResumeAt makes Open continue the file at offset, as Options.Resume and
// ResumeOffset do: a resumed job (JOBDIR) calls it with the offset it
// saved. Call it before Open.
func (e *Exporter) ResumeAt(offset int64) {
	e.mu.Lock()
	e.opts.Resume, e.opts.ResumeOffset = true, offset
	e.mu.Unlock()
}

// Items returns the number of items written by this exporter.
func (e *Exporter) Items() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.items
}

// Flush writes buffered items to the file (it does not fsync).
func (e *Exporter) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.opened || e.closed {
		return nil
	}
	return e.bw.Flush()
}

// Close finishes the file (the json format's closing bracket), flushes and
// closes it. It implements pipeline.Closer; later calls do nothing.
func (e *Exporter) Close(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.opened || e.closed {
		return nil
	}
	e.closed = true
	if e.stopFlush != nil {
		close(e.stopFlush)
		e.mu.Unlock()
		<-e.flushDone
		e.mu.Lock()
	}
	var errs []error
	if e.opts.Format == JSON {
		if _, err := io.WriteString(e.cw, "\n]\n"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.bw.Flush(); err != nil {
		errs = append(errs, err)
	}
	if e.file != nil {
		if err := e.file.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("feed %s: %w", e.path, err)
	}
	return nil
}
