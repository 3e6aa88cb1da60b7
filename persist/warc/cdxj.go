package warc

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gocrawl/gocrawl/internal/atomicfile"
)

// Entry is one line of a CDXJ index: where the capture of a URL lies in
// which file. The index beside each WARC file (NAME.cdxj beside
// NAME.warc.gz) holds one entry per response, revisit and resource record,
// sorted by SURT key and time, in the layout pywb and other wayback tools
// read:
//
//	com,example)/page 20260102150405 {"url":"https://example.com/page","mime":"text/html","status":"200","digest":"sha1:...","length":"1234","offset":"5678","filename":"x.warc.gz"}
type Entry struct {
	SURT   string
	Time   time.Time
	URL    string
	Type   string // WARC-Type of the record
	Method string // the request's method ("" for GET)
	// RequestBody is the digest of the request's body ("" for none): a
	// POST of the same URL with another body is another capture.
	RequestBody string
	Status      int
	MIME        string
	Digest      string
	Offset      int64
	Length      int64
	File        string // the WARC file's base name
}

type entryJSON struct {
	URL      string `json:"url"`
	Method   string `json:"method,omitempty"`
	ReqBody  string `json:"request_body_digest,omitempty"`
	MIME     string `json:"mime,omitempty"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// TimestampFormat is the 14-digit timestamp of CDX indexes and wayback URLs.
const TimestampFormat = "20060102150405"

// Line formats e as a CDXJ line (without the newline).
func (e Entry) Line() string { return string(e.appendLine(nil)) }

// appendLine appends e's CDXJ line to b: the JSON block is written field
// by field, as encoding/json writes an entryJSON (same order, same
// escapes), without its reflection.
func (e Entry) appendLine(b []byte) []byte {
	b = append(b, e.SURT...)
	b = append(b, ' ')
	b = e.Time.UTC().AppendFormat(b, TimestampFormat)
	b = append(b, ` {"url":`...)
	b = appendJSONString(b, e.URL)
	if e.Method != "" {
		b = appendJSONString(append(b, `,"method":`...), e.Method)
	}
	if e.RequestBody != "" {
		b = appendJSONString(append(b, `,"request_body_digest":`...), e.RequestBody)
	}
	mime := e.MIME
	if e.Type == TypeRevisit {
		mime = "warc/revisit"
	}
	if mime != "" {
		b = appendJSONString(append(b, `,"mime":`...), mime)
	}
	if e.Status > 0 {
		b = append(strconv.AppendInt(append(b, `,"status":"`...), int64(e.Status), 10), '"')
	}
	if e.Digest != "" {
		b = appendJSONString(append(b, `,"digest":`...), e.Digest)
	}
	b = append(strconv.AppendInt(append(b, `,"length":"`...), e.Length, 10), '"')
	b = append(strconv.AppendInt(append(b, `,"offset":"`...), e.Offset, 10), '"')
	return appendFilename(b, e.File)
}

// appendFilename ends a CDXJ line: its last field, the file's name.
func appendFilename(b []byte, file string) []byte {
	return append(appendJSONString(append(b, `,"filename":`...), file), '}')
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included). Printable ASCII, what URLs,
// digests and media types are made of, is done here; a string holding
// anything else is left to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		b = append(append(b, s[start:i]...), esc...)
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}

// ParseLine reads a CDXJ line written by Line.
func ParseLine(line string) (Entry, error) {
	key, rest, ok1 := strings.Cut(line, " ")
	ts, js, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return Entry{}, fmt.Errorf("not a CDXJ line: %q", truncate(line, 60))
	}
	t, err := time.Parse(TimestampFormat, ts)
	if err != nil {
		return Entry{}, fmt.Errorf("bad timestamp %q", ts)
	}
	var j entryJSON
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		return Entry{}, fmt.Errorf("bad JSON block: %v", err)
	}
	e := Entry{SURT: key, Time: t, URL: j.URL, Method: j.Method, RequestBody: j.ReqBody, MIME: j.MIME, Digest: j.Digest, File: j.Filename, Type: TypeResponse}
	if j.MIME == "warc/revisit" {
		e.Type, e.MIME = TypeRevisit, ""
	}
	e.Status, _ = strconv.Atoi(j.Status)
	e.Offset, _ = strconv.ParseInt(j.Offset, 10, 64)
	e.Length, _ = strconv.ParseInt(j.Length, 10, 64)
	return e, nil
}

