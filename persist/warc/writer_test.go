package warc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func exchange(url string, status int, payload string) *Exchange {
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {fmt.Sprint(len(payload))}}
	return &Exchange{
		URL: url, Date: t0, IP: "127.0.0.1", Method: "GET", Status: status, MIME: "text/html",
		Request:      RequestBytes("GET", "/x", "example.com", http.Header{"User-Agent": {"test"}}, nil),
		ResponseHead: ResponseHeadBytes("HTTP/1.1", fmt.Sprintf("%d %s", status, http.StatusText(status)), h),
		Payload:      []byte(payload),
	}
}

func newTestWriter(t *testing.T, dir string, o Options) *Writer {
	t.Helper()
	o.Dir = dir
	if o.Prefix == "" {
		o.Prefix = "test"
	}
	o.Software = "gocrawl/test"
	if o.Clock == nil {
		o.Clock = clock.NewFake(t0)
	}
	w, _, err := NewWriter(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func write(t *testing.T, w *Writer, ex *Exchange) bool {
	t.Helper()
	rev, err := w.Write(ex)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	fs, err := ListFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestWriterRecords: one warcinfo, then a request and a response record per
// exchange, valid for the reader written from the spec, with the fields the
// format asks for.
func TestWriterRecords(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{Info: [][2]string{{"setting", "DOWNLOAD_DELAY=2"}}})
	write(t, w, exchange("https://example.com/a", 200, "<p>a</p>"))
	ex := exchange("https://example.com/b", 200, "<p>b</p>")
	ex.Payload = []byte{0x1f, 0x8b, 0, 1, 2} // a payload with its content coding, as received
	write(t, w, ex)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fs := files(t, dir)
	if len(fs) != 1 || !strings.HasSuffix(fs[0], "-00000.warc.gz") || !strings.HasPrefix(filepath.Base(fs[0]), "test-20260304050607000-") {
		t.Fatalf("files %v, want one test-20260304050607000-00000.warc.gz", fs)
	}
	recs := specRead(t, fs[0])
	specCheck(t, recs)
	var types []string
	for _, r := range recs {
		types = append(types, r.get("WARC-Type"))
	}
	if want := []string{"warcinfo", "request", "response", "request", "response"}; !slices.Equal(types, want) {
		t.Fatalf("record types %v, want %v", types, want)
	}
	info := string(recs[0].block)
	for _, want := range []string{"software: gocrawl/test\r\n", "format: WARC File Format 1.1\r\n", "setting: DOWNLOAD_DELAY=2\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("warcinfo lacks %q:\n%s", want, info)
		}
	}
	if recs[0].get("WARC-Filename") != filepath.Base(fs[0]) {
		t.Errorf("WARC-Filename %q", recs[0].get("WARC-Filename"))
	}
	res := recs[4]
	if got := res.get("WARC-IP-Address"); got != "127.0.0.1" {
		t.Errorf("WARC-IP-Address %q", got)
	}
	if !bytes.HasSuffix(res.block, ex.Payload) {
		t.Errorf("the payload is not archived as received")
	}
	if recs[3].get("WARC-Concurrent-To") != res.get("WARC-Record-ID") || res.get("WARC-Concurrent-To") != recs[3].get("WARC-Record-ID") {
		t.Errorf("request and response do not name each other")
	}
	if !strings.HasPrefix(string(recs[1].block), "GET /x HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\n\r\n") {
		t.Errorf("request block %q", recs[1].block)
	}

	// The index beside the file, sorted, pointing at the responses.
	es, err := ReadIndex(IndexPath(fs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].URL != "https://example.com/a" || es[1].URL != "https://example.com/b" {
		t.Fatalf("index %+v", es)
	}
	for _, e := range es {
		if e.Offset != recs[2].offset && e.Offset != recs[4].offset {
			t.Errorf("index entry %s at offset %d: no response record there", e.URL, e.Offset)
		}
		rec, err := ReadAt(fs[0], e.Offset)
		if err != nil || rec.TargetURI() != e.URL || rec.Type() != TypeResponse {
			t.Errorf("ReadAt(%d): %v, %v", e.Offset, rec, err)
		}
		if e.Status != 200 || e.MIME != "text/html" || e.SURT != "com,example)/"+e.URL[len(e.URL)-1:] {
			t.Errorf("entry %+v", e)
		}
	}
}

// TestRotation: files are closed past MaxSize and their names sort in the
// order they were written, each with its warcinfo and index.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{MaxSize: 2000})
	for i := range 20 {
		write(t, w, exchange(fmt.Sprintf("https://example.com/%d", i), 200, strings.Repeat(fmt.Sprint(i), 300)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fs := files(t, dir)
	if len(fs) < 3 {
		t.Fatalf("%d files for 20 exchanges of ~1 KB with MaxSize 2000", len(fs))
	}
	if !slices.IsSorted(fs) {
		t.Errorf("file names do not sort: %v", fs)
	}
	n := 0
	for _, f := range fs {
		recs := specRead(t, f)
		specCheck(t, recs)
		n += len(recs) - 1
		if _, err := os.Stat(IndexPath(f)); err != nil {
			t.Errorf("no index for %s", f)
		}
	}
	if n != 40 {
		t.Errorf("%d records in all, want 40", n)
	}
}

// TestDedup: what each mode writes as revisit records.
func TestDedup(t *testing.T) {
	cases := []struct {
		mode Dedup
		want []bool // revisit? for each exchange below
	}{
		{DedupOff, []bool{false, false, false, false}},
		{DedupURL, []bool{false, true, false, false}},
		{DedupDigest, []bool{false, true, true, false}},
	}
	exs := []*Exchange{
		exchange("https://example.com/a", 200, "same"),
		exchange("https://example.com/a", 200, "same"),
		exchange("https://example.com/b", 200, "same"),
		exchange("https://example.com/a", 200, "changed"),
	}
	exs[0].Date = t0.Add(1500 * time.Microsecond) // the date the revisits refer to
	for _, c := range cases {
		t.Run(fmt.Sprint(c.mode), func(t *testing.T) {
			dir := t.TempDir()
			w := newTestWriter(t, dir, Options{Dedup: c.mode})
			for i, ex := range exs {
				if got := write(t, w, ex); got != c.want[i] {
					t.Errorf("exchange %d: revisit %v, want %v", i, got, c.want[i])
				}
			}
			w.Close()
			recs := specRead(t, files(t, dir)[0])
			specCheck(t, recs)
			for _, r := range recs {
				if r.get("WARC-Type") != "revisit" {
					continue
				}
				if r.get("WARC-Profile") != ProfileIdenticalPayload || r.get("WARC-Refers-To-Target-URI") != "https://example.com/a" ||
					r.get("WARC-Refers-To-Date") != FormatDate(exs[0].Date) || r.get("WARC-Payload-Digest") != Digest([]byte("same")) {
					t.Errorf("revisit fields %v", r.fields)
				}
				if bytes.Contains(r.block, []byte("same")) {
					t.Errorf("the revisit holds the payload")
				}
			}
		})
	}
}

// TestDedupAcrossCrawls: a second crawl into the same folder writes
// revisits for what the first archived, and a 304 as a server-not-modified
// revisit referring to the earlier capture.
func TestDedupAcrossCrawls(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{Dedup: DedupURL})
	write(t, w, exchange("https://example.com/a", 200, "page"))
	write(t, w, exchange("https://example.com/b", 200, "other"))
	w.Close()
	w = newTestWriter(t, dir, Options{Dedup: DedupURL})
	if !write(t, w, exchange("https://example.com/a", 200, "page")) {
		t.Errorf("unchanged page of an earlier crawl not written as a revisit")
	}
	if !write(t, w, exchange("https://example.com/b", 304, "")) {
		t.Errorf("304 not written as a revisit")
	}
	w.Close()
	fs := files(t, dir)
	recs := specRead(t, fs[1])
	specCheck(t, recs)
	last := recs[len(recs)-1]
	if last.get("WARC-Profile") != ProfileServerNotModified || last.get("WARC-Refers-To-Target-URI") != "https://example.com/b" {
		t.Errorf("304 revisit %v", last.fields)
	}
	a, err := LoadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{"https://example.com/a": "page", "https://example.com/b": "other"} {
		c, err := a.Lookup("GET", url)
		if err != nil || string(c.Payload) != want || c.Status.Code != 200 {
			t.Errorf("replay of %s: %+v, %v; want %q", url, c, err, want)
		}
	}
}

// TestTruncatedFlag: a cut payload is flagged and never deduplicated.
func TestTruncatedFlag(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{Dedup: DedupDigest})
	ex := exchange("https://example.com/big", 200, "partial")
	ex.Truncated = TruncatedLength
	write(t, w, ex)
	if write(t, w, ex) {
		t.Errorf("a truncated payload was deduplicated")
	}
	w.Close()
	recs := specRead(t, files(t, dir)[0])
	specCheck(t, recs)
	if recs[2].get("WARC-Truncated") != "length" {
		t.Errorf("WARC-Truncated %q", recs[2].get("WARC-Truncated"))
	}
}

// TestRepairAfterKill: a file left open with a partial last record (the
// crawl was killed while writing it) is cut after its last whole record,
// indexed and closed when the folder is opened again.
func TestRepairAfterKill(t *testing.T) {
	for _, cut := range []int{1, 10, 100} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			w := newTestWriter(t, dir, Options{})
			write(t, w, exchange("https://example.com/a", 200, "a"))
			write(t, w, exchange("https://example.com/b", 200, strings.Repeat("b", 500)))
			open := w.Path()
			// The kill: the file is never closed, and the last record is
			// cut short.
			w.mu.Lock()
			st, _ := os.Stat(open)
			if err := os.Truncate(open, st.Size()-int64(cut)); err != nil {
				t.Fatal(err)
			}
			reps, err := RepairDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != 1 || reps[0].Cut == 0 || reps[0].Records != 3 {
				t.Fatalf("repairs %+v, want one with 3 whole records and a cut", reps)
			}
			fs := files(t, dir)
			if len(fs) != 1 || strings.HasSuffix(fs[0], openSuffix) {
				t.Fatalf("files %v", fs)
			}
			recs := specRead(t, fs[0])
			specCheck(t, recs)
			if len(recs) != 3 || recs[2].get("WARC-Target-URI") != "https://example.com/a" {
				t.Errorf("%d records after the repair, want warcinfo and the exchange of a", len(recs))
			}
			es, err := ReadIndex(IndexPath(fs[0]))
			if err != nil || len(es) != 1 {
				t.Errorf("index %v, %v", es, err)
			}
		})
	}
}

