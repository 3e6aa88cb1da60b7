package pebbleq_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// misuse records Pebble's PossibleAPIMisuse events: a SingleDelete that
// met two Sets of its key (NondeterministicSingleDelete) or none
// (IneffectualSingleDelete) in a flush or compaction.
type misuse struct {
	mu     sync.Mutex
	events []string
}

func (m *misuse) listener() *pebble.EventListener {
	return &pebble.EventListener{PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
		m.mu.Lock()
		m.events = append(m.events, info.String())
		m.mu.Unlock()
	}}
}

func (m *misuse) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.events
	m.events = nil
	return out
}

// openMisuseDB opens a Pebble database whose memtable is tiny, so that
// flushes and compactions (where a SingleDelete meets its Set) happen
// often.
func openMisuseDB(t *testing.T, dir string, m *misuse) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{
		EventListener: m.listener(),
		MemTableSize:  256 << 10,
		Logger:        quietLogger{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// compactAll flushes the memtable and compacts every key, so that every
// SingleDelete meets whatever it deletes.
func compactAll(t *testing.T, db *pebble.DB) {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
}

// TestMisuseListenerSeesDoubleSet makes sure the listener the tests below
// rely on reports a key set twice and then single-deleted (the three in
// one flush): without it, their "no event" would prove nothing.
func TestMisuseListenerSeesDoubleSet(t *testing.T) {
	m := &misuse{}
	db := openMisuseDB(t, t.TempDir(), m)
	defer db.Close()
	k := []byte("x/key")
	for _, v := range []string{"a", "b"} {
		if err := db.Set(k, []byte(v), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SingleDelete(k, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	compactAll(t, db)
	if ev := m.take(); len(ev) == 0 {
		t.Fatal("Set, Set, SingleDelete compacted without a PossibleAPIMisuse event: the listener does not work")
	}
}

// TestSingleDeleteKeysSetOnce drives the store through random pushes
// (some delayed), reserves, nacks, acks, promotions, flushes, closes and
// crashes (pending grouped writes lost), with flushes and compactions of
// the database in between, and checks that Pebble never saw a
// SingleDelete meet two Sets of a key or none: every queue key is set
// once and deleted once, which is what SingleDelete requires. At the end
// the queue's keys are gone from the disk, not shadowed by tombstones.
func TestSingleDeleteKeysSetOnce(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(fmt.Sprintf("GroupWrites=%v", group), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			m := &misuse{}
			rng := rand.New(rand.NewPCG(7, uint64(len(fmt.Sprint(group)))))
			db := openMisuseDB(t, dir, m)
			open := func() *pebbleq.Store {
				s, err := pebbleq.New(db, pebbleq.Options{Codec: reqcodec.Codec{Spider: &testSpider{}}, Prefix: jobdir.PrefixQueue,
					GroupWrites: group, HeadBuffer: 4, MaxPendingBytes: 64 << 10})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Open(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open()
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			var reserved []pqueue.ID
			hosts := []string{"a.example", "b.example", "c.example"}
			n := 0
			for step := range 4000 {
				switch r := rng.IntN(100); {
				case r < 40:
					host := hosts[rng.IntN(len(hosts))]
					req := spider.MustRequest(fmt.Sprintf("https://%s/p/%d/%s", host, n, strings.Repeat("x", rng.IntN(200))), nil)
					n++
					info := pqueue.Info{Queue: host, Priority: rng.IntN(3), Scopes: throttling.Scopes{{Name: host}}}
					if rng.IntN(5) == 0 {
						info.NotBefore = now.Add(time.Duration(rng.IntN(60)) * time.Second)
					}
					if err := s.Push(ctx, &pqueue.Entry{Info: info, Req: req}); err != nil {
						t.Fatal(err)
					}
				case r < 65:
					host := hosts[rng.IntN(len(hosts))]
					if _, ok, err := s.Head(ctx, host); err != nil {
						t.Fatal(err)
					} else if !ok {
						continue
					}
					e, err := s.Reserve(ctx, host)
					if err != nil {
						t.Fatal(err)
					}
					reserved = append(reserved, e.ID)
				case r < 85 && len(reserved) > 0:
					i := rng.IntN(len(reserved))
					id := reserved[i]
					reserved = slices.Delete(reserved, i, i+1)
					var err error
					if rng.IntN(4) == 0 {
						err = s.Nack(ctx, id) // back in line; acked or nacked again later
					} else {
						err = s.Ack(ctx, id)
					}
					if err != nil {
						t.Fatal(err)
					}
				case r < 90:
					now = now.Add(10 * time.Second)
					if _, err := s.PromoteDue(ctx, now); err != nil {
						t.Fatal(err)
					}
				case r < 95:
					if err := s.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				case r < 97:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				case r < 98:
					compactAll(t, db)
				default:
					// A close, or a crash that loses the pending writes:
					// reserved entries are back in line either way.
					if rng.IntN(2) == 0 {
						if err := s.Close(ctx); err != nil {
							t.Fatal(err)
						}
					}
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					db = openMisuseDB(t, dir, m)
					s = open()
					reserved = nil
				}
				if ev := m.take(); len(ev) > 0 {
					t.Fatalf("step %d: Pebble reports %s", step, ev)
				}
			}
			// Drain everything, then compact: no queue entry may be left.
			now = now.Add(time.Hour)
			if _, err := s.PromoteDue(ctx, now); err != nil {
				t.Fatal(err)
			}
			for _, id := range reserved {
				if err := s.Ack(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			for _, host := range hosts {
				drain(t, s, host)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			compactAll(t, db)
			if ev := m.take(); len(ev) > 0 {
				t.Fatalf("Pebble reports %s", ev)
			}
			if keys := queueKeys(t, db); len(keys) != 1 || !bytes.Equal(keys[0], []byte(jobdir.PrefixQueue+"n")) {
				t.Fatalf("after draining, the queue's keys are %q, want only the ID record", keys)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func queueKeys(t *testing.T, db *pebble.DB) [][]byte {
	t.Helper()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(jobdir.PrefixQueue), UpperBound: []byte{jobdir.PrefixQueue[0] + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys [][]byte
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, slices.Clone(it.Key()))
	}
	return keys
}

// copyDir copies the fixture src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "gen" || strings.HasPrefix(rel, "gen"+string(filepath.Separator)) {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestResumeJobWrittenWithDelete resumes a job directory written by the
// store before it used SingleDelete (testdata/job-before-singledelete,
// made by its gen/main.go with main at f0ae6d8: acknowledged and promoted
// entries deleted with Delete, some in a table and some in the log only,
// a few entries reserved and not acknowledged, some still delayed). Every
// request the old store left is served once, the rest never, and once the
// queue is drained and compacted no entry is left and Pebble reported no
// misuse.
func TestResumeJobWrittenWithDelete(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "job-before-singledelete")
	want, err := os.ReadFile(filepath.Join(src, "remaining.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyDir(t, src, dir)
	var log bytes.Buffer
	j, err := jobdir.Open(dir, "test", jobdir.Options{SyncInterval: -1, Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if !j.Resumed() {
		t.Fatal("the fixture was not resumed")
	}
	s, err := pebbleq.New(j.DB(), pebbleq.Options{Codec: reqcodec.Codec{Spider: &testSpider{}}, Prefix: jobdir.PrefixQueue, GroupWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	wantURLs := strings.Fields(string(want))
	if s.Len() != len(wantURLs) {
		t.Fatalf("resumed queue holds %d entries, the old store left %d", s.Len(), len(wantURLs))
	}
	// A few pushes after the resume: new IDs, above the old ones.
	for i := range 5 {
		r := spider.MustRequest(fmt.Sprintf("https://h0.example/new-%d", i), nil)
		if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h0.example"}, Req: r}); err != nil {
			t.Fatal(err)
		}
		wantURLs = append(wantURLs, r.URL.String())
	}
	if _, err := s.PromoteDue(ctx, time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, host := range []string{"h0.example", "h1.example", "h2.example"} {
		got = append(got, drain(t, s, host)...)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(wantURLs)
	if !slices.Equal(got, wantURLs) {
		t.Fatalf("served %d requests, want the %d the old store left plus 5 new", len(got), len(wantURLs))
	}
	compactAll(t, j.DB())
	if keys := queueKeys(t, j.DB()); len(keys) != 1 {
		t.Fatalf("after draining, the queue's keys are %q, want only the ID record", keys)
	}
	if strings.Contains(log.String(), "misuse") {
		t.Fatalf("Pebble reported a misuse: %s", log.String())
	}
}

// drain reserves and acknowledges every entry of queue in order and
// returns their URLs.
func drain(t *testing.T, s *pebbleq.Store, queue string) []string {
	t.Helper()
	ctx := context.Background()
	var urls []string
	for {
		if _, ok, err := s.Head(ctx, queue); err != nil {
			t.Fatal(err)
		} else if !ok {
			return urls
		}
		e, err := s.Reserve(ctx, queue)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, e.Req.URL.String())
		if err := s.Ack(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
	}
}
