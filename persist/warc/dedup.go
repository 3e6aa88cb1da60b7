package warc

import (
	"errors"
	"hash/maphash"
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
//
// byURL holds one entry per URL archived: hundreds of thousands in a
// large crawl. Its keys and values are hashes and a date, without
// pointers, so that it takes 40 bytes or so per URL and the garbage
// collector need not scan it. The hashes are 128 bits: two URLs or two
// digests sharing one, the only way a wrong revisit could be written,
// are about as likely as a SHA-1 collision.
type dedupTable struct {
	mode     Dedup
	mu       sync.Mutex
	seeds    [2]maphash.Seed
	byURL    map[hash128]urlCapture
	byDigest map[string]original
}

// hash128 is a string's hash under both of a table's seeds.
type hash128 [2]uint64

func (t *dedupTable) hash(s string) hash128 {
	return hash128{maphash.String(t.seeds[0], s), maphash.String(t.seeds[1], s)}
}

type urlCapture struct {
	digest hash128
	date   int64 // Unix nanoseconds
}

func newDedupTable(mode Dedup) *dedupTable {
	t := &dedupTable{mode: mode, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	switch mode {
	case DedupURL:
		t.byURL = map[hash128]urlCapture{}
	case DedupDigest:
		t.byURL = map[hash128]urlCapture{}
		t.byDigest = map[string]original{}
	}
	return t
}

// claim returns the earlier capture whose payload duplicates this one, or
// nil; in that case, with add, this capture is recorded as the original of
// its payload at once, so that of two identical payloads written at the
// same time one is the revisit of the other.
func (t *dedupTable) claim(url, digest string, date time.Time, add bool) *original {
	if t.mode == DedupOff {
		return nil
	}
	// Both hashes are taken once, before the lock: the lookup and the
	// insertion share them, and the other downloads do not wait on them.
	hu, hd := t.hash(url), t.hash(digest)
	t.mu.Lock()
	defer t.mu.Unlock()
	if o := t.findHashed(url, hu, hd, digest); o != nil {
		return o
	}
	if add {
		t.addHashed(url, hu, hd, digest, date)
	}
	return nil
}

// findHashed is claim's lookup, with the hashes of url (hu) and digest
// (hd) taken; t.mu is held.
func (t *dedupTable) findHashed(url string, hu, hd hash128, digest string) *original {
	switch t.mode {
	case DedupURL:
		if c, ok := t.byURL[hu]; ok && c.digest == hd {
			return &original{url, time.Unix(0, c.date).UTC()}
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
	if c, ok := t.byURL[t.hash(url)]; ok {
		return &original{url, time.Unix(0, c.date).UTC()}
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
	t.addHashed(url, t.hash(url), t.hash(digest), digest, date)
}

// addHashed is addLocked with the hashes of url (hu) and digest (hd) taken.
func (t *dedupTable) addHashed(url string, hu, hd hash128, digest string, date time.Time) {
	t.byURL[hu] = urlCapture{hd, date.UnixNano()}
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
