package s3feed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/gocrawl/gocrawl/internal/atomicfile"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/spider"
)

// This file is the upload of one feed. The feed is a stream of bytes cut
// into parts; the part being filled is written to a spool file
// (part-N.spool) in the state folder, and sent when it holds PartSize
// bytes (compressed, for .gz: each part is then a gzip member of its own,
// and their concatenation is a valid gzip file). The record (state.json)
// holds the object's key, the upload id and, for each part sent, its
// number, ETag and the range of the feed it holds; it is rewritten
// atomically after each part.
//
// A resumed job continues at the offset its JOBDIR saved: the parts that
// end before it are kept, the part that holds it is cut there and filled
// again (it is sent again under the same number, which replaces it), and
// the parts after it are left out of the completed object. The spool files
// of sent parts are kept while a resume could still cut into them (until
// the job has saved an offset past their end; see Sync), and the first
// MiB of the feed is kept for the CSV header.

// headSize is how much of the feed's start is kept locally (the CSV
// header an appending exporter reads is at most 1 MiB).
const headSize = 1 << 20

// syncsKept is how many of the offsets the job saved last are awaited
// before the parts before the oldest are forgotten.
const syncsKept = 3

type part struct {
	N     int32  `json:"n"`
	ETag  string `json:"etag"`
	Start int64  `json:"start"` // the range of the feed the part holds
	End   int64  `json:"end"`
}

// state is the durable record of an upload (state.json).
type state struct {
	URI       string `json:"uri"`
	Key       string `json:"key"`       // the object's key, placeholders expanded
	UploadID  string `json:"upload_id"` // "" until the first part is sent
	Parts     []part `json:"parts"`     // sent, in order
	Next      int32  `json:"next"`      // the number of the part being filled
	Completed bool   `json:"completed"`
}

type upload struct {
	dir       string
	temp      bool // dir is a temporary folder
	st        state
	spool     *os.File
	head      *os.File
	headLen   int64
	partStart int64 // offset of the part being filled
	spoolLen  int64
	zbuf      bytes.Buffer
	zw        *gzip.Writer
	syncs     []int64 // the last offsets given to Sync
	err       error   // a failed part upload: later writes fail too
	open      bool
}

func (s *Storage) statePath() string { return filepath.Join(s.up.dir, "state.json") }
func (s *Storage) spoolPath(n int32) string {
	return filepath.Join(s.up.dir, fmt.Sprintf("part-%05d.spool", n))
}

func (s *Storage) saveState() error {
	b, err := json.Marshal(s.up.st)
	if err != nil {
		return err
	}
	err = atomicfile.Write(s.statePath(), 0o600, func(f *os.File) error { _, err := f.Write(b); return err })
	if err != nil {
		return fmt.Errorf("feed %s: saving the upload's record: %w", s.uri, err)
	}
	return nil
}

func (s *Storage) loadState() (state, bool, error) {
	var st state
	b, err := os.ReadFile(s.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("feed %s: the upload's record %s is damaged: %v; start the job over with --fresh", s.uri, s.statePath(), err)
	}
	return st, true, nil
}

