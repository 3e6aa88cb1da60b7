package warc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Scan reads every record of the WARC file at path, calling fn with each
// and where it lies. It returns the offset just past the last record read
// whole, and the first error: a *CorruptError when the file stops making
// sense (a truncated last record included), or fn's error.
func Scan(path string, fn func(rec *Record, pos Position) error) (end int64, err error) {
	r, f, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for {
		rec, pos, err := r.Next()
		if err == io.EOF {
			return end, nil
		}
		if err != nil {
			return end, err
		}
		if err := fn(rec, pos); err != nil {
			return end, err
		}
		end = pos.Offset + pos.Length
	}
}

// Indexer turns the records of one file, in order, into index entries. It
// remembers the method of each request record so that the response
// concurrent to it is indexed with it.
type Indexer struct {
	File     string // base name written in the entries
	requests map[string]requestKey
}

// requestKey is what an index keeps of a request record for its
// response: the method (when not GET) and the digest of its body.
type requestKey struct{ method, body string }

// Add returns the entry of rec, and false for the records an index leaves
// out (warcinfo, request, metadata).
func (x *Indexer) Add(rec *Record, pos Position) (Entry, bool) {
	switch rec.Type() {
	case TypeRequest:
		if head, body, ok := rec.HTTP(); ok {
			var k requestKey
			if m, _, _ := strings.Cut(string(head), " "); m != http.MethodGet {
				k.method = m
			}
			if len(body) > 0 {
				k.body = Digest(body)
			}
			if k != (requestKey{}) {
				if x.requests == nil {
					x.requests = map[string]requestKey{}
				}
				x.requests[rec.ID()] = k
			}
		}
		return Entry{}, false
	case TypeResponse, TypeRevisit, TypeResource:
	default:
		return Entry{}, false
	}
	e := Entry{URL: rec.TargetURI(), Type: rec.Type(), Time: rec.Date(), Offset: pos.Offset, Length: pos.Length,
		File: x.File, Digest: rec.Header.Get("WARC-Payload-Digest")}
	e.SURT = SURT(e.URL)
	if id := rec.Header.Get("WARC-Concurrent-To"); id != "" && x.requests != nil {
		k := x.requests[id]
		e.Method, e.RequestBody = k.method, k.body
		delete(x.requests, id)
	}
	if rec.Type() == TypeResource {
		e.MIME = mediaType(rec.Header.Get("Content-Type"))
		return e, true
	}
	if head, _, ok := rec.HTTP(); ok {
		if st, h, err := ParseResponseHead(head); err == nil {
			e.Status = st.Code
			e.MIME = mediaType(h.Get("Content-Type"))
		}
	}
	return e, true
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// Status is an HTTP response's status line.
type Status struct {
	Proto  string
	Code   int
	Reason string
}

// ParseResponseHead parses the HTTP head of a response block: the status
// line and the header fields.
func ParseResponseHead(head []byte) (Status, http.Header, error) {
	tr := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(head), strings.NewReader("\r\n"))))
	line, err := tr.ReadLine()
	if err != nil {
		return Status{}, nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, reason, _ := strings.Cut(rest, " ")
	var st Status
	st.Proto, st.Reason = proto, reason
	if st.Code, err = strconv.Atoi(code); err != nil || !strings.HasPrefix(proto, "HTTP/") {
		return Status{}, nil, errors.New("not an HTTP status line: " + truncate(line, 40))
	}
	mh, err := tr.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return Status{}, nil, err
	}
	return st, http.Header(mh), nil
}

// IndexFile scans the WARC file at path and writes its CDXJ index beside
// it (see IndexPath). It returns the entries and the scan's error.
func IndexFile(path string) ([]Entry, error) {
	x := &Indexer{File: filepath.Base(strings.TrimSuffix(path, openSuffix))}
	var es []Entry
	_, err := Scan(path, func(rec *Record, pos Position) error {
		if e, ok := x.Add(rec, pos); ok {
			es = append(es, e)
		}
		return nil
	})
	if err != nil {
		return es, err
	}
	return es, WriteIndex(IndexPath(path), es)
}

// IndexPath is where the CDXJ index of a WARC file lies: beside it, with
// .cdxj instead of .warc.gz.
func IndexPath(warcPath string) string {
	p := strings.TrimSuffix(warcPath, openSuffix)
	for _, ext := range []string{".warc.gz", ".warc"} {
		if strings.HasSuffix(p, ext) {
			return strings.TrimSuffix(p, ext) + ".cdxj"
		}
	}
	return p + ".cdxj"
}

// openSuffix marks a file still being written; it is dropped when the file
// is closed, and a file found with it was left by a crawl that was killed.
const openSuffix = ".open"

// ListFiles returns the WARC files of dir (.warc.gz and .warc, and those
// still open), sorted by name: the order they were written.
func ListFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := strings.TrimSuffix(e.Name(), openSuffix)
		if !e.IsDir() && (strings.HasSuffix(n, ".warc.gz") || strings.HasSuffix(n, ".warc")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}