// failingFile fails its writes with ENOSPC once room bytes are written.
type failingFile struct {
	*os.File
	room int64
}

func (f *failingFile) Write(p []byte) (int, error) {
	if int64(len(p)) > f.room {
		n, _ := f.File.Write(p[:f.room])
		f.room = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.room -= int64(len(p))
	return f.File.Write(p)
}

// TestFullDisk: a write that fails stops the writer with the disk's error,
// the partial record is cut, and the file stays readable to its last whole
// exchange.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{Create: func(path string) (File, error) {
		f, err := os.Create(path)
		return &failingFile{File: f, room: 3000}, err
	}})
	var err error
	n := 0
	for ; n < 100 && err == nil; n++ {
		_, err = w.Write(exchange(fmt.Sprintf("https://example.com/%d", n), 200, strings.Repeat("x", 200)))
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("after %d exchanges: %v, want ENOSPC", n, err)
	}
	if _, err2 := w.Write(exchange("https://example.com/late", 200, "")); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("a write after the failure: %v", err2)
	}
	w.Close()
	if _, err := RepairDir(dir); err != nil {
		t.Fatal(err)
	}
	fs := files(t, dir)
	recs := specRead(t, fs[0])
	specCheck(t, recs)
	if want := 1 + 2*(n-1); len(recs) != want {
		t.Errorf("%d records, want %d (warcinfo and the exchanges written before the disk filled)", len(recs), want)
	}
}

