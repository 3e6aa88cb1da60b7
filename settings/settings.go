// Package settings holds gocrawl's configuration: every known setting with
// its type, default and documentation, and the effective values of a crawl
// with where each came from.
//
// Values are layered, lowest first: defaults < settings file (gocrawl.yaml)
// < the spider's own settings < environment (GOCRAWL_<NAME>) < command line
// (-s NAME=VALUE). Every value is checked against the setting's type when it
// is set, so a typo or a wrong type is an error naming the setting, where
// the value came from and what was expected.
package settings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Source says which layer a value came from.
type Source int

// The layers, lowest precedence first.
const (
	SourceDefault Source = iota
	SourceFile
	SourceSpider
	SourceEnv
	SourceCommandLine
)

func (s Source) String() string {
	switch s {
	case SourceDefault:
		return "default"
	case SourceFile:
		return "file"
	case SourceSpider:
		return "spider"
	case SourceEnv:
		return "env"
	case SourceCommandLine:
		return "command line"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Def describes one setting.
type Def struct {
	// Name is the setting's name, upper case with underscores.
	Name string
	// Type checks and normalises values.
	Type Type
	// Default is the value when nothing overrides it; it must be valid for
	// Type.
	Default any
	// Doc is one or two sentences for `gocrawl settings` and the docs.
	Doc string
	// Deprecated, when set, is logged when the setting is used, and says
	// what to use instead.
	Deprecated string
	// Secret marks a setting whose whole value is a secret (a token, a
	// webhook URL with its key in the path): wherever settings are shown,
	// its value is Mask (see Redact). Settings whose names say so
	// (PASSWORD, TOKEN, API_KEY, ...) are secret without it.
	Secret bool
}

var (
	regMu    sync.RWMutex
	registry = map[string]*Def{}
)

// Register adds a setting definition. Packages and users register their own
// settings (for example a custom middleware's options) in an init function.
// It panics on a duplicate name or an invalid default, which are
// programming errors.
func Register(d Def) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("settings: duplicate setting " + d.Name)
	}
	if d.Type == nil {
		panic("settings: setting " + d.Name + " has no type")
	}
	v, err := d.Type.Convert(d.Default)
	if err != nil {
		panic(fmt.Sprintf("settings: default of %s: %v", d.Name, err))
	}
	d.Default = v
	registry[d.Name] = &d
}

// Lookup returns the definition of name.
func Lookup(name string) (*Def, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	d, ok := registry[name]
	return d, ok
}

// Names returns every registered setting name, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

// Value is an effective value with its origin.
type Value struct {
	// V is the normalised value (see Type).
	V any
	// Source is the layer the value came from.
	Source Source
	// Origin says where exactly: "gocrawl.yaml:12", "GOCRAWL_DOWNLOAD_DELAY",
	// "-s DOWNLOAD_DELAY=2", the spider's name; "" for defaults.
	Origin string
}

// Settings is a set of effective values. The zero value is not usable; call
// New. Settings are safe for concurrent reads; set them before the crawl
// starts.
type Settings struct {
	mu       sync.RWMutex
	vals     map[string]Value
	warnings []string
	keyLines map[string]keyLines // lines of keys nested in values from YAML files
}

// New returns settings holding every registered default.
func New() *Settings {
	s := &Settings{vals: map[string]Value{}}
	regMu.RLock()
	for n, d := range registry {
		s.vals[n] = Value{V: d.Default, Source: SourceDefault}
	}
	regMu.RUnlock()
	return s
}

// Clone returns an independent copy.
func (s *Settings) Clone() *Settings {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Settings{vals: maps.Clone(s.vals), warnings: slices.Clone(s.warnings), keyLines: maps.Clone(s.keyLines)}
}

