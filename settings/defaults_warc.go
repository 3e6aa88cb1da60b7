package settings

import (
	"fmt"
	"strings"
)

// warcDedup is WARC_DEDUP's type: off, url or digest, stored lower case.
var warcDedup = NewType(`"off", "url" or "digest"`, func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	switch low := strings.ToLower(strings.TrimSpace(s.(string))); low {
	case "off", "url", "digest":
		return low, nil
	}
	return nil, fmt.Errorf("%q is not a deduplication mode; use off (every payload in full), url (same URL) or digest (any URL)", s)
})

// warcPrefix is WARC_PREFIX's type: a file name part, without a path
// separator.
var warcPrefix = NewType("file name prefix", func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(s.(string), `/\`) {
		return nil, fmt.Errorf("%q holds a path separator; give a file name prefix such as \"mycrawl\"", s)
	}
	return s, nil
})

// warcGzipLevel is WARC_GZIP_LEVEL's type: a gzip level, 0 to 9.
var warcGzipLevel = NewType("gzip level, 0 to 9", func(v any) (any, error) {
	n, err := Int.Convert(v)
	if err != nil {
		return nil, err
	}
	if l := n.(int); l < 0 || l > 9 {
		return nil, fmt.Errorf("%d is not a gzip level; use 1 (fastest) to 9 (smallest), or 0 (records stored uncompressed)", l)
	}
	return n, nil
})

// Web archive settings: the Warc downloader middleware (docs/archive.md).
func init() {
	for _, d := range []Def{
		{Name: "WARC_DIR", Type: String, Default: "", Doc: "Write every request and response to WARC files in this folder (created if missing; empty = no archive). See docs/archive.md."},
		{Name: "WARC_PREFIX", Type: warcPrefix, Default: "", Doc: "Start of the WARC file names, PREFIX-TIMESTAMP-SERIAL.warc.gz (empty = the spider's name)."},
		{Name: "WARC_MAX_SIZE", Type: NonNegative(Int), Default: 1 << 30, Doc: "Bytes past which a WARC file is closed and the next one started (0 = one file per crawl)."},
		{Name: "WARC_DEDUP", Type: warcDedup, Default: "url", Doc: "Which identical payloads are written as revisit records instead of full copies: url (the last capture of the same URL), digest (any capture), off (none)."},
		{Name: "WARC_GZIP_LEVEL", Type: warcGzipLevel, Default: 1, Doc: "Compression of the WARC records (one gzip member each): 1 (the fastest) to 9 (the smallest files, several times the CPU), 0 = stored uncompressed in their gzip members (the least CPU, files about as large as the pages)."},
		{Name: "WARC_SYNC_INTERVAL", Type: NonNegative(Float), Default: 1.0, Doc: "Seconds between syncs (fsync) of the WARC file being written (0 = after every exchange). A killed crawl loses at most the record being written whatever this is; a power cut loses what was not synced."},
		{Name: "WARC_REPLAY", Type: String, Default: "", Doc: "Answer every request from the WARC files of this folder (or this file) instead of the network: a URL not in the archive is an error. See docs/archive.md."},
	} {
		Register(d)
	}
}