// TestCorruptArchive: a damaged record is reported with its file and
// offset when an archive is loaded.
func TestCorruptArchive(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{})
	for i := range 5 {
		write(t, w, exchange(fmt.Sprintf("https://example.com/%d", i), 200, strings.Repeat("z", 100)))
	}
	w.Close()
	f := files(t, dir)[0]
	recs := specRead(t, f)
	bad := recs[5].offset
	b, _ := os.ReadFile(f)
	for i := bad + 12; i < bad+40; i++ {
		b[i] ^= 0x55
	}
	os.WriteFile(f, b, 0o644)
	_, err := LoadArchive(dir)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != f || ce.Offset != bad {
		t.Fatalf("LoadArchive: %v, want a *CorruptError at %s offset %d", err, f, bad)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("offset %d", bad)) || !strings.Contains(err.Error(), f) {
		t.Errorf("the error does not name the file and offset: %v", err)
	}
}

// TestConcurrentWrites: writers on many goroutines make whole records.
func TestConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{MaxSize: 20000, SyncInterval: time.Hour})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := w.Write(exchange(fmt.Sprintf("https://example.com/%d/%d", g, i), 200, strings.Repeat("p", g*i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	n := 0
	for _, f := range files(t, dir) {
		recs := specRead(t, f)
		specCheck(t, recs)
		n += len(recs) - 1
	}
	if n != 400 {
		t.Errorf("%d records, want 400", n)
	}
	checkIndexes(t, dir)
}

// checkIndexes checks that every index line of dir's files points at the
// response record of its URL.
func checkIndexes(t *testing.T, dir string) {
	t.Helper()
	for _, f := range files(t, dir) {
		at := map[int64]specRecord{}
		for _, r := range specRead(t, f) {
			at[r.offset] = r
		}
		es, err := ReadIndex(IndexPath(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			r, ok := at[e.Offset]
			if !ok || r.get("WARC-Type") != e.Type || r.get("WARC-Target-URI") != e.URL {
				t.Errorf("%s: index line of %s at offset %d: no %s record of that URL there", f, e.URL, e.Offset, e.Type)
			}
		}
	}
}

// countingFile counts the writes to a file.
type countingFile struct {
	*os.File
	writes *int
}

func (f countingFile) Write(p []byte) (int, error) {
	*f.writes++
	return f.File.Write(p)
}

// TestGroupCommit: a batch of exchanges goes to the file in one write;
// rotation inside a batch splits it where the file fills.
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxSize int64
		files   int
		writes  int // warcinfo records included
	}{
		{"one file", 0, 1, 2},
		{"rotating inside the batch", 1500, 3, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writes := 0
			w := newTestWriter(t, dir, Options{MaxSize: tc.maxSize, Create: func(path string) (File, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				return countingFile{f, &writes}, err
			}})
			var batch []*pending
			for i := range 3 {
				p, _, err := w.prepare(exchange(fmt.Sprintf("https://example.com/q%d", i), 200, strings.Repeat("q", 1000)))
				if err != nil {
					t.Fatal(err)
				}
				batch = append(batch, p)
			}
			w.mu.Lock()
			w.writeBatch(batch) // as the committer does
			w.mu.Unlock()
			for i, p := range batch {
				if !p.done || p.err != nil {
					t.Errorf("exchange %d of the batch: done %v, error %v", i, p.done, p.err)
				}
			}
			w.Close()
			if writes != tc.writes {
				t.Errorf("%d writes, want %d", writes, tc.writes)
			}
			if fs := files(t, dir); len(fs) != tc.files {
				t.Errorf("%d files, want %d", len(fs), tc.files)
			}
			checkIndexes(t, dir)
		})
	}
}

