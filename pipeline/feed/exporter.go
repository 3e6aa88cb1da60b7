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
	"os"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// This file is the writing side of an Exporter: its options, Open and the
// background flusher, the encoding of items (jsonl, json, csv), Flush and
// Close. How an existing file is continued or resumed (append, JOBDIR
// offsets) is in resume.go.

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
	// Settings are read by the storage of a feed URI (s3://...: the
	// FEED_STORAGE_S3_* settings); nil means the defaults. Local files
	// ignore them.
	Settings *settings.Settings

	// The options of a sink (a target URI whose scheme is registered
	// with RegisterSink); see sinkfeed.go.

	// BatchItems is how many items a sink stores in one write (0 =
	// DefaultBatchItems).
	BatchItems int
	// BufferItems bounds the items waiting for a sink (0 =
	// DefaultBufferItems): when it is full, the crawl waits.
	BufferItems int
	// RetryTimeout is how long a sink's server may stay unavailable
	// before the crawl stops (0 = DefaultRetryTimeout).
	RetryTimeout time.Duration
	// SinkParams are added to the target URI's query (table, key...).
	SinkParams map[string]string
	// Clock times a sink's flushes and retries (nil = the wall clock).
	Clock clock.Clock
}

// Exporter writes items to one file in one format. It implements
// pipeline.Stage, pipeline.Opener and pipeline.Closer; it is safe
// for concurrent use. The file is opened by Open, not by New.
type Exporter struct {
	path string
	w    io.Writer // set by NewWriter instead of path
	st   Storage   // set for a feed URI (storage.go) instead of a file
	opts Options

	mu        sync.Mutex
	file      *os.File
	stream    bool     // file is not a regular file: written as a stream
	pending   *os.File // a stream opened by Check, for Open
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

	sink *sinkFeed // a sink target: every method goes to it
}

// New returns an exporter to path. The format comes from opts.Format or,
// when empty, from path's extension. Bad options are reported here.
func New(path string, opts Options) (*Exporter, error) {
	if path == "" {
		return nil, errors.New("feed: empty file path")
	}
	if IsSink(path) {
		return newSinkExporter(path, opts)
	}
	st, err := storageFor(path, opts.Settings)
	if err != nil {
		return nil, err
	}
	named, gz := stripGzip(path)
	if gz && st == nil {
		return nil, fmt.Errorf("feed %s: local feeds are not compressed: drop the .gz (and compress the file after the crawl), or export to object storage (s3://...), which gzips .gz feeds", path)
	}
	if opts.Format == "" {
		f, err := FormatFromPath(named)
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
	return &Exporter{path: path, st: st, opts: opts}, nil
}

// Remote reports whether the feed goes to a storage named by a URI
// (s3://...) rather than to a local file or a writer.
func (e *Exporter) Remote() bool { return e.st != nil }

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

// setWriter buffers writes to w.
func (e *Exporter) setWriter(w io.Writer) {
	e.bw = bufio.NewWriterSize(w, 64<<10)
	e.cw = &countingWriter{w: e.bw}
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
	if e.sink != nil {
		return e.sink.open(ctx, e.path, c)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opened {
		return fmt.Errorf("feed %s: already opened", e.path)
	}
	if err := e.open(ctx, c); err != nil {
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

func (e *Exporter) writeRecord(rec []string) error {
	if err := e.csvw.Write(rec); err != nil {
		return err
	}
	e.csvw.Flush()
	return e.csvw.Error()
}

// ProcessItem writes item and passes it on unchanged. An item that cannot
// be encoded is an error of kind ErrItem (the engine drops it and counts
// it); a write error (a full disk) is of kind pipeline.ErrFatal: the
// engine stops the crawl.
func (e *Exporter) ProcessItem(ctx context.Context, item any) (any, error) {
	obj, err := encodeItem(item)
	if err != nil {
		return nil, err
	}
	if e.sink != nil {
		return e.sinkItem(ctx, item, obj)
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
		// The file cannot be written (a full disk): the crawl must stop
		// rather than fetch pages whose items would be lost.
		return nil, pipeline.Fatal(fmt.Errorf("feed %s: %w", e.path, err))
	}
	e.offset = e.start + e.cw.n
	e.items++
	if iv := e.flushInterval(); iv < 0 || time.Since(e.lastFlush) >= iv {
		if err := e.bw.Flush(); err != nil {
			return nil, pipeline.Fatal(fmt.Errorf("feed %s: %w", e.path, err))
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

// Items returns the number of items written by this exporter.
func (e *Exporter) Items() int64 {
	if e.sink != nil {
		return e.sink.items()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.items
}

// Flush writes buffered items to the file (it does not fsync).
//
// For a sink, Flush waits until every item exported so far is stored.
func (e *Exporter) Flush() error {
	if e.sink != nil {
		return e.sink.flush()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.opened || e.closed {
		return nil
	}
	if err := e.bw.Flush(); err != nil {
		return err
	}
	if e.st != nil {
		return e.st.Sync(e.offset)
	}
	return nil
}

// Close finishes the file (the json format's closing bracket), flushes and
// closes it. It implements pipeline.Closer; later calls do nothing.
func (e *Exporter) Close(ctx context.Context) error {
	if e.sink != nil {
		return e.sink.close(ctx, e.path)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending != nil { // checked but never opened
		e.pending.Close()
		e.pending = nil
	}
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
	if e.st != nil && len(errs) == 0 {
		if err := e.st.Close(ctx); err != nil {
			return err // a storage's errors name the feed and what is kept
		}
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
