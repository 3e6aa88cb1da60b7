package warc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// ErrCorrupt is the kind of a *CorruptError, for errors.Is.
var ErrCorrupt = errors.New("corrupt WARC file")

// CorruptError says where a WARC file stops making sense: the file, the
// offset of the record (of its gzip member) that cannot be read, and why.
type CorruptError struct {
	File   string
	Offset int64
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: the record at offset %d cannot be read: %v", e.File, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Position is where a record lies in its file: the offset of its gzip
// member (or of its version line in an uncompressed file) and its length
// on disk.
type Position struct {
	Offset int64
	Length int64
}

// Limits of what a reader accepts from a file.
const (
	maxHeaderBytes = 1 << 20
	// DefaultMaxBlock is the largest record block a Reader loads.
	DefaultMaxBlock = 4 << 30
)

// Reader reads the records of a WARC file, compressed (one or more records
// per gzip member) or not, and tells where each lies.
type Reader struct {
	name string
	cr   *countingReader
	gz   bool
	zr   *gzip.Reader
	in   *bufio.Reader // the decompressed member being read
	// MaxBlock bounds the block of one record (DefaultMaxBlock if 0).
	MaxBlock int64
}

// NewReader reads the WARC records of r; name names the file in errors.
func NewReader(r io.Reader, name string) *Reader {
	cr := &countingReader{br: bufio.NewReaderSize(r, 64<<10)}
	magic, _ := cr.br.Peek(2)
	return &Reader{name: name, cr: cr, gz: len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b}
}

// Open opens the WARC file at path. Close the returned file when done.
func Open(path string) (*Reader, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return NewReader(f, path), f, nil
}

// Next returns the next record and where it lies; io.EOF after the last
// one. A record that cannot be read is a *CorruptError naming the file and
// the offset.
func (r *Reader) Next() (*Record, Position, error) {
	start := r.pos()
	if r.in == nil {
		if _, err := r.cr.br.Peek(1); err == io.EOF {
			return nil, Position{}, io.EOF
		}
		if r.gz {
			if err := r.nextMember(); err != nil {
				return nil, Position{}, &CorruptError{File: r.name, Offset: start, Err: err}
			}
		} else {
			r.in = bufio.NewReaderSize(r.cr, 32<<10)
		}
	}
	rec, err := r.parse()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, Position{}, &CorruptError{File: r.name, Offset: start, Err: err}
	}
	if r.gz {
		// One record per member is what this package writes; a member
		// holding more is read on at the next call.
		if _, err := r.in.Peek(1); err == io.EOF {
			r.in = nil
		} else if err != nil {
			return nil, Position{}, &CorruptError{File: r.name, Offset: start, Err: err}
		}
	} else if _, err := r.in.Peek(1); err == io.EOF {
		r.in = nil
	}
	return rec, Position{Offset: start, Length: r.pos() - start}, nil
}

// pos is the offset of the next unread byte of the file: for an
// uncompressed file, what the record parser has consumed.
func (r *Reader) pos() int64 {
	if !r.gz && r.in != nil {
		return r.cr.n - int64(r.in.Buffered())
	}
	return r.cr.n
}

func (r *Reader) nextMember() error {
	var err error
	if r.zr == nil {
		r.zr, err = gzip.NewReader(r.cr)
	} else {
		err = r.zr.Reset(r.cr)
	}
	if err != nil {
		return fmt.Errorf("not a gzip member: %w", err)
	}
	r.zr.Multistream(false)
	r.in = bufio.NewReaderSize(r.zr, 32<<10)
	return nil
}

// parse reads one record from r.in.
func (r *Reader) parse() (*Record, error) {
	line, err := readLine(r.in)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "WARC/1.") {
		return nil, fmt.Errorf("no WARC version line (got %q)", truncate(line, 40))
	}
	rec := &Record{}
	size := 0
	for {
		line, err := readLine(r.in)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if size += len(line); size > maxHeaderBytes {
			return nil, errors.New("record header larger than 1 MiB")
		}
		if (line[0] == ' ' || line[0] == '\t') && len(rec.Header) > 0 {
			last := &rec.Header[len(rec.Header)-1]
			last[1] += " " + strings.TrimSpace(line)
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("header line without a colon: %q", truncate(line, 40))
		}
		rec.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	n, err := strconv.ParseInt(rec.Header.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("missing or bad Content-Length %q", rec.Header.Get("Content-Length"))
	}
	limit := r.MaxBlock
	if limit <= 0 {
		limit = DefaultMaxBlock
	}
	if n > limit {
		return nil, fmt.Errorf("block of %d bytes is larger than the reader's limit of %d", n, limit)
	}
	rec.Block = make([]byte, n)
	if _, err := io.ReadFull(r.in, rec.Block); err != nil {
		return nil, fmt.Errorf("block shorter than its Content-Length %d: %w", n, err)
	}
	var end [4]byte
	if _, err := io.ReadFull(r.in, end[:]); err != nil || string(end[:]) != "\r\n\r\n" {
		return nil, errors.New("the block is not followed by the two CRLFs that end a record")
	}
	return rec, nil
}

func readLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return "", errors.New("header line too long")
	}
	if err != nil {
		if err == io.EOF && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return string(bytes.TrimRight(b, "\r\n")), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// countingReader counts the bytes consumed from the file, so that the
// offset of each gzip member is known. It is an io.ByteReader, so the gzip
// reader reads exactly one member and no further.
type countingReader struct {
	br *bufio.Reader
	n  int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// ReadAt reads the one record at pos.Offset of the file at path.
func ReadAt(path string, offset int64) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	r := NewReader(f, path)
	r.cr.n = offset
	rec, _, err := r.Next()
	if err == io.EOF {
		return nil, &CorruptError{File: path, Offset: offset, Err: errors.New("no record at this offset")}
	}
	return rec, err
}
