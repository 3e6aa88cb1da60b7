package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// wrapFunc is a Downloader made of a function.
type wrapFunc func(next Fetcher) Fetcher

func (w wrapFunc) WrapFetcher(next Fetcher) Fetcher { return w(next) }

// The guards of a chain share one frame per traversal; each still tells
// the errors its own middleware passed on from those it made, when a
// middleware calls next several times, concurrently, or enters the chain
// again from inside it (as a robots.txt fetch does).
func TestGuardFrameSharedByTheChain(t *testing.T) {
	errDown := errors.New("download failed")
	errOwn := errors.New("made by the middleware")
	failing := FetcherFunc(func(context.Context, *spider.Request) (*spider.Response, error) { return nil, errDown })
	pass := wrapFunc(func(next Fetcher) Fetcher { return next })
	// build returns the chain outer(inner(base)), both guarded.
	build := func(outer, inner Downloader, base Fetcher) Fetcher {
		ch := &guardChain{}
		f := guardFetcher("inner", inner, base, nil, ch)
		return guardFetcher("outer", outer, f, nil, ch)
	}
	var entry Fetcher // the chain, for a middleware that enters it again
	tests := []struct {
		name        string
		outer       Downloader
		inner       Downloader
		wantBlame   string // "" = the error passes through as is
		wantWrapped error
	}{
		{name: "passed on through both", outer: pass, inner: pass, wantWrapped: errDown},
		{name: "passed on wrapped", outer: wrapFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, r *spider.Request) (*spider.Response, error) {
				_, err := next.Fetch(ctx, r)
				return nil, fmt.Errorf("outer saw: %w", err)
			})
		}), inner: pass, wantWrapped: errDown},
		{name: "own error after a failed next", outer: pass, inner: wrapFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, r *spider.Request) (*spider.Response, error) {
				_, _ = next.Fetch(ctx, r)
				return nil, errOwn
			})
		}), wantBlame: "inner", wantWrapped: errOwn},
		{name: "next called concurrently", outer: wrapFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, r *spider.Request) (*spider.Response, error) {
				var wg sync.WaitGroup
				errs := make([]error, 4)
				for i := range errs {
					wg.Go(func() { _, errs[i] = next.Fetch(ctx, r) })
				}
				wg.Wait()
				return nil, errs[3]
			})
		}), inner: pass, wantWrapped: errDown},
		{name: "chain entered again from inside", outer: pass, inner: wrapFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, r *spider.Request) (*spider.Response, error) {
				if r.Get("nested") == nil {
					// A fetch of its own through the whole chain, with
					// the request's context: its error is the nested
					// traversal's, not this call's next's.
					if _, err := entry.Fetch(ctx, r.Clone().Set("nested", true)); !errors.Is(err, errDown) {
						return nil, fmt.Errorf("nested fetch: %v", err)
					}
					return nil, errOwn
				}
				return next.Fetch(ctx, r)
			})
		}), wantBlame: "inner", wantWrapped: errOwn},
		{name: "next's error passed on after entering the chain again", outer: pass, inner: wrapFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, r *spider.Request) (*spider.Response, error) {
				_, err := next.Fetch(ctx, r)
				if r.Get("nested") == nil {
					// The nested traversal must not wipe what this
					// call's next returned.
					_, _ = entry.Fetch(ctx, r.Clone().Set("nested", true))
				}
				return nil, err
			})
		}), wantWrapped: errDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry = build(tt.outer, tt.inner, failing)
			_, err := entry.Fetch(context.Background(), spider.MustRequest("http://127.0.0.1/", nil))
			var me *Error
			blamed := ""
			if errors.As(err, &me) {
				blamed = me.Middleware
			}
			if blamed != tt.wantBlame || !errors.Is(err, tt.wantWrapped) {
				t.Errorf("error %v (blamed %q), want %v blamed on %q", err, blamed, tt.wantWrapped, tt.wantBlame)
			}
		})
	}
}

// The context that carries a guard frame is its parent in every other
// way: values, deadline, cancellation and its cause reach it and the
// contexts made from it.
func TestGuardFrameContextIsItsParent(t *testing.T) {
	type key struct{}
	stop := errors.New("stopped for the test")
	deadline := time.Now().Add(time.Hour)
	parent, cancelDeadline := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
	defer cancelDeadline()
	parent, cancel := context.WithCancelCause(parent)
	ch := &guardChain{}
	ctx, f := enterGuard(parent, ch, ch.newGuard())
	if got := ctx.Value(ch); got != f {
		t.Fatalf("frame = %v, want %v", got, f)
	}
	if ctx.Value(key{}) != "v" {
		t.Error("the parent's value is lost")
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
		t.Errorf("deadline = %v %v", d, ok)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cancel(stop)
	select { // at once: the child is registered with the parent's cancelCtx, not watched by a goroutine
	case <-child.Done():
	default:
		t.Fatal("a context made from the frame's context was not cancelled with its parent")
	}
	if ctx.Err() != context.Canceled || context.Cause(ctx) != stop || context.Cause(child) != stop {
		t.Errorf("err %v, cause %v, child's cause %v", ctx.Err(), context.Cause(ctx), context.Cause(child))
	}
}
