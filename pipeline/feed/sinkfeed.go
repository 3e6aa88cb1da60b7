package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/spider"
)

// This file is the item side of a sink feed: an Exporter whose target is
// a registered sink keeps items in a bounded buffer and a background
// writer hands them to the sink in batches of Options.BatchItems. A
// shorter batch is written only every FlushInterval (so that no item
// waits longer), at a Flush and at Close: a database pays for every
// statement (parsing, planning, a commit), so full batches are what keeps
// its cost per item low. While the sink's server is away the writer retries with backoff,
// the buffer fills, and ProcessItem waits for room: the crawl slows down
// rather than drop an item.

// Defaults of the sink options.
const (
	DefaultBatchItems   = 1000
	DefaultBufferItems  = 10000
	DefaultRetryTimeout = 10 * time.Minute
)

// Backoff between attempts to write a batch while the sink is unavailable.
const (
	minRetryDelay = 100 * time.Millisecond
	maxRetryDelay = 10 * time.Second
)

// sinkFeed is the state of an Exporter that writes to a Sink.
type sinkFeed struct {
	sink Sink
	opts Options
	clk  clock.Clock
	log  zerolog.Logger

	names nameCache // the items' field names

	mu      sync.Mutex
	cond    *sync.Cond // broadcast when buf shrinks or err is set
	buf     []Record   // waiting or being written, oldest first
	written int64
	flushes int   // Flush calls waiting: the writer writes short batches
	err     error // a failure that stopped the writer: fatal for the crawl
	opened  bool
	closing bool

	kick    chan struct{} // wakes the writer (buffered, 1)
	abort   chan struct{} // closed when Close gives up retrying
	stopped chan struct{} // closed when the writer returns
}

func newSinkFeed(s Sink, opts Options) *sinkFeed {
	f := &sinkFeed{sink: s, opts: opts, clk: opts.Clock, log: zerolog.Nop(),
		kick: make(chan struct{}, 1), abort: make(chan struct{}), stopped: make(chan struct{})}
	if f.clk == nil {
		f.clk = clock.Real
	}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (o Options) batchItems() int {
	if o.BatchItems > 0 {
		return o.BatchItems
	}
	return DefaultBatchItems
}

func (o Options) bufferItems() int {
	n := o.BufferItems
	if n <= 0 {
		n = DefaultBufferItems
	}
	return max(n, o.batchItems())
}

func (o Options) retryTimeout() time.Duration {
	if o.RetryTimeout > 0 {
		return o.RetryTimeout
	}
	return DefaultRetryTimeout
}

func (f *sinkFeed) open(ctx context.Context, name string, c *spider.Crawler) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened {
		return fmt.Errorf("feed %s: already opened", name)
	}
	if c != nil {
		f.log = c.Log.With().Str("feed", name).Logger()
	}
	f.opened = true
	go f.run(name)
	return nil
}

func (f *sinkFeed) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// add queues rec, waiting while the buffer is full.
func (f *sinkFeed) add(ctx context.Context, name string, rec Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.opened || f.closing {
		return fmt.Errorf("feed %s: item exported while the exporter is not open", name)
	}
	limit := f.opts.bufferItems()
	if len(f.buf) >= limit && f.err == nil {
		f.wake()
		stop := context.AfterFunc(ctx, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
		for len(f.buf) >= limit && f.err == nil && ctx.Err() == nil {
			f.cond.Wait()
		}
		stop()
	}
	if f.err != nil {
		return f.err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("feed %s: %w", name, err)
	}
	f.buf = append(f.buf, rec)
	if len(f.buf) >= f.opts.batchItems() {
		f.wake()
	}
	return nil
}

// flush waits until every queued item is stored.
func (f *sinkFeed) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.opened {
		return nil
	}
	f.flushes++
	defer func() { f.flushes-- }()
	f.wake()
	for len(f.buf) > 0 && f.err == nil {
		f.cond.Wait()
	}
	return f.err
}