// Open starts a new upload, or with info.Resume continues the one the
// state folder records. It checks the bucket first.
func (s *Storage) Open(ctx context.Context, info feed.OpenInfo) (feed.Content, error) {
	if s.up.open {
		return nil, fmt.Errorf("feed %s: already open", s.uri)
	}
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	if s.base == "" {
		d, err := os.MkdirTemp("", "gocrawl-s3feed-")
		if err != nil {
			return nil, fmt.Errorf("feed %s: %w", s.uri, err)
		}
		s.up.dir, s.up.temp = d, true
	} else {
		s.up.dir = s.dir()
		if err := os.MkdirAll(s.up.dir, 0o700); err != nil {
			return nil, fmt.Errorf("feed %s: %w", s.uri, err)
		}
	}
	old, ok, err := s.loadState()
	if err != nil {
		return nil, err
	}
	var c feed.Content
	switch {
	case info.Resume && !ok:
		return nil, fmt.Errorf("feed %s: the job saved %d bytes of this feed but %s holds no record of its upload; start the job over with --fresh",
			s.uri, info.Offset, s.up.dir)
	case info.Resume && old.Completed && !feed.HasPlaceholders(s.key):
		return nil, fmt.Errorf("feed %s: an earlier run of this job completed s3://%s/%s; a new run would replace it: start the job over with --fresh, or put %%(time)s in the name",
			s.uri, s.bucket, old.Key)
	case info.Resume && !old.Completed:
		if c, err = s.resume(ctx, old, info.Offset); err != nil {
			return nil, err
		}
	default:
		if ok && !old.Completed && old.UploadID != "" {
			// An incomplete upload of an earlier run that is not resumed
			// (--fresh): abort it so it does not linger.
			_, _ = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.bucket), Key: aws.String(old.Key), UploadId: aws.String(old.UploadID)})
		}
		if c, err = s.start(info); err != nil {
			return nil, err
		}
	}
	s.up.open = true
	return c, nil
}

// start begins a new feed: an empty state folder and record.
func (s *Storage) start(info feed.OpenInfo) (feed.Content, error) {
	if err := clearDir(s.up.dir); err != nil {
		return nil, fmt.Errorf("feed %s: %w", s.uri, err)
	}
	s.up.st = state{URI: s.uri, Key: feed.ExpandPlaceholders(s.key, info.Spider, info.Time), Next: 1}
	if err := s.saveState(); err != nil {
		return nil, err
	}
	if err := s.openFiles(0, 0); err != nil {
		return nil, err
	}
	return bytes.NewReader(nil), nil
}

// clearDir removes what dir holds.
func clearDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// openFiles opens the head (cut to headLen) and the spool of the part
// being filled (cut to spoolLen), and compresses what it holds again.
func (s *Storage) openFiles(headLen, spoolLen int64) error {
	u := &s.up
	var err error
	if u.head, err = os.OpenFile(filepath.Join(u.dir, "head"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return fmt.Errorf("feed %s: %w", s.uri, err)
	}
	if err := u.head.Truncate(headLen); err != nil {
		return fmt.Errorf("feed %s: %w", s.uri, err)
	}
	if _, err := u.head.Seek(headLen, io.SeekStart); err != nil {
		return err
	}
	u.headLen = headLen
	return s.openSpool(spoolLen)
}

func (s *Storage) openSpool(spoolLen int64) error {
	u := &s.up
	var err error
	if u.spool, err = os.OpenFile(s.spoolPath(u.st.Next), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return fmt.Errorf("feed %s: %w", s.uri, err)
	}
	return s.cutSpool(spoolLen)
}

// cutSpool cuts the part being filled to n bytes and rebuilds its
// compressed form.
func (s *Storage) cutSpool(n int64) error {
	u := &s.up
	if err := u.spool.Truncate(n); err != nil {
		return fmt.Errorf("feed %s: %w", s.uri, err)
	}
	if _, err := u.spool.Seek(n, io.SeekStart); err != nil {
		return err
	}
	u.spoolLen = n
	if s.gz {
		u.zbuf.Reset()
		u.zw = gzip.NewWriter(&u.zbuf)
		if _, err := io.Copy(u.zw, io.NewSectionReader(u.spool, 0, n)); err != nil {
			return fmt.Errorf("feed %s: %w", s.uri, err)
		}
	}
	return nil
}

// resume continues the upload old records at offset.
func (s *Storage) resume(ctx context.Context, old state, offset int64) (feed.Content, error) {
	u := &s.up
	u.st = old
	if old.UploadID != "" {
		_, err := s.client.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(s.bucket), Key: aws.String(old.Key),
			UploadId: aws.String(old.UploadID), MaxParts: aws.Int32(1)})
		if err != nil {
			return nil, fmt.Errorf("feed %s: cannot continue the upload: %s; start the job over with --fresh", s.uri, s.describe(err))
		}
	}
	// The part holding offset: a sent one, or the one being filled.
	n, start := old.Next, int64(0)
	if len(old.Parts) > 0 {
		start = old.Parts[len(old.Parts)-1].End
	}
	kept := old.Parts[:0:0]
	for _, p := range old.Parts {
		if p.End <= offset {
			kept = append(kept, p)
			continue
		}
		if p.Start <= offset && n == old.Next {
			n, start = p.N, p.Start
		}
	}
	if offset < start {
		return nil, fmt.Errorf("feed %s: cannot resume at byte %d: the record holds no part there", s.uri, offset)
	}
	spool := s.spoolPath(n)
	st, err := os.Stat(spool)
	if err != nil || st.Size() < offset-start {
		return nil, fmt.Errorf("feed %s: cannot resume at byte %d: %s, which holds bytes %d and on, is missing or short; start the job over with --fresh",
			s.uri, offset, spool, start)
	}
	// Parts after n are replaced by the parts to come.
	for _, p := range old.Parts {
		if p.N > n {
			_ = os.Remove(s.spoolPath(p.N))
		}
	}
	if old.Next > n {
		_ = os.Remove(s.spoolPath(old.Next))
	}
	u.st.Parts, u.st.Next, u.partStart = kept, n, start
	if err := s.saveState(); err != nil {
		return nil, err
	}
	hst, _ := os.Stat(filepath.Join(u.dir, "head"))
	headLen := int64(0)
	if hst != nil {
		headLen = min(hst.Size(), offset)
	}
	if err := s.openFiles(headLen, offset-start); err != nil {
		return nil, err
	}
	return &local{s: s, size: offset}, nil
}