// gateFile blocks its second write (the first exchange's, after the
// warcinfo record): it signals entered, then waits until gate is closed.
type gateFile struct {
	*os.File
	writes        *int
	entered, gate chan struct{}
}

func (f gateFile) Write(p []byte) (int, error) {
	if *f.writes++; *f.writes == 2 {
		f.entered <- struct{}{}
		<-f.gate
	}
	return f.File.Write(p)
}

// TestCommitterBatches: the exchanges queued while the committer writes
// are written together, in its next write, and each Write returns once
// its own is in the file.
func TestCommitterBatches(t *testing.T) {
	dir := t.TempDir()
	writes, entered, gate := 0, make(chan struct{}, 1), make(chan struct{})
	w := newTestWriter(t, dir, Options{Create: func(path string) (File, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		return gateFile{f, &writes, entered, gate}, err
	}})
	const queued = 5
	errs := make(chan error, queued+1)
	send := func(i int) {
		_, err := w.Write(exchange(fmt.Sprintf("https://example.com/%d", i), 200, "page"))
		errs <- err
	}
	go send(0)
	<-entered // the committer is writing the first exchange
	for i := 1; i <= queued; i++ {
		go send(i)
	}
	for len(w.in) < queued {
		runtime.Gosched()
	}
	close(gate)
	for range queued + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// warcinfo, the first exchange, then the five queued in one write.
	if writes != 3 {
		t.Errorf("%d writes, want 3", writes)
	}
	recs := specRead(t, files(t, dir)[0])
	if len(recs) != 1+2*(queued+1) {
		t.Errorf("%d records, want %d", len(recs), 1+2*(queued+1))
	}
	checkIndexes(t, dir)
}

// TestCommitPlainPending: a pending made without getPending (no wake
// channel of its own) is committed too.
func TestCommitPlainPending(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{})
	p, _, err := w.prepare(exchange("https://example.com/", 200, "page"))
	if err != nil {
		t.Fatal(err)
	}
	plain := &pending{data: p.data, reqLen: p.reqLen, entry: p.entry}
	if err := w.commit(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if recs := specRead(t, files(t, dir)[0]); len(recs) != 3 {
		t.Errorf("%d records, want warcinfo, request and response", len(recs))
	}
}