// run is the writer: it stores the buffer in full batches whenever it is
// woken, and what is left (shorter batches) when FlushInterval has passed,
// at a Flush and at Close.
func (f *sinkFeed) run(name string) {
	defer close(f.stopped)
	iv := f.opts.FlushInterval
	if iv <= 0 {
		iv = time.Second
	}
	size := f.opts.batchItems()
	t := f.clk.NewTimer(iv)
	defer t.Stop()
	for {
		due := false // the interval passed: what is buffered now is written
		select {
		case <-f.kick:
		case <-t.C():
			t.Reset(iv)
			due = true
		}
		f.mu.Lock()
		owed := 0 // items that go out even in a short batch
		if due {
			owed = len(f.buf)
		}
		f.mu.Unlock()
		for {
			f.mu.Lock()
			closing, n := f.closing, min(len(f.buf), size)
			if n < size && n > owed && !closing && f.flushes == 0 {
				n = owed // a short batch waits for more items
			}
			batch := f.buf[:n:n]
			f.mu.Unlock()
			if n == 0 {
				if closing {
					return
				}
				break
			}
			err := f.store(name, batch)
			f.mu.Lock()
			if err != nil {
				f.err = pipeline.Fatal(err)
				f.cond.Broadcast()
				f.mu.Unlock()
				return
			}
			// Keep one backing array: move what came in meanwhile to its
			// front, and let go of the stored records.
			left := copy(f.buf, f.buf[n:])
			clear(f.buf[left:])
			f.buf = f.buf[:left]
			owed = max(0, owed-n)
			f.written += int64(n)
			f.cond.Broadcast()
			f.mu.Unlock()
		}
	}
}

// store writes batch, retrying with backoff while the sink is
// unavailable, for at most RetryTimeout or until Close gives up.
func (f *sinkFeed) store(name string, batch []Record) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-f.abort:
			cancel()
		case <-stop:
		}
	}()
	var since time.Time
	delay := minRetryDelay
	for attempt := 1; ; attempt++ {
		err := f.sink.Write(ctx, batch)
		if err == nil {
			if attempt > 1 {
				f.log.Info().Int("attempts", attempt).Msg("the sink is back: exports go on")
			}
			return nil
		}
		if !errors.Is(err, ErrUnavailable) {
			return fmt.Errorf("feed %s: %w (the %d items of the batch are kept for a resumed job: fix the cause and run the job again)", name, err, len(batch))
		}
		now := f.clk.Now()
		if since.IsZero() {
			since = now
			f.log.Warn().Err(err).Int("items", len(batch)).Msg("the sink is unavailable: exports pause and items wait in the buffer while it is retried")
		}
		if now.Sub(since) >= f.opts.retryTimeout() {
			return fmt.Errorf("feed %s: unavailable for %v, giving up (FEED_RETRY_TIMEOUT): %w", name, f.opts.retryTimeout(), err)
		}
		t := f.clk.NewTimer(delay)
		select {
		case <-t.C():
		case <-f.abort:
			t.Stop()
			return fmt.Errorf("feed %s: closed while the sink was unavailable: %w", name, err)
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// close stores what is left, stops the writer and closes the sink. When
// ctx ends first, retrying stops and the error says how many items were
// not stored.
func (f *sinkFeed) close(ctx context.Context, name string) error {
	f.mu.Lock()
	if !f.opened || f.closing {
		f.mu.Unlock()
		if !f.opened {
			return f.sink.Close()
		}
		return nil
	}
	f.closing = true
	f.mu.Unlock()
	f.wake()
	select {
	case <-f.stopped:
	case <-ctx.Done():
		close(f.abort)
		<-f.stopped
	}
	f.mu.Lock()
	left, err := len(f.buf), f.err
	f.mu.Unlock()
	cerr := f.sink.Close()
	if err == nil && left > 0 {
		err = fmt.Errorf("feed %s: %d items not stored: %w", name, left, ctx.Err())
	}
	if err == nil && cerr != nil {
		err = fmt.Errorf("feed %s: %w", name, cerr)
	}
	return err
}

func (f *sinkFeed) items() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}
