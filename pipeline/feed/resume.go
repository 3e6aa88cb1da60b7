package feed

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// This file is how an Exporter continues a file that already exists: an
// append (-o) keeps the content and continues it (a .jsonl file grows, a
// .json array stays open for more items, a .csv file keeps its header and
// columns); a resumed job (JOBDIR) cuts the file back to the Offset saved
// at its last checkpoint (ResumeAt) so that no item is written twice.
// open positions the file, inspect decides how to continue it (layout),
// prepare writes what comes before the first item; Check runs the same
// decision without changing the file. Existing content is never loaded:
// inspect reads its first bytes (the CSV header, at most maxHeader) and
// its last ones, so appending to a feed of any size costs a few kilobytes.
//
// A path that is not a regular file (a device such as /dev/stdout, a pipe,
// a FIFO, a shell's >(command)) is written as a stream: nothing is read,
// cut or appended to, and Resume does not apply. The writing of items is
// in exporter.go.

// maxHeader bounds the CSV header read from an existing file.
const maxHeader = 1 << 20

// content is existing content: its size and random access to it.
type content interface {
	Size() int64
	ReadAt(p []byte, off int64) (int, error)
}

// sizedFile is the first size bytes of a file.
type sizedFile struct {
	f    *os.File
	size int64
}

func (s sizedFile) Size() int64 { return s.size }
func (s sizedFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	if rest := s.size - off; int64(len(p)) > rest {
		n, err := s.f.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.f.ReadAt(p, off)
}

var empty content = bytes.NewReader(nil)

func (e *Exporter) open(ctx context.Context, cr *spider.Crawler) error {
	if e.w != nil {
		e.setWriter(e.w)
		return e.prepare(empty)
	}
	if e.st != nil {
		info := OpenInfo{Time: time.Now(), Resume: e.opts.Resume, Offset: e.opts.ResumeOffset}
		if cr != nil && cr.Spider != nil {
			info.Spider = cr.Spider.Name()
		}
		c, err := e.st.Open(ctx, info)
		if err != nil {
			return err
		}
		e.setWriter(e.st)
		return e.prepare(c)
	}
	if dir := filepath.Dir(e.path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("feed %s: cannot create its directory: %w", e.path, err)
		}
	}
	if f := e.pending; f != nil { // a stream opened by Check
		e.pending = nil
		return e.openStream(f)
	}
	if st, err := os.Stat(e.path); err == nil && !st.Mode().IsRegular() {
		f, err := openStream(e.path, st)
		if err != nil {
			return err
		}
		return e.openStream(f)
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
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("feed %s: %w", e.path, err)
	}
	size := st.Size()
	if e.opts.Resume {
		if size < e.opts.ResumeOffset {
			return fmt.Errorf("feed %s: cannot resume at byte %d: the file has only %d bytes (was it replaced since the job was paused?)",
				e.path, e.opts.ResumeOffset, size)
		}
		if err := f.Truncate(e.opts.ResumeOffset); err != nil {
			return fmt.Errorf("feed %s: %w", e.path, err)
		}
		size = e.opts.ResumeOffset
	}
	e.setWriter(f)
	return e.prepare(sizedFile{f, size})
}

func (e *Exporter) openStream(f *os.File) error {
	e.file, e.stream = f, true
	e.setWriter(f)
	return e.prepare(empty)
}

