package feed

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// This file is how an Exporter continues a file that already exists: an
// append (-o) keeps the content and continues it (a .jsonl file grows, a
// .json array stays open for more items, a .csv file keeps its header and
// columns); a resumed job (JOBDIR) cuts the file back to the Offset saved
// at its last checkpoint (ResumeAt) so that no item is written twice.
// open reads what is kept, inspect decides how to continue it (layout),
// prepare positions the file and writes what comes before the first item;
// Check runs the same decision without touching the file. The writing of
// items is in exporter.go.

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
