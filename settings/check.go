package settings

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrInvalid is the kind of a problem found by a registered check: a value
// of the right type that a component cannot use (an unknown scope key, a
// middleware that is not registered, an address that cannot be listened
// on).
var ErrInvalid = errors.New("invalid setting")

// CheckFunc validates the settings a component reads, the way the
// component itself reads them when a crawl starts, without starting
// anything: no file is created, no connection is opened. It returns every
// problem it finds (joined with errors.Join), each naming its setting;
// Invalid builds such a problem with the value's origin.
type CheckFunc func(s *Settings) error

type check struct {
	name string
	fn   CheckFunc
}

var (
	checkMu sync.RWMutex
	checks  []check
)

// RegisterCheck adds a validation run by Validate. Components that read
// settings beyond their types (throttling, middlewares, item pipelines,
// schedulers, feed exports, metrics) register one in an init function, so
// that `gocrawl settings` finds every problem `gocrawl run` would, before
// any request is sent. It panics on a duplicate name, a programming error.
func RegisterCheck(name string, fn CheckFunc) {
	checkMu.Lock()
	defer checkMu.Unlock()
	if slices.ContainsFunc(checks, func(c check) bool { return c.name == name }) {
		panic("settings: duplicate check " + name)
	}
	checks = append(checks, check{name, fn})
}

// Checks returns the names of the registered checks, sorted.
func Checks() []string {
	checkMu.RLock()
	defer checkMu.RUnlock()
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.name
	}
	slices.Sort(out)
	return out
}

// Validate runs every registered check on s and returns every problem at
// once, joined (Errors splits them), checks in the order of their names. A
// check that panics is reported as a problem of its own instead of
// crashing the command.
func Validate(s *Settings) error {
	checkMu.RLock()
	cs := slices.Clone(checks)
	checkMu.RUnlock()
	slices.SortFunc(cs, func(a, b check) int { return strings.Compare(a.name, b.name) })
	var errs []error
	for _, c := range cs {
		errs = append(errs, unjoin(runCheck(c, s))...)
	}
	return errors.Join(errs...)
}

func runCheck(c check, s *Settings) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("settings check %s panicked: %v", c.name, v)
		}
	}()
	return c.fn(s)
}

// Invalid returns the problem msg about setting name, with where its
// effective value came from ("gocrawl.yaml:12", "-s NAME=VALUE", ...), of
// kind ErrInvalid. msg should say what is wrong and what to write instead.
func Invalid(s *Settings, name, msg string) *Error {
	origin := ""
	if v, ok := s.Origin(name); ok && v.Source != SourceDefault {
		origin = originOf(v)
	}
	return &Error{Kind: ErrInvalid, Setting: name, Origin: origin, Msg: msg}
}

// InvalidErr is Invalid with err's message, less a leading "NAME: " that
// repeats the setting's name.
func InvalidErr(s *Settings, name string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), name+": ")
	return Invalid(s, name, msg)
}