// openStream opens a path that is not a regular file for writing. A FIFO
// is opened without blocking: with no process reading it, opening would
// wait forever (and Ctrl-C with it), so that is an error instead.
func openStream(path string, st fs.FileInfo) (*os.File, error) {
	if st.IsDir() {
		return nil, fmt.Errorf("feed %s: is a directory", path)
	}
	flag := os.O_WRONLY
	if st.Mode()&fs.ModeNamedPipe != 0 {
		flag |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("feed %s: no process is reading this FIFO; start the reader first", path)
	}
	if err != nil {
		return nil, fmt.Errorf("feed %s: %w", path, err)
	}
	return f, nil
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
// truncated file), or says why it cannot be continued. It reads only the
// first and last bytes of c.
func (e *Exporter) inspect(c content) (layout, error) {
	size := c.Size()
	l := layout{keep: size}
	switch e.opts.Format {
	case JSONLines:
		if size > 0 && byteAt(c, size-1) != '\n' {
			l.prefix = []byte("\n")
		}
	case JSON:
		last, b, ok := lastNonBlank(c, size)
		switch {
		case !ok:
			l.keep, l.prefix = 0, []byte("[")
		case e.opts.Resume && b != ']':
			// Cut at an Offset: the array is open, ending with "[" or an item.
			l.keep = last + 1
			l.wrote = b != '['
		default:
			if _, first, _ := firstNonBlank(c, size); b != ']' || first != '[' {
				return l, fmt.Errorf("feed %s: cannot append: the file is not a JSON array; overwrite it with -O or export to a .jsonl file", e.path)
			}
			before, bb, ok := lastNonBlank(c, last)
			if !ok {
				return l, fmt.Errorf("feed %s: cannot append: the file is not a JSON array; overwrite it with -O or export to a .jsonl file", e.path)
			}
			l.keep = before + 1
			l.wrote = bb != '['
		}
	case CSV:
		if size > 0 {
			hdr, err := csvHeader(c)
			if err != nil {
				return l, fmt.Errorf("feed %s: cannot append: the existing file has no readable CSV header (%v); overwrite it with -O", e.path, err)
			}
			if len(e.opts.Fields) > 0 && !slices.Equal(hdr, e.opts.Fields) {
				return l, fmt.Errorf("feed %s: cannot append: the file's columns %v differ from the fields %v; overwrite it with -O or change FEED_EXPORT_FIELDS",
					e.path, hdr, e.opts.Fields)
			}
			l.header = hdr
			if byteAt(c, size-1) != '\n' {
				l.prefix = []byte("\n")
			}
		} else if len(e.opts.Fields) > 0 {
			l.header = slices.Clone(e.opts.Fields)
		}
	}
	return l, nil
}

func byteAt(c content, off int64) byte {
	var b [1]byte
	if n, _ := c.ReadAt(b[:], off); n == 1 {
		return b[0]
	}
	return 0
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// lastNonBlank returns the offset and value of the last byte before end
// that is not blank, reading backwards a chunk at a time.
func lastNonBlank(c content, end int64) (int64, byte, bool) {
	var buf [32 << 10]byte
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		n, err := c.ReadAt(buf[:end-start], start)
		if n < int(end-start) && err != nil {
			return 0, 0, false
		}
		for i := n - 1; i >= 0; i-- {
			if !isBlank(buf[i]) {
				return start + int64(i), buf[i], true
			}
		}
		end = start
	}
	return 0, 0, false
}

// firstNonBlank returns the offset and value of the first byte before end
// that is not blank.
func firstNonBlank(c content, end int64) (int64, byte, bool) {
	var buf [32 << 10]byte
	for off := int64(0); off < end; {
		n, err := c.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		for i := range n {
			if !isBlank(buf[i]) {
				return off + int64(i), buf[i], true
			}
		}
		if n == 0 || (err != nil && err != io.EOF) {
			break
		}
		off += int64(n)
	}
	return 0, 0, false
}

// csvHeader reads the first record of c, which must end within maxHeader
// bytes.
func csvHeader(c content) ([]string, error) {
	r := csv.NewReader(io.NewSectionReader(c, 0, min(c.Size(), maxHeader)))
	r.FieldsPerRecord = -1
	hdr, err := r.Read()
	if err != nil {
		return nil, err
	}
	if off := r.InputOffset(); off >= maxHeader && c.Size() > maxHeader {
		return nil, fmt.Errorf("the header is longer than %d bytes", maxHeader)
	}
	return hdr, nil
}

// Check reports, without changing anything, whether Open would fail: a
// directory that cannot be created, a file that cannot be written, or
// existing content that cannot be continued (not a JSON array, other CSV
// columns, too short to resume). The CLI calls it before a crawl starts.
// A path that is not a regular file is opened for writing here and kept
// for Open (a FIFO needs its reader: opening and closing it would end the
// reader's input); without a reader, Check fails.
func (e *Exporter) Check() error {
	if e.sink != nil {
		return e.checkSink()
	}
	if e.w != nil {
		return nil
	}
	if e.st != nil {
		if _, err := e.inspect(empty); err != nil {
			return err
		}
		return e.st.Check(context.Background())
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
	st, err := os.Stat(e.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		_, err = e.inspect(empty)
		return err
	case err != nil:
		return fmt.Errorf("feed %s: %w", e.path, err)
	case !st.Mode().IsRegular():
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.pending != nil {
			return nil
		}
		f, err := openStream(e.path, st)
		if err != nil {
			return err
		}
		e.pending = f
		return nil
	}
	f, err := os.OpenFile(e.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("feed %s: %w", e.path, err)
	}
	defer f.Close()
	size := st.Size()
	if e.opts.Resume {
		if size < e.opts.ResumeOffset {
			return fmt.Errorf("feed %s: cannot resume at byte %d: the file has only %d bytes (was it replaced since the job was paused?)",
				e.path, e.opts.ResumeOffset, size)
		}
		size = e.opts.ResumeOffset
	} else if e.opts.Overwrite {
		size = 0
	}
	_, err = e.inspect(sizedFile{f, size})
	return err
}

// prepare positions the file after existing content and writes what the
// format needs before the first item.
func (e *Exporter) prepare(c content) error {
	l, err := e.inspect(c)
	if err != nil {
		return err
	}
	e.header, e.wrote = l.header, l.wrote
	if e.opts.Format == CSV {
		e.csvw = csv.NewWriter(e.cw)
	}
	if e.st != nil && l.keep < c.Size() {
		if err := e.st.Truncate(l.keep); err != nil {
			return err
		}
	}
	if e.file != nil && !e.stream {
		if l.keep < c.Size() {
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
	if e.opts.Format == CSV && e.header != nil && c.Size() == 0 {
		if err := e.writeRecord(e.header); err != nil {
			return err
		}
	}
	e.offset = e.start + e.cw.n
	return nil
}

// Offset returns the number of bytes of the file that hold complete items
// (and the header): where the next item will go. For the json format the
// closing bracket that Close writes comes after it. Save it with a job's
// state (after Flush) and pass it back as Options.ResumeOffset to continue
// the file without duplicates. For a stream it counts the bytes written by
// this run; for a sink, the items it stored.
func (e *Exporter) Offset() int64 {
	if e.sink != nil {
		return e.sink.items()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.offset
}

// ResumeAt makes Open continue the file at offset, as Options.Resume and
// ResumeOffset do: a resumed job (JOBDIR) calls it with the offset it
// saved. Call it before Open. A stream (not a regular file) is not
// resumed: its earlier content is out of reach.
func (e *Exporter) ResumeAt(offset int64) {
	if e.sink != nil {
		return // rows are upserted by key: nothing to cut
	}
	e.mu.Lock()
	e.opts.Resume, e.opts.ResumeOffset = true, offset
	e.mu.Unlock()
}
