// Package pipeline processes the items callbacks produce: cleaning,
// validation, deduplication, storage. Pipelines run in the order given by
// ITEM_PIPELINES (registered name -> order, lower first); each receives the
// item the previous one returned. Returning an error drops the item; the
// drop is counted (item_dropped_count, item_dropped_reasons_count/<reason>)
// and the crawl goes on.
package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/internal/registry"

	"github.com/gocrawl/gocrawl/spider"
)

// Stage processes one item at a time. It may be called concurrently
// (up to CONCURRENT_ITEMS items at once) and must be safe for that.
type Stage interface {
	// ProcessItem returns the item to pass on (the same or a new one), or an
	// error to drop it.
	ProcessItem(ctx context.Context, item any) (any, error)
}

// Opener is implemented by pipelines that open resources when the crawl
// starts (files, database connections).
type Opener interface {
	Open(ctx context.Context, c *spider.Crawler) error
}

// Closer is implemented by pipelines that flush and close when the crawl
// ends; spider.CloseReason(ctx) says why it ended.
type Closer interface {
	Close(ctx context.Context) error
}

// Func adapts a function to Stage.
type Func func(ctx context.Context, item any) (any, error)

// ProcessItem calls f.
func (f Func) ProcessItem(ctx context.Context, item any) (any, error) { return f(ctx, item) }

// DropItemError drops an item with a reason, without counting it as an error.
type DropItemError struct{ Reason string }

func (e *DropItemError) Error() string { return "item dropped: " + e.Reason }

// Drop returns an error that drops the item for reason.
func Drop(reason string) error { return &DropItemError{Reason: reason} }

// ErrFatal is the kind of a pipeline error after which the crawl must not
// go on, such as a feed that can no longer be written (a full disk): the
// engine stops the crawl gracefully (nothing new is sent) and Run reports
// the error, instead of fetching pages whose items would be lost.
var ErrFatal = errors.New("item pipeline cannot go on")

// Fatal wraps err as an ErrFatal error; nil stays nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err}
}

type fatalError struct{ err error }

func (e *fatalError) Error() string        { return e.err.Error() }
func (e *fatalError) Unwrap() error        { return e.err }
func (e *fatalError) Is(target error) bool { return target == ErrFatal }

// Reason returns the stat-friendly reason an error dropped an item.
func Reason(err error) string {
	var d *DropItemError
	if errors.As(err, &d) {
		return d.Reason
	}
	return "error"
}

// Factory builds a pipeline for a crawl.
type Factory func(c *spider.Crawler) (Stage, error)

var factories registry.Registry[Factory]

// Register makes a pipeline available by name to ITEM_PIPELINES.
func Register(name string, f Factory) {
	factories.Register(name, f)
}

// Named is a built pipeline with its name.
type Named struct {
	Name string
	Stage
}

// Build returns the pipelines enabled by ITEM_PIPELINES, in order.
func Build(c *spider.Crawler) ([]Named, error) {
	entries, err := registry.Ordered(c.Settings, "ITEM_PIPELINES", "", factories.Has)
	if err != nil {
		return nil, err
	}
	out := make([]Named, 0, len(entries))
	for _, e := range entries {
		f, _ := factories.Lookup(e.Name)
		p, err := f(c)
		if err != nil {
			return nil, fmt.Errorf("item pipeline %s: %w", e.Name, err)
		}
		if p != nil {
			out = append(out, Named{Name: e.Name, Stage: p})
		}
	}
	return out, nil
}