// local is the part of a resumed feed kept on disk: the head, the spools
// still there; other ranges cannot be read.
type local struct {
	s    *Storage
	size int64
}

func (l *local) Size() int64 { return l.size }

func (l *local) ReadAt(p []byte, off int64) (int, error) {
	u := &l.s.up
	n := 0
	for n < len(p) && off < l.size {
		want := p[n:min(len(p), n+int(l.size-off))]
		var m int
		var err error
		switch {
		case off < u.headLen:
			m, err = u.head.ReadAt(want[:min(int64(len(want)), u.headLen-off)], off)
		case off >= u.partStart:
			m, err = u.spool.ReadAt(want, off-u.partStart)
		default:
			m, err = l.readSent(want, off)
		}
		n += m
		off += int64(m)
		if m == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readSent reads from the spool of a sent part still on disk.
func (l *local) readSent(p []byte, off int64) (int, error) {
	for _, pt := range l.s.up.st.Parts {
		if pt.Start <= off && off < pt.End {
			f, err := os.Open(l.s.spoolPath(pt.N))
			if err != nil {
				return 0, fmt.Errorf("bytes %d-%d of the feed are not kept locally", pt.Start, pt.End)
			}
			defer f.Close()
			return f.ReadAt(p[:min(int64(len(p)), pt.End-off)], off-pt.Start)
		}
	}
	return 0, fmt.Errorf("byte %d of the feed is not kept locally", off)
}

// Write adds p to the part being filled, and sends the part once it is
// full. A part that cannot be sent (after the retries) is an error: the
// crawl stops, and what was written stays in the state folder.
func (s *Storage) Write(p []byte) (int, error) {
	u := &s.up
	if u.err != nil {
		return 0, u.err
	}
	if !u.open {
		return 0, fmt.Errorf("feed %s: not open", s.uri)
	}
	if u.headLen < headSize {
		h := p[:min(int64(len(p)), headSize-u.headLen)]
		if _, err := u.head.Write(h); err != nil {
			return 0, fmt.Errorf("feed %s: %w", s.uri, err)
		}
		u.headLen += int64(len(h))
	}
	if _, err := u.spool.Write(p); err != nil {
		return 0, fmt.Errorf("feed %s: %w", s.uri, err)
	}
	u.spoolLen += int64(len(p))
	if s.gz {
		if _, err := u.zw.Write(p); err != nil {
			return 0, err
		}
	}
	if s.full() {
		if err := s.sendPart(context.Background()); err != nil {
			u.err = err
			return len(p), err
		}
	}
	return len(p), nil
}

func (s *Storage) full() bool {
	if s.gz {
		return int64(s.up.zbuf.Len()) >= s.cfg.PartSize
	}
	return s.up.spoolLen >= s.cfg.PartSize
}

// body returns what the part being filled sends.
func (s *Storage) body() (io.ReadSeeker, int64, error) {
	u := &s.up
	if s.gz {
		if err := u.zw.Close(); err != nil {
			return nil, 0, err
		}
		return bytes.NewReader(u.zbuf.Bytes()), int64(u.zbuf.Len()), nil
	}
	return io.NewSectionReader(u.spool, 0, u.spoolLen), u.spoolLen, nil
}

func (s *Storage) contentType() string {
	switch k, _ := strings.CutSuffix(s.key, ".gz"); {
	case s.gz:
		return "application/gzip"
	case strings.HasSuffix(k, ".csv"):
		return "text/csv"
	case strings.HasSuffix(k, ".json"):
		return "application/json"
	}
	return "application/x-ndjson"
}

// sendPart sends the part being filled and starts the next one.
func (s *Storage) sendPart(ctx context.Context) error {
	u := &s.up
	if u.st.UploadID == "" {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(u.st.Key),
			ContentType: aws.String(s.contentType())}
		if s.cfg.ACL != "" {
			in.ACL = types.ObjectCannedACL(s.cfg.ACL)
		}
		out, err := s.client.CreateMultipartUpload(ctx, in)
		if err != nil {
			return fmt.Errorf("feed %s: starting the upload: %s", s.uri, s.describe(err))
		}
		u.st.UploadID = aws.ToString(out.UploadId)
		if err := s.saveState(); err != nil {
			return err
		}
	}
	body, size, err := s.body()
	if err != nil {
		return err
	}
	out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s.bucket), Key: aws.String(u.st.Key),
		UploadId: aws.String(u.st.UploadID), PartNumber: aws.Int32(u.st.Next), Body: body, ContentLength: aws.Int64(size)})
	if err != nil {
		return fmt.Errorf("feed %s: sending part %d: %s; the feed is kept in %s%s", s.uri, u.st.Next, s.describe(err), u.dir, s.hint())
	}
	end := u.partStart + u.spoolLen
	u.st.Parts = append(u.st.Parts, part{N: u.st.Next, ETag: aws.ToString(out.ETag), Start: u.partStart, End: end})
	u.st.Next++
	if err := s.saveState(); err != nil {
		return err
	}
	if err := u.spool.Close(); err != nil {
		return err
	}
	u.partStart = end
	if err := s.openSpool(0); err != nil {
		return err
	}
	s.prune()
	return nil
}

