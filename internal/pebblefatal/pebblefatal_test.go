package pebblefatal

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestBreakerRecoversAndStaysBroken(t *testing.T) {
	var b Breaker
	if err := b.Do("write", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	plain := errors.New("not fatal")
	if err := b.Do("write", func() error { return plain }); err != plain || b.Err() != nil {
		t.Fatalf("a plain error: %v (broken: %v)", err, b.Err())
	}
	// Pebble's Fatalf, on the caller's goroutine.
	err := b.Do("push", func() error {
		b.Logger().Fatalf("pebble: fatal commit error: %v", syscall.ENOSPC)
		return nil
	})
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "push: pebble: fatal commit error") {
		t.Fatalf("err = %v", err)
	}
	called := false
	if err2 := b.Do("ack", func() error { called = true; return nil }); err2 == nil || called {
		t.Fatalf("a broken breaker ran a write (err %v)", err2)
	}
	if !errors.Is(b.Err(), ErrFatal) {
		t.Errorf("Err = %v", b.Err())
	}
}

func TestBreakerRecoversPebblesErrorPanics(t *testing.T) {
	var b Breaker
	werr := &fs.PathError{Op: "write", Path: "000006.log", Err: syscall.ENOSPC}
	err := b.Do("push", func() error { panic(werr) })
	if !errors.Is(err, ErrFatal) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ErrFatal wrapping ENOSPC", err)
	}
}

func TestBreakerLetsOtherPanicsThrough(t *testing.T) {
	var b Breaker
	defer func() {
		if v := recover(); v != "a bug" {
			t.Errorf("recovered %v", v)
		}
		if b.Err() != nil {
			t.Errorf("broken by a bug: %v", b.Err())
		}
	}()
	_ = b.Do("x", func() error { panic("a bug") })
}

func TestFatalfOutsideDoPanics(t *testing.T) {
	var b Breaker
	defer func() {
		v := recover()
		if _, ok := v.(*Error); !ok {
			t.Errorf("recovered %v, want *Error", v)
		}
	}()
	b.Logger().Fatalf("boom")
}

func TestBreakerFail(t *testing.T) {
	var b Breaker
	werr := &fs.PathError{Op: "fdatasync", Path: "000006.log", Err: syscall.EIO}
	err := b.Fail("syncing the log", werr)
	if !errors.Is(err, ErrFatal) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "syncing the log: fdatasync 000006.log") {
		t.Fatalf("err = %v", err)
	}
	if b.Err() != err {
		t.Fatalf("Err = %v, want %v", b.Err(), err)
	}
	called := false
	if err2 := b.Do("ack", func() error { called = true; return nil }); err2 != err || called {
		t.Fatalf("a broken breaker ran a write (err %v)", err2)
	}
	// The first failure stays the one reported.
	if err3 := b.Fail("again", errors.New("later")); err3 != err {
		t.Fatalf("second Fail = %v, want the first error", err3)
	}
}
