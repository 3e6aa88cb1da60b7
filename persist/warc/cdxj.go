package warc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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
func (e Entry) Line() string {
	j := entryJSON{URL: e.URL, Method: e.Method, ReqBody: e.RequestBody, MIME: e.MIME, Digest: e.Digest,
		Length: strconv.FormatInt(e.Length, 10), Offset: strconv.FormatInt(e.Offset, 10), Filename: e.File}
	if e.Type == TypeRevisit {
		j.MIME = "warc/revisit"
	}
	if e.Status > 0 {
		j.Status = strconv.Itoa(e.Status)
	}
	b, _ := json.Marshal(j)
	return e.SURT + " " + e.Time.UTC().Format(TimestampFormat) + " " + string(b)
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
		for _, e := range es {
			w.WriteString(e.Line())
			w.WriteByte('\n')
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
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	key := strings.Join(labels, ",")
	if p := u.Port(); p != "" && !(p == "80" && u.Scheme == "http") && !(p == "443" && u.Scheme == "https") {
		key += ":" + p
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	key += ")" + strings.ToLower(path)
	if u.RawQuery != "" {
		key += "?" + strings.ToLower(u.RawQuery)
	}
	return key
}