// Set checks v against name's type and stores it if src does not have a
// lower precedence than the layer that set the current value. It returns an
// *Error for unknown names (with a suggestion) and wrong types.
func (s *Settings) Set(name string, v any, src Source, origin string) error {
	d, ok := Lookup(name)
	if !ok {
		return unknown(name, origin)
	}
	nv, err := d.Type.Convert(v)
	if err != nil {
		return &Error{Kind: ErrType, Setting: name, Origin: origin, Msg: typeErrorText(name, d, v, err)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.vals[name]; ok && cur.Source > src {
		return nil
	}
	s.vals[name] = Value{V: nv, Source: src, Origin: origin}
	return nil
}

// SetMap sets every entry of m from one layer, collecting all errors.
func (s *Settings) SetMap(m map[string]any, src Source, origin string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := s.Set(k, m[k], src, origin); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Origin returns the effective value of name with its origin.
func (s *Settings) Origin(name string) (Value, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.vals[name]
	return v, ok
}

// Get returns the value of name. It panics for a name that is not
// registered: reading a setting that does not exist is a programming error.
func (s *Settings) Get(name string) any {
	s.mu.RLock()
	v, ok := s.vals[name]
	s.mu.RUnlock()
	if !ok {
		if d, ok := Lookup(name); ok {
			return d.Default
		}
		panic("settings: unknown setting " + name)
	}
	return v.V
}

func get[T any](s *Settings, name string) T {
	v := s.Get(name)
	t, ok := v.(T)
	if !ok {
		var zero T
		panic(fmt.Sprintf("settings: %s holds %T, read as %T", name, v, zero))
	}
	return t
}

// Bool returns a Bool setting.
func (s *Settings) Bool(name string) bool { return get[bool](s, name) }

// Int returns an Int setting.
func (s *Settings) Int(name string) int { return get[int](s, name) }

// Float returns a Float setting.
func (s *Settings) Float(name string) float64 { return get[float64](s, name) }

// String returns a String setting.
func (s *Settings) String(name string) string { return get[string](s, name) }

// Strings returns a StringList setting.
func (s *Settings) Strings(name string) []string { return get[[]string](s, name) }

// Ints returns an IntList setting.
func (s *Settings) Ints(name string) []int { return get[[]int](s, name) }

// Map returns a Map setting (YAML mapping with string keys).
func (s *Settings) Map(name string) map[string]any { return get[map[string]any](s, name) }

// Seconds returns a Float setting holding seconds as a duration; values
// above MaxSeconds behave as MaxSeconds (see Duration).
func (s *Settings) Seconds(name string) time.Duration {
	return Duration(s.Float(name))
}

// Names returns the names of every value held, sorted.
func (s *Settings) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.vals))
}

// Error kinds, for errors.Is.
var (
	// ErrUnknown: the setting name is not registered.
	ErrUnknown = errors.New("unknown setting")
	// ErrType: the value does not fit the setting's type.
	ErrType = errors.New("invalid value")
)

// Error is a settings problem: which setting, where the value came from,
// and what to fix.
type Error struct {
	Kind    error
	Setting string
	Origin  string
	Msg     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Origin != "" {
		b.WriteString(e.Origin)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.Error())
	if e.Setting != "" {
		b.WriteString(" ")
		b.WriteString(e.Setting)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnknown) and errors.Is(err, ErrType) work.
func (e *Error) Is(target error) bool { return target == e.Kind || errors.Is(e.Kind, target) }

func unknown(name, origin string) error {
	msg := ""
	if s := Suggest(name); s != "" {
		msg = fmt.Sprintf("did you mean %s?", s)
	} else {
		msg = "run `gocrawl settings` for the list of settings"
	}
	return &Error{Kind: ErrUnknown, Setting: name, Origin: origin, Msg: msg}
}

// Suggest returns the registered name closest to name, or "" when nothing
// is close enough to be a likely typo.
func Suggest(name string) string {
	best, bestD := "", 1<<30
	up := strings.ToUpper(name)
	for _, n := range Names() {
		d := EditDistance(up, n)
		if d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(2, len(name)/3) {
		return best
	}
	return ""
}

// EditDistance returns the Levenshtein distance between a and b: how many
// single-byte insertions, deletions or substitutions turn one into the
// other. It is what "did you mean" suggestions are based on.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
