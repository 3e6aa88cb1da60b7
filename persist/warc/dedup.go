package warc

import (
	"errors"
	"os"
	"strings"
	"sync"
	"time"
)

// original is the capture a revisit record refers to.
type original struct {
	url  string
	date time.Time
}

// dedupTable remembers the payload digests archived so far: the last one
// of each URL (for DedupURL, and for the server-not-modified revisits of
// 304 answers), or the first capture of each digest (DedupDigest).
type dedupTable struct {
	mode     Dedup
	mu       sync.Mutex
	byURL    map[string]urlCapture
	byDigest map[string]original
}

type urlCapture struct {
	digest string
	date   time.Time
}

func newDedupTable(mode Dedup) *dedupTable {
	t := &dedupTable{mode: mode}
	switch mode {
	case DedupURL:
		t.byURL = map[string]urlCapture{}
	case DedupDigest:
		t.byURL = map[string]urlCapture{}
		t.byDigest = map[string]original{}
	}
	return t
}

// claim returns the earlier capture whose payload duplicates this one, or
// nil; in that case, with add, this capture is recorded as the original of
// its payload at once, so that of two identical payloads written at the
// same time one is the revisit of the other.
func (t *dedupTable) claim(url, digest string, date time.Time, add bool) *original {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o := t.find(url, digest); o != nil {
		return o
	}
	if add {
		t.addLocked(url, digest, date)
	}
	return nil
}

// find is claim's lookup; t.mu is held.
func (t *dedupTable) find(url, digest string) *original {
	switch t.mode {
	case DedupURL:
		if c, ok := t.byURL[url]; ok && c.digest == digest {
			return &original{url, c.date}
		}
	case DedupDigest:
		if o, ok := t.byDigest[digest]; ok {
			return &o
		}
	}
	return nil
}

// lastOf returns the last full capture of url, or nil (always nil with
// DedupOff, which keeps nothing).
func (t *dedupTable) lastOf(url string) *original {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.byURL[url]; ok {
		return &original{url, c.date}
	}
	return nil
}

// add records a full capture.
func (t *dedupTable) add(url, digest string, date time.Time) {
	if t.mode == DedupOff {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addLocked(url, digest, date)
}

func (t *dedupTable) addLocked(url, digest string, date time.Time) {
	if t.mode == DedupOff {
		return
	}
	t.byURL[url] = urlCapture{digest, date}
	if t.byDigest != nil {
		if _, ok := t.byDigest[digest]; !ok {
			t.byDigest[digest] = original{url, date}
		}
	}
}

// seed reads the CDXJ indexes of dir, oldest file first, so that a crawl
// writing into a folder that holds earlier crawls deduplicates against
// them.
func (t *dedupTable) seed(dir string) error {
	if t.mode == DedupOff {
		return nil
	}
	files, err := ListFiles(dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, openSuffix) {
			continue
		}
		es, err := ReadIndex(IndexPath(f))
		if errors.Is(err, os.ErrNotExist) {
			if es, err = IndexFile(f); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		// The index is sorted by URL: replay the captures in time order
		// so that the last capture of a URL wins.
		byTime := append([]Entry(nil), es...)
		sortByTime(byTime)
		for _, e := range byTime {
			if e.Type == TypeResponse && e.Status >= 200 && e.Status < 300 && e.Digest != "" {
				t.add(e.URL, e.Digest, e.Time)
			}
		}
	}
	return nil
}
