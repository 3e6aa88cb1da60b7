package downloader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// endless is an endless body; reads counts the bytes handed out.
type endless struct{ reads int64 }

var xs = bytes.Repeat([]byte("x"), 64<<10)

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, xs)
	e.reads += int64(n)
	return n, nil
}

func TestBodyReaderNeverGrowsPastTheLimit(t *testing.T) {
	tests := []struct {
		name     string
		body     io.Reader
		limit    int64
		hint     int64
		wantLen  int
		wantErr  error
		maxCap   int
		maxReads int64
	}{
		{"endless, no hint", &endless{}, 100_000, -1, 100_000, errTooLarge, 100_000, 100_000 + 1<<16},
		{"endless, hint below the limit", &endless{}, 100_000, 5_000, 100_000, errTooLarge, 100_000, 100_000 + 1<<16},
		{"exactly the limit", bytes.NewReader(make([]byte, 100_000)), 100_000, -1, 100_000, nil, 100_000, 0},
		{"exactly the limit with its length", bytes.NewReader(make([]byte, 100_000)), 100_000, 100_000, 100_000, nil, 100_000, 0},
		{"one byte over", bytes.NewReader(make([]byte, 100_001)), 100_000, -1, 100_000, errTooLarge, 100_000, 0},
		{"small", bytes.NewReader([]byte("hello")), 100_000, -1, 5, nil, firstBuf, 0},
		{"lying huge hint", bytes.NewReader([]byte("hello")), 0, 1 << 40, 5, nil, maxHintBuf, 0},
		{"empty", bytes.NewReader(nil), 10, 0, 0, nil, 512, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bodyReader{limit: tt.limit, hint: tt.hint}
			got, err := br.read(context.Background(), tt.body)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(got) != tt.wantLen || cap(got) > tt.maxCap {
				t.Errorf("len %d cap %d, want len %d and cap <= %d", len(got), cap(got), tt.wantLen, tt.maxCap)
			}
			if e, ok := tt.body.(*endless); ok && e.reads > tt.maxReads {
				t.Errorf("read %d bytes of an endless body, want at most %d", e.reads, tt.maxReads)
			}
		})
	}
}

func TestBodyReaderWarnsOnce(t *testing.T) {
	var calls []int64
	br := bodyReader{limit: 1 << 20, hint: -1, warnAt: 1000, warn: func(n int64) { calls = append(calls, n) }}
	r := io.MultiReader(bytes.NewReader(make([]byte, 600)), bytes.NewReader(make([]byte, 600)), bytes.NewReader(make([]byte, 50_000)))
	if _, err := br.read(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] <= 1000 {
		t.Errorf("warn calls = %v, want exactly one above 1000", calls)
	}
}

func TestBudgetLimitsWhatOneBodyHolds(t *testing.T) {
	b := NewBudget(3<<20, 4)
	l := b.Lease(true)
	br := bodyReader{hint: -1, lease: l, maxHold: b.maxHold()}
	got, err := br.read(context.Background(), &endless{})
	if !errors.Is(err, errBudget) {
		t.Fatalf("err = %v, want errBudget", err)
	}
	if int64(cap(got)) > b.MaxBody() {
		t.Errorf("cap %d above MaxBody %d", cap(got), b.MaxBody())
	}
	if _, peak := b.Held(); peak > b.maxHold() {
		t.Errorf("peak %d above half the budget %d", peak, b.maxHold())
	}
	l.Release()
	if now, _ := b.Held(); now != 0 {
		t.Errorf("held %d after Release", now)
	}
	// An exact-fit body is not an error.
	l = b.Lease(true)
	br = bodyReader{hint: -1, lease: l, maxHold: b.maxHold()}
	if got, err := br.read(context.Background(), bytes.NewReader(make([]byte, 1000))); err != nil || len(got) != 1000 {
		t.Fatalf("small body: %d bytes, %v", len(got), err)
	}
	l.Release()
}

