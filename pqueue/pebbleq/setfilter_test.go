package pebbleq

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

// TestSetFilterGrows checks the Set's bloom filter against the disk: it
// is built from the fingerprints stored by an earlier run, grows when
// more are added than it was sized for, and never hides a stored or
// pending fingerprint.
func TestSetFilterGrows(t *testing.T) {
	defer func(c uint) { minFilterCapacity = c }(minFilterCapacity)
	minFilterCapacity = 64
	ctx := context.Background()
	db, err := pebble.Open(t.TempDir(), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fp := func(i int) dupefilter.Fingerprint {
		var f dupefilter.Fingerprint
		copy(f[:], fmt.Sprintf("fp-%013d", i))
		return f
	}
	// An earlier run stored 100 fingerprints.
	b := db.NewBatch()
	for i := range 100 {
		b.Set(func() []byte { f := fp(i); return append([]byte("f"), f[:]...) }(), nil, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s := NewSet(db, "f")
	for i := range 100 {
		if seen, err := s.Add(ctx, fp(i)); err != nil || !seen {
			t.Fatalf("stored fingerprint %d: Add = %v, %v", i, seen, err)
		}
	}
	// 64 is too small for 100 (three quarters at most), 128 too.
	if s.filter.cap != 256 {
		t.Fatalf("filter sized for %d, want 256 (doubled until 100 fit in three quarters)", s.filter.cap)
	}
	for i := 100; i < 1000; i++ {
		if seen, err := s.Add(ctx, fp(i)); err != nil || seen {
			t.Fatalf("new fingerprint %d: Add = %v, %v", i, seen, err)
		}
		if i%50 == 0 { // written now and then, as pushes do
			b := db.NewBatch()
			if err := s.writePending(b); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			s.committed()
		}
	}
	// 256 + 512 + 1024: grown by layers, without reading the disk again.
	if got := len(s.filter.full); got != 2 || s.filter.cap != 1024 {
		t.Fatalf("filter has %d full layers and a newest of %d after 1000 fingerprints, want 2 and 1024", got, s.filter.cap)
	}
	if s.filter.builds != 1 {
		t.Fatalf("the disk was read %d times to build the filter, want once", s.filter.builds)
	}
	// The layers' false positives add up to less than twice the first's.
	maybe := 0
	for i := 100_000; i < 120_000; i++ {
		if m, err := s.maybeHas(fp(i)); err != nil {
			t.Fatal(err)
		} else if m {
			maybe++
		}
	}
	rate := float64(maybe) / 20_000
	t.Logf("false positives over %d layers: %.2f %%", len(s.filter.full)+1, 100*rate)
	if rate > 2*filterFalsePositives {
		t.Errorf("false positives %.2f %% over the layers, want under %.0f %%", 100*rate, 200*filterFalsePositives)
	}
	s.recent = recentSet{} // make every lookup reach the filter
	for i := range 1000 {
		if seen, _ := s.Add(ctx, fp(i)); !seen {
			t.Fatalf("fingerprint %d no longer seen after the filter grew", i)
		}
	}
}

// BenchmarkSetFilterBuild measures what a resumed job pays once, at its
// first fingerprint lookup: building the bloom filter from the
// fingerprints on disk (1,000,000 here).
//
//	go test -run '^$' -bench SetFilterBuild -benchtime 3x ./pqueue/pebbleq/
func BenchmarkSetFilterBuild(b *testing.B) {
	const n = 1_000_000
	db, err := pebble.Open(b.TempDir(), &pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	batch := db.NewBatch()
	var k [17]byte
	k[0] = 'f'
	for i := range n {
		copy(k[1:], fmt.Sprintf("fp-%013d", i))
		batch.Set(k[:], nil, nil)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		b.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		s := NewSet(db, "f")
		if _, err := s.Add(ctx, dupefilter.Fingerprint{}); err != nil {
			b.Fatal(err)
		}
		if s.filter.n != n+1 {
			b.Fatalf("filter holds %d fingerprints, want %d", s.filter.n, n+1)
		}
	}
}
