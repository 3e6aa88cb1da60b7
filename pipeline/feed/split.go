package feed

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
)

// splitFields splits a compact JSON object (as encodeItem writes it) into
// its top-level fields, in order, without copying: each value is a slice
// of obj. It scans the bytes once; a name with escapes is unquoted with
// encoding/json. Input that is not a well-formed object is an error (the
// caller may fall back on a full decoder).
//
// It replaces a json.Decoder walk (a token and a RawMessage copy per
// field), which was the largest per-item cost of a database feed. With
// names, the field names come from it (one string per name for the whole
// crawl rather than one per item).
func splitFields(obj []byte, out []Field, names *nameCache) ([]Field, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return out, trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return nil, errNotObject
		}
		end, esc, ok := scanString(obj, i)
		if !ok {
			return nil, errNotObject
		}
		var name string
		if esc {
			// Its own variable: Unmarshal's pointer moves it to the heap,
			// which name (every field's) must not be.
			var unquoted string
			if err := json.Unmarshal(obj[i:end], &unquoted); err != nil {
				return nil, err
			}
			name = unquoted
		} else {
			name = names.get(obj[i+1 : end-1])
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, errNotObject
		}
		i = skipSpace(obj, i+1)
		vend, ok := scanValue(obj, i)
		if !ok {
			return nil, errNotObject
		}
		out = append(out, Field{Name: name, Value: obj[i:vend:vend]})
		i = skipSpace(obj, vend)
		if i >= len(obj) {
			return nil, errNotObject
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return out, trailing(obj, i+1)
		default:
			return nil, errNotObject
		}
	}
}

var errNotObject = errors.New("not a JSON object")

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errNotObject
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the end (past the closing quote) of the string that
// starts at b[i] == '"', and whether it holds escapes.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc, true
		}
	}
	return 0, false, false
}

// scanValue returns the end of the JSON value that starts at b[i]. It
// trusts the value to be valid JSON (encodeItem's output is): it only
// finds where the value ends.
func scanValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\n', '\t', '\r':
				if j == i {
					return 0, false
				}
				return j, true
			}
			j++
		}
		return 0, false
	}
}

// nameCache interns field names. The items of a crawl repeat the same few
// names, and a string for each name of each item was most of what a
// database feed allocated per item. Lookups take no lock: the map is
// replaced, never changed, when a name is added.
type nameCache struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex // serialises additions
}

// maxNames bounds the cache: items with ever new names (a map keyed by
// URL) get plain strings past it.
const maxNames = 256

// get returns b as a string, the cache's when it holds it. A nil cache
// returns a new string.
func (c *nameCache) get(b []byte) string {
	if c == nil {
		return string(b)
	}
	if m := c.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old == nil {
		m := map[string]string{s: s}
		c.m.Store(&m)
		return s
	}
	if len(*old) >= maxNames {
		return s
	}
	if t, ok := (*old)[s]; ok {
		return t
	}
	m := make(map[string]string, len(*old)+1)
	for k, v := range *old {
		m[k] = v
	}
	m[s] = s
	c.m.Store(&m)
	return s
}
