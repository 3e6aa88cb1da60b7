package feed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
)

// memSink stores records in memory. While down, Write fails with
// ErrUnavailable; with fail set, with that error. Every attempt is sent on
// attempts when it is not nil.
type memSink struct {
	target   *url.URL
	mu       sync.Mutex
	down     bool
	fail     error
	stored   []string
	batches  []int
	attempts chan int
}

func (m *memSink) Check(ctx context.Context) error { return nil }
func (m *memSink) Close() error                    { return nil }

func (m *memSink) Write(ctx context.Context, batch []Record) error {
	m.mu.Lock()
	down, fail := m.down, m.fail
	if !down && fail == nil {
		for _, r := range batch {
			m.stored = append(m.stored, string(r.JSON))
		}
		m.batches = append(m.batches, len(batch))
	}
	m.mu.Unlock()
	if m.attempts != nil {
		m.attempts <- len(batch)
	}
	if down {
		return fmt.Errorf("%w: connection refused", ErrUnavailable)
	}
	return fail
}

func (m *memSink) set(down bool, fail error) {
	m.mu.Lock()
	m.down, m.fail = down, fail
	m.mu.Unlock()
}

func (m *memSink) rows() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.stored...)
}

// The test sinks by host: memtest://NAME gives mems[NAME].
var (
	memsMu sync.Mutex
	mems   = map[string]*memSink{}
)

func init() {
	RegisterSink("memtest", func(u *url.URL) (Sink, error) {
		if u.Query().Get("bad") != "" {
			return nil, errors.New("bad parameter")
		}
		memsMu.Lock()
		defer memsMu.Unlock()
		m := mems[u.Host]
		if m == nil {
			m = &memSink{}
			mems[u.Host] = m
		}
		m.target = u
		return m, nil
	})
}

func newMem(t *testing.T) (*memSink, string) {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	m := &memSink{}
	memsMu.Lock()
	mems[name] = m
	memsMu.Unlock()
	return m, "memtest://" + name
}