// hint says how the kept feed can be finished.
func (s *Storage) hint() string {
	if s.up.temp {
		return " (without JOBDIR it cannot be resumed: set JOBDIR to make s3:// feeds resumable)"
	}
	return "; run the crawl again with the same JOBDIR to finish it"
}

// Truncate drops the bytes after n; n is in the part being filled.
func (s *Storage) Truncate(n int64) error {
	u := &s.up
	if n < u.partStart || n > u.partStart+u.spoolLen {
		return fmt.Errorf("feed %s: cannot cut the feed at byte %d (the part being filled holds bytes %d to %d)",
			s.uri, n, u.partStart, u.partStart+u.spoolLen)
	}
	if n < u.headLen {
		if err := u.head.Truncate(n); err != nil {
			return err
		}
		if _, err := u.head.Seek(n, io.SeekStart); err != nil {
			return err
		}
		u.headLen = n
	}
	return s.cutSpool(n - u.partStart)
}

// Sync notes an offset the job is about to save; the spools of sent parts
// that end before the oldest of the last syncsKept offsets cannot be cut
// by a resume any more and are removed.
func (s *Storage) Sync(offset int64) error {
	u := &s.up
	u.syncs = append(u.syncs, offset)
	if len(u.syncs) > syncsKept {
		u.syncs = u.syncs[len(u.syncs)-syncsKept:]
	}
	s.prune()
	return nil
}

