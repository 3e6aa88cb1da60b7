package feed

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// checkTimeout bounds Check of a sink: connecting and looking at the
// table.
const checkTimeout = 30 * time.Second

// newSinkExporter returns an exporter to the sink that target names.
func newSinkExporter(target string, opts Options) (*Exporter, error) {
	if opts.Overwrite {
		return nil, fmt.Errorf("%w %s: a sink is not overwritten (-O); use -o: rows with the same key are replaced", ErrSink, redactedScheme(target))
	}
	if opts.Format != "" {
		return nil, fmt.Errorf("%w %s: a sink stores items, not a %s file: remove the format", ErrSink, redactedScheme(target), opts.Format)
	}
	if opts.BatchItems < 0 || opts.BufferItems < 0 || opts.RetryTimeout < 0 {
		return nil, fmt.Errorf("%w %s: batch items, buffer items and retry timeout must not be negative", ErrSink, redactedScheme(target))
	}
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrSink, redactedScheme(target), err)
	}
	s, name, err := openSink(target, opts.SinkParams)
	if err != nil {
		return nil, err
	}
	return &Exporter{path: name, opts: opts, sink: newSinkFeed(s, opts)}, nil
}

// IsSink reports whether the exporter writes to a sink (a database)
// rather than a file; Path then returns its URI with the password hidden.
func (e *Exporter) IsSink() bool { return e.sink != nil }

// checkSink asks the sink whether items can be stored.
func (e *Exporter) checkSink() error {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	if err := e.sink.sink.Check(ctx); err != nil {
		if errors.Is(err, ErrSink) {
			return err
		}
		return fmt.Errorf("%w %s: %w", ErrSink, e.path, err)
	}
	return nil
}

// sinkItem queues the encoded item obj for the sink.
func (e *Exporter) sinkItem(ctx context.Context, item any, obj []byte) (any, error) {
	var err error
	if len(e.opts.Fields) > 0 {
		if obj, err = selectFields(obj, e.opts.Fields); err != nil {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: err.Error()}
		}
	}
	// One scan of the encoded object; the fields are slices of it, their
	// names the feed's. They are split on the stack, then kept in a
	// slice of their exact size: the record waits in the buffer. (split
	// is its own variable: were it fs, which goes to the buffer, tmp would
	// be moved to the heap, 320 bytes an item.)
	var tmp [8]Field
	var fs []Field
	split, err := splitFields(obj, tmp[:0], &e.sink.names)
	if err == nil {
		fs = append(make([]Field, 0, len(split)), split...)
	} else {
		// The decoder's error says what is wrong.
		slow, derr := decodeFields(obj)
		if derr != nil {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: derr.Error()}
		}
		fs = make([]Field, len(slow))
		for i, f := range slow {
			fs[i] = Field{Name: f.name, Value: f.value}
		}
	}
	rec := Record{JSON: obj, Fields: fs}
	if v, ok := e.sink.sink.(Validator); ok {
		if err := v.Validate(rec); err != nil {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: err.Error()}
		}
	}
	if err := e.sink.add(ctx, e.path, rec); err != nil {
		return nil, err
	}
	return item, nil
}