func TestSinkBatches(t *testing.T) {
	m, target := newMem(t)
	ex, err := New(target, Options{BatchItems: 3, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := ex.ProcessItem(ctx, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Flush(); err != nil {
		t.Fatal(err)
	}
	if ex.Items() != 7 || ex.Offset() != 7 {
		t.Errorf("Items, Offset = %d, %d; want 7", ex.Items(), ex.Offset())
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.rows(), ""); got != `{"n":0}{"n":1}{"n":2}{"n":3}{"n":4}{"n":5}{"n":6}` {
		t.Errorf("stored %s", got)
	}
	for _, n := range m.batches {
		if n > 3 {
			t.Errorf("batches %v: one is larger than BatchItems", m.batches)
		}
	}
}

// TestSinkFullBatches: items that came in while a batch was written wait
// for a full batch (a database pays for every statement), and a short one
// goes out once FlushInterval has passed.
func TestSinkFullBatches(t *testing.T) {
	m, target := newMem(t)
	m.attempts = make(chan int) // each write waits for the test to take it
	clk := clock.NewFake(time.Unix(0, 0))
	ex, err := New(target, Options{BatchItems: 3, FlushInterval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := ex.ProcessItem(ctx, map[string]int{"n": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := func(want int) {
		t.Helper()
		if n := <-m.attempts; n != want {
			t.Fatalf("a write of %d items, want %d (batches so far %v)", n, want, m.batches)
		}
	}
	add(0, 10) // the first write waits for the test: all 10 are buffered
	next(3)
	next(3)
	next(3)
	add(10, 12) // item 9 waited: with these two it makes a full batch
	next(3)
	add(12, 13)
	clk.Advance(time.Minute) // FlushInterval has passed: item 12 goes out
	next(1)
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(m.rows()); got != 13 {
		t.Errorf("%d items stored, want 13", got)
	}
}

// TestSinkBackPressure takes the sink away with a full buffer: the item
// that does not fit waits (the crawl is slowed, nothing is dropped) while
// the writer retries with backoff, and goes in once the sink is back.
func TestSinkBackPressure(t *testing.T) {
	m, target := newMem(t)
	m.attempts = make(chan int, 100)
	clk := clock.NewFake(time.Unix(0, 0))
	ex, err := New(target, Options{BatchItems: 2, BufferItems: 4, FlushInterval: time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	m.set(true, nil)
	for i := range 4 { // fills the buffer; the first batch fails
		if _, err := ex.ProcessItem(ctx, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	<-m.attempts
	fifth := make(chan error, 1)
	go func() {
		_, err := ex.ProcessItem(ctx, map[string]int{"n": 4})
		fifth <- err
	}()
	// Three more failed attempts, each after its backoff.
	for range 3 {
		for clk.Pending() < 2 { // the flush timer and the retry timer
			time.Sleep(time.Millisecond)
		}
		clk.Advance(maxRetryDelay)
		<-m.attempts
	}
	select {
	case err := <-fifth:
		t.Fatalf("an item went in while the buffer was full and the sink away: %v", err)
	default:
	}
	m.set(false, nil)
	for clk.Pending() < 2 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(maxRetryDelay)
	if err := <-fifth; err != nil {
		t.Fatal(err)
	}
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.rows(), ""); got != `{"n":0}{"n":1}{"n":2}{"n":3}{"n":4}` {
		t.Errorf("stored %s, want every item once in order", got)
	}
}

func TestSinkGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name       string
		down       bool
		fail, want string
	}{
		{"unavailable past the retry timeout", true, "", "giving up (FEED_RETRY_TIMEOUT)"},
		{"a permanent error", false, "value too long for column title", "value too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, target := newMem(t)
			m.attempts = make(chan int, 100)
			clk := clock.NewFake(time.Unix(0, 0))
			ex, err := New(target, Options{RetryTimeout: time.Minute, FlushInterval: time.Hour, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ex.Open(ctx, nil)
			var fail error
			if tc.fail != "" {
				fail = errors.New(tc.fail)
			}
			m.set(tc.down, fail)
			ex.ProcessItem(ctx, map[string]string{"title": "x"})
			flushed := make(chan error, 1)
			go func() { flushed <- ex.Flush() }()
			<-m.attempts
			if tc.down {
				for range 20 { // backoff up to 10 s: a minute is passed within 20 attempts
					for clk.Pending() < 2 {
						time.Sleep(time.Millisecond)
					}
					clk.Advance(maxRetryDelay)
					<-m.attempts
					if clk.Now().Sub(time.Unix(0, 0)) >= time.Minute {
						break
					}
				}
			}
			err = <-flushed
			if !errors.Is(err, pipeline.ErrFatal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Flush = %v, want a fatal error saying %q", err, tc.want)
			}
			if _, err := ex.ProcessItem(ctx, map[string]string{"title": "y"}); !errors.Is(err, pipeline.ErrFatal) {
				t.Errorf("ProcessItem after the failure = %v, want the fatal error", err)
			}
			if err := ex.Close(ctx); err == nil {
				t.Error("Close = nil after the writer failed")
			}
		})
	}
}

func TestSinkSettings(t *testing.T) {
	_, a := newMem(t)
	s := settings.New()
	err := s.SetOverride(fmt.Sprintf(`FEEDS={"%s?x=1": {table: quotes, key: [site, url], fields: [url], batch_items: 5, retry_timeout: 2.5}, "%s": null}`,
		a, a+"-b"))
	if err != nil {
		t.Fatal(err)
	}
	exs, err := FromSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by target: "...-b" comes first.
	if len(exs) != 2 || !exs[0].IsSink() || exs[0].opts.BatchItems != 1000 || exs[0].opts.BufferItems != 10000 {
		t.Fatalf("exporters %+v", exs)
	}
	o := exs[1].opts
	if o.BatchItems != 5 || o.RetryTimeout != 2500*time.Millisecond || o.Fields[0] != "url" {
		t.Errorf("options %+v", o)
	}
	memsMu.Lock()
	q := mems[strings.TrimPrefix(a, "memtest://")].target.Query()
	memsMu.Unlock()
	if q.Get("table") != "quotes" || q.Get("key") != "site,url" || q.Get("x") != "1" {
		t.Errorf("the sink's URI query is %v", q)
	}

	bad := settings.New()
	if err := bad.SetOverride(`FEEDS={"memtest://u:pw@a?table=t": {table: other}, "memtest://b": {format: csv}, "memtest://c": {tabel: x}, "memtest://d?bad=1": null, "nosuch://e": null}`); err != nil {
		t.Fatal(err)
	}
	_, err = FromSettings(bad)
	for _, w := range []string{
		"table is given both in the URI and as a feed option",
		"FEEDS[memtest://b]: format does not apply to a sink",
		`FEEDS[memtest://c]: unknown option "tabel"`,
		"FEEDS[memtest://d?bad=1]: item sink memtest://d?bad=1: bad parameter",
		`FEEDS[nosuch://e]: no feed storage for this URI "nosuch://e": the feed URIs this program takes are memtest://`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want %q", err, w)
		}
	}
	if strings.Contains(err.Error(), ":pw@") {
		t.Errorf("err shows a password: %v", err)
	}
	for _, o := range []Options{{Overwrite: true}, {Format: JSON}, {BatchItems: -1}} {
		if _, err := New("memtest://x", o); !errors.Is(err, ErrSink) {
			t.Errorf("New(%+v) = %v, want an ErrSink", o, err)
		}
	}
}

// TestSeveralFeeds exports one crawl's items to a sink and a file at once,
// each with its own fields.
func TestSeveralFeeds(t *testing.T) {
	m, target := newMem(t)
	path := t.TempDir() + "/items.jsonl"
	file, err := New(path, Options{Fields: []string{"title"}})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := New(target, Options{Fields: []string{"price", "title"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ex := range []*Exporter{file, sink} {
		if err := ex.Open(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []book{{Title: "A", Price: 1}, {Title: "B", Price: 2}} {
		for _, ex := range []*Exporter{file, sink} {
			if _, err := ex.ProcessItem(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ex := range []*Exporter{file, sink} {
		if err := ex.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(m.rows(), ""); got != `{"price":1,"title":"A"}{"price":2,"title":"B"}` {
		t.Errorf("sink stored %s", got)
	}
	if got := readFile(t, path); got != "{\"title\":\"A\"}\n{\"title\":\"B\"}\n" {
		t.Errorf("file holds %q", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