// TestBudgetNoDeadlock runs many downloads of random sizes through a
// small budget: they must all finish (no circular wait), and the budget
// must never be exceeded by leases that may wait.
func TestBudgetNoDeadlock(t *testing.T) {
	const conc = 8
	b := NewBudget(2<<20, conc)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for w := range conc {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for range 40 {
				size := rnd.IntN(800 << 10)
				l := b.Lease(true)
				br := bodyReader{hint: -1, lease: l, maxHold: b.maxHold()}
				body := io.LimitReader(&endless{}, int64(size))
				got, err := br.read(context.Background(), body)
				l.doneGrowing()
				if err != nil && !errors.Is(err, errBudget) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				if err == nil && len(got) != size {
					mu.Lock()
					errs = append(errs, errors.New("short body"))
					mu.Unlock()
				}
				// The callback keeps the body a little while.
				time.Sleep(time.Duration(rnd.IntN(200)) * time.Microsecond)
				l.Release()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("downloads sharing the budget deadlocked")
	}
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	if now, peak := b.Held(); now != 0 || peak > b.Total() {
		t.Errorf("held %d at the end, peak %d; want 0 and at most %d", now, peak, b.Total())
	}
}

func TestBudgetNoWaitLeaseNeverBlocks(t *testing.T) {
	b := NewBudget(2<<20, 1)
	hog := b.Lease(true)
	if err := hog.ensure(context.Background(), b.maxHold()); err != nil {
		t.Fatal(err)
	}
	if err := hog.ensure(context.Background(), b.share); err != nil {
		t.Fatal(err)
	}
	defer hog.Release()
	// Take the rest of the budget.
	rest := b.Lease(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rest.ensure(ctx, b.share); err != nil {
		t.Fatal(err)
	}
	l := b.Lease(false)
	done := make(chan error, 1)
	go func() { done <- l.ensure(context.Background(), 4<<20) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a no-wait lease waited for budget")
	}
	l.Release()
	rest.Release()
}

func TestBodyReaderGrowthHoldsAtMostOneAndAHalfLimits(t *testing.T) {
	for _, limit := range []int64{33 << 10, 50 << 10, 64 << 10, 100_000, 1 << 20} {
		b := bodyReader{limit: limit, hint: -1}
		cur := 0
		for {
			next, err := b.nextCap(cur)
			if err != nil {
				break
			}
			if int64(cur)+next > limit*3/2 {
				t.Errorf("limit %d: growing %d -> %d holds %d, above 1.5 × the limit", limit, cur, next, int64(cur)+next)
			}
			if next > limit {
				t.Errorf("limit %d: buffer of %d", limit, next)
			}
			cur = int(next)
		}
		if int64(cur) != limit {
			t.Errorf("limit %d: last buffer %d", limit, cur)
		}
	}
	// A Content-Length below the limit is allocated exactly.
	b := bodyReader{limit: 1 << 20, hint: 700 << 10}
	if next, _ := b.nextCap(0); next != 700<<10+1 {
		t.Errorf("first buffer for Content-Length 700 KiB: %d", next)
	}
}

// Bodies of unknown length are read into a pooled buffer; each body
// returned must be its own copy of its exact size, and the lease must hold
// what the body keeps, not the pooled buffer's size.
func TestBodyReaderPooledFirstBuffer(t *testing.T) {
	pattern := func(n int, seed byte) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = seed + byte(i%251)
		}
		return p
	}
	tests := []struct {
		name string
		size int
	}{
		{"empty", 0},
		{"small", 2_000},
		{"exactly the first buffer", firstBuf},
		{"one byte past the first buffer", firstBuf + 1},
		{"several growths", 5*firstBuf + 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(64<<20, 4)
			l := b.Lease(true)
			defer l.Release()
			br := bodyReader{hint: -1, lease: l, maxHold: b.maxHold()}
			want := pattern(tt.size, 1)
			got, err := br.read(context.Background(), bytes.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			if br.pooled != nil {
				t.Error("the pooled buffer was not given back")
			}
			if tt.size < firstBuf && cap(got) != tt.size {
				t.Errorf("cap %d, want the body's size %d", cap(got), tt.size)
			}
			if held, _ := b.Held(); tt.size < firstBuf && held != int64(tt.size) {
				t.Errorf("lease holds %d bytes for a body of %d", held, tt.size)
			}
			// Reading other bodies (which reuse the pooled buffer) must not
			// change this one.
			for i := range 3 {
				other := bodyReader{hint: -1}
				if _, err := other.read(context.Background(), bytes.NewReader(pattern(tt.size+1, byte(100+i)))); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Error("body changed after other bodies were read")
			}
		})
	}
}

func BenchmarkBodyReaderUnknownLength(b *testing.B) {
	body := bytes.Repeat([]byte("<p>x</p>"), 256) // 2 KB, a typical small page
	b.ReportAllocs()
	for b.Loop() {
		br := bodyReader{hint: -1}
		if _, err := br.read(context.Background(), bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