// prune removes the spools of sent parts a resume cannot need. Without a
// job (a temporary folder) that is every sent part.
func (s *Storage) prune() {
	u := &s.up
	floor := int64(-1)
	switch {
	case u.temp:
		floor = u.partStart
	case len(u.syncs) == syncsKept:
		floor = u.syncs[0]
	}
	for _, p := range u.st.Parts {
		if p.End < floor || (u.temp && p.End <= floor) {
			_ = os.Remove(s.spoolPath(p.N))
		}
	}
}

// Close sends the last part and completes the upload (a feed that never
// filled a part is sent whole with one PutObject). Once it succeeds the
// object is visible and the state folder is emptied; when it fails the
// upload stays incomplete, invisible, with its record and unsent bytes
// kept.
//
// A resumable feed (a StateDir, that is JOBDIR) of a crawl paused by the
// user (close reason "shutdown" or "aborted", spider.CloseReason) is not
// completed: the crawl is not over, so its object must not appear yet.
// The resumed job continues the upload and completes it when it ends.
func (s *Storage) Close(ctx context.Context) error {
	u := &s.up
	if !u.open {
		return nil
	}
	if u.err != nil {
		return u.err
	}
	u.open = false
	defer func() {
		u.head.Close()
		u.spool.Close()
	}()
	if r := spider.CloseReason(ctx); !u.temp && (r == "shutdown" || r == "aborted") {
		return nil // the record and the spools are on disk: a resume continues
	}
	if u.st.UploadID == "" {
		body, size, err := s.body()
		if err != nil {
			return err
		}
		in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(u.st.Key), Body: body,
			ContentLength: aws.Int64(size), ContentType: aws.String(s.contentType())}
		if s.cfg.ACL != "" {
			in.ACL = types.ObjectCannedACL(s.cfg.ACL)
		}
		if _, err := s.client.PutObject(ctx, in); err != nil {
			return fmt.Errorf("feed %s: writing the object: %s; the feed is kept in %s%s", s.uri, s.describe(err), u.dir, s.hint())
		}
	} else {
		if u.spoolLen > 0 || len(u.st.Parts) == 0 {
			if err := s.sendPart(ctx); err != nil {
				return err
			}
		}
		parts := make([]types.CompletedPart, len(u.st.Parts))
		for i, p := range u.st.Parts {
			parts[i] = types.CompletedPart{PartNumber: aws.Int32(p.N), ETag: aws.String(p.ETag)}
		}
		slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
		_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.bucket),
			Key: aws.String(u.st.Key), UploadId: aws.String(u.st.UploadID), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		if err != nil {
			return fmt.Errorf("feed %s: completing the upload: %s; the upload is kept incomplete (invisible), recorded in %s%s",
				s.uri, s.describe(err), u.dir, s.hint())
		}
	}
	if u.temp {
		return os.RemoveAll(u.dir)
	}
	u.st.Completed = true
	if err := s.saveState(); err != nil {
		return err
	}
	for _, p := range u.st.Parts {
		_ = os.Remove(s.spoolPath(p.N))
	}
	_ = os.Remove(s.spoolPath(u.st.Next))
	_ = os.Remove(filepath.Join(u.dir, "head"))
	return nil
}

// Key returns the object's key once Open has run (placeholders expanded).
func (s *Storage) Key() string { return s.up.st.Key }
