// Package warc writes and reads web archives in the WARC 1.1 format
// (ISO 28500:2017): request and response records of every exchange, revisit
// records for payloads already archived, a warcinfo record opening each
// file, a CDXJ index beside each file, and an archive reader that answers a
// URL from a folder of WARC files (replay).
//
// Files are gzip-compressed one record per gzip member, so that any record
// can be read from its offset alone, and a file cut short by a crash loses
// at most its last record (Writer cuts it when it reopens the folder).
//
// The package knows nothing of the crawler: the Warc downloader middleware
// (package middleware) feeds it the exchanges the downloader captured.
package warc

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record types (WARC-Type).
const (
	TypeWarcinfo = "warcinfo"
	TypeRequest  = "request"
	TypeResponse = "response"
	TypeRevisit  = "revisit"
	TypeResource = "resource"
	TypeMetadata = "metadata"
)

// Revisit profiles (WARC-Profile of a revisit record).
const (
	ProfileIdenticalPayload  = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	ProfileServerNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
)

// Version is the record version line this package writes.
const Version = "WARC/1.1"

// Header is a record's named fields, in the order they are written. Names
// are compared case-insensitively.
type Header [][2]string

// Get returns the first value of name, or "".
func (h Header) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// Set replaces the value of name, or adds the field at the end.
func (h *Header) Set(name, value string) {
	for i, f := range *h {
		if strings.EqualFold(f[0], name) {
			(*h)[i][1] = value
			return
		}
	}
	*h = append(*h, [2]string{name, value})
}

// Add appends a field.
func (h *Header) Add(name, value string) { *h = append(*h, [2]string{name, value}) }

// Record is one WARC record: its header fields and its block (for request
// and response records, the HTTP message as sent or received).
type Record struct {
	Header Header
	Block  []byte
}

// Type returns WARC-Type.
func (r *Record) Type() string { return r.Header.Get("WARC-Type") }

// TargetURI returns WARC-Target-URI.
func (r *Record) TargetURI() string { return r.Header.Get("WARC-Target-URI") }

// ID returns WARC-Record-ID.
func (r *Record) ID() string { return r.Header.Get("WARC-Record-ID") }

// Date returns WARC-Date parsed; the zero time when it is missing or bad.
func (r *Record) Date() time.Time {
	t, _ := ParseDate(r.Header.Get("WARC-Date"))
	return t
}

// HTTP splits a request, response or revisit block into its HTTP head
// (start line and header fields, without the blank line) and its payload.
// ok is false when the block holds no HTTP head.
func (r *Record) HTTP() (head, payload []byte, ok bool) {
	if i := bytes.Index(r.Block, []byte("\r\n\r\n")); i >= 0 {
		return r.Block[:i+2], r.Block[i+4:], true
	}
	return nil, nil, false
}

// writeTo writes the record's version line, header fields, Content-Length
// and block, as the WARC format lays them out.
func (r *Record) writeTo(w io.Writer) error { return writeRecord(w, r.Header, r.Block) }

// writeRecord writes a record whose block is the concatenation of parts,
// so that a response's head and payload need not be copied into one
// slice first.
func writeRecord(w io.Writer, h Header, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := headPool.Get().(*[]byte)
	defer headPool.Put(b)
	*b = appendRecordHead((*b)[:0], h, n)
	if _, err := w.Write(*b); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	_, err := w.Write(recordEnd)
	return err
}

// appendRecord appends to buf the record of header h and block parts, as
// writeRecord writes it.
func appendRecord(buf []byte, h Header, parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf = appendRecordHead(buf, h, n)
	for _, p := range parts {
		buf = append(buf, p...)
	}
	return append(buf, recordEnd...)
}

// appendRecordHead appends to buf a record's version line, header fields
// and Content-Length (n) up to the blank line before its block.
func appendRecordHead(buf []byte, h Header, n int) []byte {
	buf = append(buf, Version+"\r\n"...)
	for _, f := range h {
		if strings.EqualFold(f[0], "Content-Length") {
			continue
		}
		buf = append(append(append(append(buf, f[0]...), ": "...), sanitizeField(f[1])...), "\r\n"...)
	}
	return append(strconv.AppendInt(append(buf, "Content-Length: "...), int64(n), 10), "\r\n\r\n"...)
}

// recordEnd follows every record's block.
var recordEnd = []byte("\r\n\r\n")

var headPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// sanitizeField keeps a field value on one line: a CR or LF in a value
// (an URL from a hostile page) would start a field of its own.
func sanitizeField(v string) string {
	if strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, '\n') < 0 { // vectorized, unlike ContainsAny
		return v
	}
	return strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(v)
}

// DateFormat is how WARC-Date is written: UTC, to the microsecond (WARC 1.1
// allows fractions of a second).
const DateFormat = "2006-01-02T15:04:05.000000Z"

// FormatDate formats t as a WARC-Date.
func FormatDate(t time.Time) string { return t.UTC().Format(DateFormat) }

// ParseDate parses a WARC-Date, with or without a fraction of a second.
func ParseDate(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// NewRecordID returns a new WARC-Record-ID: a random (version 4) UUID URN
// in angle brackets.
func NewRecordID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [47]byte
	n := copy(b[:], "<urn:uuid:")
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[n] = '-'
			n++
		}
		hex.Encode(b[n:n+2], []byte{c})
		n += 2
	}
	b[n] = '>'
	return string(b[:n+1])
}

// Digest returns the WARC digest of b: "sha1:" and the base32 SHA-1, the
// form most archives and tools use for WARC-Payload-Digest and
// WARC-Block-Digest.
func Digest(b []byte) string { return digestOf(b) }

// digestOf is Digest of the concatenation of parts.
func digestOf(parts ...[]byte) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha1.Size]byte
	var b [5 + 32]byte // "sha1:" and 20 bytes in base32, in one allocation
	copy(b[:], "sha1:")
	base32.StdEncoding.Encode(b[5:], h.Sum(sum[:0]))
	return string(b[:])
}
