package warc

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotArchived is the kind of the error of a lookup for a URL that the
// archive does not hold.
var ErrNotArchived = errors.New("not in the archive")

// Archive answers URLs from a folder of WARC files (or one file): the
// replay of a crawl. Every record is read when the archive is loaded, so
// a damaged file is reported at once, with its offset, rather than in the
// middle of a replay.
type Archive struct {
	root string
	// latest capture (response or revisit) of each request: "METHOD URL"
	// and, for a request with a body, its digest.
	byKey map[string]loc
	// latest capture of each "METHOD URL", whatever the request's body.
	byURL map[string]loc
	// first full response of each payload digest, and the last full
	// response of each URL: what revisit records stand for.
	byDigest  map[string]loc
	fullByURL map[string]loc
	records   int
}

type loc struct {
	file   string
	offset int64
}

// LoadArchive reads the WARC files of dir (or the one WARC file dir names).
// A file that cannot be read is a *CorruptError naming it and the offset.
func LoadArchive(dir string) (*Archive, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	files := []string{dir}
	if st.IsDir() {
		if files, err = ListFiles(dir); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s holds no WARC file (*.warc.gz, *.warc)", dir)
		}
	}
	a := &Archive{root: dir, byKey: map[string]loc{}, byURL: map[string]loc{}, byDigest: map[string]loc{}, fullByURL: map[string]loc{}}
	for _, f := range files {
		x := &Indexer{File: filepath.Base(f)}
		if _, err := Scan(f, func(rec *Record, pos Position) error {
			a.records++
			e, ok := x.Add(rec, pos)
			if !ok {
				return nil
			}
			l := loc{f, pos.Offset}
			a.byKey[key(e.Method, e.URL, e.RequestBody)] = l
			a.byURL[key(e.Method, e.URL, "")] = l
			if e.Type == TypeResponse && rec.Header.Get("WARC-Truncated") == "" {
				a.fullByURL[e.URL] = l
				if _, ok := a.byDigest[e.Digest]; !ok && e.Digest != "" {
					a.byDigest[e.Digest] = l
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func key(method, url, bodyDigest string) string {
	if method == "" {
		method = http.MethodGet
	}
	if bodyDigest != "" {
		return method + " " + url + " " + bodyDigest
	}
	return method + " " + url
}

// Len returns how many captures (responses and revisits) the archive
// answers.
func (a *Archive) Len() int { return len(a.byKey) }

// Capture is an archived response.
type Capture struct {
	URL     string
	Date    time.Time
	Status  Status
	Header  http.Header
	Payload []byte
	// Truncated is the record's WARC-Truncated ("" when whole).
	Truncated string
	// Protocol is the record's WARC-Protocol: "h2" for an exchange made
	// over HTTP/2 (archived in HTTP/1.1 form), "" for HTTP/1.x.
	Protocol string
	// File and Offset say where the record lies.
	File   string
	Offset int64
}

// Lookup returns the last capture of method and url, whatever the body of
// its request (HEAD is answered by a GET capture when it has none of its
// own). A revisit record is resolved to the response holding its payload.
// A URL the archive lacks gives an error of kind ErrNotArchived naming it.
func (a *Archive) Lookup(method, url string) (*Capture, error) {
	return a.lookup(a.byURL, method, url, "")
}

// LookupRequest is Lookup for a replay: the capture must be of a request
// with the same body (none, or byte for byte the same), so that POSTs of
// one URL with different bodies get their own answers.
func (a *Archive) LookupRequest(method, url string, body []byte) (*Capture, error) {
	d := ""
	if len(body) > 0 {
		d = Digest(body)
	}
	return a.lookup(a.byKey, method, url, d)
}

func (a *Archive) lookup(m map[string]loc, method, url, bodyDigest string) (*Capture, error) {
	l, ok := m[key(method, url, bodyDigest)]
	if !ok && method == http.MethodHead {
		l, ok = m[key(http.MethodGet, url, bodyDigest)]
	}
	if !ok {
		what := ""
		if bodyDigest != "" {
			what = " with a body of digest " + bodyDigest
		}
		return nil, fmt.Errorf("%w: %s %s%s (archive %s)", ErrNotArchived, method, url, what, a.root)
	}
	return a.read(l, 0)
}

func (a *Archive) read(l loc, depth int) (*Capture, error) {
	rec, err := ReadAt(l.file, l.offset)
	if err != nil {
		return nil, err
	}
	head, payload, ok := rec.HTTP()
	if !ok {
		return nil, &CorruptError{File: l.file, Offset: l.offset, Err: errors.New("the record holds no HTTP response")}
	}
	st, h, err := ParseResponseHead(head)
	if err != nil {
		return nil, &CorruptError{File: l.file, Offset: l.offset, Err: err}
	}
	c := &Capture{URL: rec.TargetURI(), Date: rec.Date(), Status: st, Header: h, Payload: payload,
		Truncated: rec.Header.Get("WARC-Truncated"), Protocol: rec.Header.Get("WARC-Protocol"), File: l.file, Offset: l.offset}
	if rec.Type() != TypeRevisit {
		return c, nil
	}
	if depth > 0 {
		return nil, &CorruptError{File: l.file, Offset: l.offset, Err: errors.New("a revisit record refers to another revisit")}
	}
	switch rec.Header.Get("WARC-Profile") {
	case ProfileServerNotModified:
		// The server said the page had not changed: the replay gives the
		// page as it was archived before.
		u := rec.Header.Get("WARC-Refers-To-Target-URI")
		if u == "" {
			u = c.URL
		}
		if ol, ok := a.fullByURL[u]; ok {
			orig, err := a.read(ol, depth+1)
			if err != nil {
				return nil, err
			}
			orig.URL, orig.Date = c.URL, c.Date
			return orig, nil
		}
		return c, nil // the 304 itself
	default:
		d := rec.Header.Get("WARC-Payload-Digest")
		ol, ok := a.byDigest[d]
		if !ok {
			return nil, fmt.Errorf("%s at offset %d: revisit of %s: no response in the archive has its payload %s",
				l.file, l.offset, c.URL, d)
		}
		orig, err := a.read(ol, depth+1)
		if err != nil {
			return nil, err
		}
		c.Payload = orig.Payload
		return c, nil
	}
}

// Describe names the archive in messages.
func (a *Archive) Describe() string {
	return fmt.Sprintf("%s (%d records, %d captures)", strings.TrimSuffix(a.root, "/"), a.records, len(a.byKey))
}
