package feed

import (
	"encoding/json"
	"errors"
)

// splitFields splits a compact JSON object (as encodeItem writes it) into
// its top-level fields, in order, without copying: each value is a slice
// of obj. It scans the bytes once; a name with escapes is unquoted with
// encoding/json. Input that is not a well-formed object is an error (the
// caller may fall back on a full decoder).
//
// It replaces a json.Decoder walk (a token and a RawMessage copy per
// field), which was the largest per-item cost of a database feed.
func splitFields(obj []byte, out []Field) ([]Field, error) {
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
			if err := json.Unmarshal(obj[i:end], &name); err != nil {
				return nil, err
			}
		} else {
			name = string(obj[i+1 : end-1])
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