// SortEntries sorts entries the way a CDXJ index is sorted: by line.
func SortEntries(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int {
		if c := strings.Compare(a.SURT, b.SURT); c != 0 {
			return c
		}
		return a.Time.Compare(b.Time)
	})
}

func sortByTime(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int { return a.Time.Compare(b.Time) })
}

// WriteIndex writes entries, sorted, to path (through a temporary file
// renamed over it, synced).
func WriteIndex(path string, es []Entry) error {
	SortEntries(es)
	err := atomicfile.Write(path, 0o644, func(f *os.File) error {
		w := bufio.NewWriter(f)
		var line []byte
		for _, e := range es {
			line = append(e.appendLine(line[:0]), '\n')
			w.Write(line)
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing the index %s: %w", path, err)
	}
	return nil
}

// indexLine is an Entry as a Writer keeps it until its file is closed:
// its CDXJ line, formatted when its record is written, less the file name
// that all lines of a file share, and what sorts it. A crawl's file holds
// up to hundreds of thousands of them: one string is lighter to keep, and
// for the collector to scan, than an Entry.
type indexLine struct {
	line    string // the CDXJ line up to its filename field
	surtLen int    // line[:surtLen] is the SURT key
	time    int64  // Entry.Time, in Unix nanoseconds
}

// newIndexLine formats e's line in buf (returned, for reuse).
func newIndexLine(e Entry, buf []byte) (indexLine, []byte) {
	e.File = ""
	buf = e.appendLine(buf[:0])
	line := buf[:len(buf)-len(`,"filename":""}`)]
	return indexLine{line: string(line), surtLen: len(e.SURT), time: e.Time.UnixNano()}, buf
}

// writeIndexLines is WriteIndex of the lines of file: sorted as
// SortEntries sorts.
func writeIndexLines(path, file string, lines []indexLine) error {
	slices.SortStableFunc(lines, func(a, b indexLine) int {
		if c := strings.Compare(a.line[:a.surtLen], b.line[:b.surtLen]); c != 0 {
			return c
		}
		return cmp.Compare(a.time, b.time)
	})
	err := atomicfile.Write(path, 0o644, func(f *os.File) error {
		w := bufio.NewWriter(f)
		end := append(appendFilename(nil, file), '\n')
		for _, l := range lines {
			w.WriteString(l.line)
			w.Write(end)
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing the index %s: %w", path, err)
	}
	return nil
}

// ReadIndex reads a CDXJ file. Lines that are not CDXJ are an error naming
// the line.
func ReadIndex(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var es []Entry
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 || line[0] == '!' {
			continue
		}
		e, err := ParseLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		es = append(es, e)
	}
	return es, nil
}

// SURT returns the Sort-friendly URI Reordering Transform key of a URL, as
// wayback indexes use it: the host's labels reversed and comma-separated
// (lower case, without "www."), a port other than the scheme's default,
// then ")" and the path and query. "https://www.Example.com/a?b" gives
// "com,example)/a?b".
func SURT(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return strings.ToLower(raw)
	}
	return surtOf(u)
}

// SURTOf is SURT of a URL already parsed: SURTOf(u) == SURT(u.String())
// for an absolute u, without parsing it again.
func SURTOf(u *url.URL) string {
	if u.Host == "" {
		return strings.ToLower(u.String())
	}
	return surtOf(u)
}

// surtOf builds the key of u, which has a host, in one allocation.
func surtOf(u *url.URL) string {
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	port := u.Port()
	if (port == "80" && u.Scheme == "http") || (port == "443" && u.Scheme == "https") {
		port = ""
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b := make([]byte, 0, len(host)+len(port)+len(path)+len(u.RawQuery)+4)
	// The labels of host, last first, comma-separated.
	for end := len(host); ; {
		i := strings.LastIndexByte(host[:end], '.')
		b = append(b, host[i+1:end]...)
		if i < 0 {
			break
		}
		b = append(b, ',')
		end = i
	}
	if port != "" {
		b = append(append(b, ':'), port...)
	}
	b = appendLower(append(b, ')'), path)
	if u.RawQuery != "" {
		b = appendLower(append(b, '?'), u.RawQuery)
	}
	return string(b)
}

// appendLower appends s lower-cased as strings.ToLower does it for ASCII;
// other text goes through strings.ToLower.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return append(b, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