// TestWriteAfterClose: a Write after Close is refused, and a second Close
// does nothing.
func TestWriteAfterClose(t *testing.T) {
	w := newTestWriter(t, t.TempDir(), Options{})
	write(t, w, exchange("https://example.com/", 200, "page"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(exchange("https://example.com/late", 200, "page")); !errors.Is(err, errClosed) {
		t.Errorf("Write after Close: %v, want %v", err, errClosed)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestGzipLevels: every level makes files other readers read, and a bad
// level is refused.
func TestGzipLevels(t *testing.T) {
	sizes := map[int]int64{}
	for _, level := range []int{GzipStore, 1, 9} {
		dir := t.TempDir()
		w := newTestWriter(t, dir, Options{GzipLevel: level})
		write(t, w, exchange("https://example.com/", 200, strings.Repeat("<p>the same paragraph</p>\n", 200)))
		w.Close()
		f := files(t, dir)[0]
		specCheck(t, specRead(t, f))
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		sizes[level] = st.Size()
	}
	if sizes[GzipStore] < 5000 || sizes[1] > sizes[GzipStore]/4 {
		t.Errorf("file sizes by level %v: stored members should hold the 5.2 KB page as is, level 1 compress it", sizes)
	}
	for _, bad := range []int{-2, 10} {
		if _, _, err := NewWriter(Options{Dir: t.TempDir(), GzipLevel: bad}); err == nil || !strings.Contains(err.Error(), "gzip level") {
			t.Errorf("GzipLevel %d: %v, want an error naming the gzip level", bad, err)
		}
	}
}

// TestReaderRejects: what the reader says of files that are not WARC.
func TestReaderRejects(t *testing.T) {
	cases := map[string]string{
		"empty gzip member": "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"not WARC":          "HTTP/1.1 200 OK\r\n\r\n",
		"short block":       "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 10\r\n\r\nabc",
		"no Content-Length": "WARC/1.1\r\nWARC-Type: resource\r\n\r\n\r\n\r\n",
		"no end CRLFs":      "WARC/1.1\r\nContent-Length: 3\r\n\r\nabcXXXX",
	}
	for name, in := range cases {
		r := NewReader(strings.NewReader(in), "f.warc")
		_, _, err := r.Next()
		if !errors.Is(err, ErrCorrupt) || err == io.EOF {
			t.Errorf("%s: %v, want a corrupt-file error", name, err)
		}
	}
}

// TestReplayKeyedByBody: POSTs of one URL with different bodies are
// different captures; a body the archive lacks is not answered by another.
func TestReplayKeyedByBody(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{Dedup: DedupOff})
	post := func(body, answer string) *Exchange {
		ex := exchange("https://example.com/search", 200, answer)
		ex.Method = "POST"
		ex.Request = RequestBytes("POST", "/search", "example.com", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(body))
		return ex
	}
	write(t, w, exchange("https://example.com/search", 200, "the form"))
	write(t, w, post("q=a", "results for a"))
	write(t, w, post("q=b", "results for b"))
	w.Close()
	a, err := LoadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, body, want string
	}{
		{"GET", "", "the form"},
		{"POST", "q=a", "results for a"},
		{"POST", "q=b", "results for b"},
		{"POST", "q=c", ""},
		{"POST", "", ""},
	} {
		c, err := a.LookupRequest(tc.method, "https://example.com/search", []byte(tc.body))
		switch {
		case tc.want == "" && !errors.Is(err, ErrNotArchived):
			t.Errorf("%s %q: %v, want ErrNotArchived", tc.method, tc.body, err)
		case tc.want != "" && (err != nil || string(c.Payload) != tc.want):
			t.Errorf("%s %q: %v; want %q", tc.method, tc.body, err, tc.want)
		}
	}
	if c, err := a.Lookup("POST", "https://example.com/search"); err != nil || string(c.Payload) != "results for b" {
		t.Errorf("Lookup of the last POST, whatever its body: %v", err)
	}
	es, err := ReadIndex(IndexPath(files(t, dir)[0]))
	if err != nil {
		t.Fatal(err)
	}
	bodies := 0
	for _, e := range es {
		if e.RequestBody != "" {
			bodies++
		}
	}
	if bodies != 2 {
		t.Errorf("%d index lines with a request body digest, want 2", bodies)
	}
}
