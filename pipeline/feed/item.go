package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
)

// ErrItem is the kind of error for items that cannot be exported: nil,
// neither a struct nor a map, or holding values JSON cannot represent
// (functions, channels, complex numbers, cyclic data). The item is dropped
// and the crawl goes on.
var ErrItem = errors.New("cannot export item")

// ItemError says which item could not be exported and why.
type ItemError struct {
	// Type is the item's Go type ("<nil>" for nil).
	Type string
	// Reason says what is wrong and how to fix it.
	Reason string
}

func (e *ItemError) Error() string {
	return fmt.Sprintf("%v of type %s: %s", ErrItem, e.Type, e.Reason)
}

// Is makes errors.Is(err, ErrItem) true.
func (e *ItemError) Is(target error) bool { return target == ErrItem }

// field is one top-level field of an item, as JSON.
type field struct {
	name  string
	value json.RawMessage
}

// EncodeItem returns item as the JSON object feed exports write (compact,
// json tags, map keys sorted, HTML characters not escaped), or an error of
// kind ErrItem naming what cannot be encoded. Item pipelines that ship
// items elsewhere (RedisItems) use it so every export agrees.
func EncodeItem(item any) ([]byte, error) { return encodeItem(item) }

// encodeItem returns item as a compact JSON object. Structs use their json
// tags, maps are sorted by key; HTML characters are not escaped.
func encodeItem(item any) ([]byte, error) {
	if item == nil {
		return nil, &ItemError{Type: "<nil>", Reason: "the item is nil; send a struct or a map"}
	}
	rv := reflect.ValueOf(item)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: "the item is a nil pointer; send a struct or a map"}
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct && rv.Kind() != reflect.Map {
		return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: "items must be structs, pointers to structs, or maps with string keys"}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(item); err != nil {
		return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: fmt.Sprintf("%v (every field must be JSON-serialisable; "+
			"tag unexportable fields with `json:\"-\"`)", err)}
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) == 0 || b[0] != '{' {
		// A type with a MarshalJSON method that does not produce an object.
		return nil, &ItemError{Type: fmt.Sprintf("%T", item), Reason: "the item does not encode to a JSON object"}
	}
	return b, nil
}

// fieldsOf splits a JSON object into its top-level fields, in order.
func fieldsOf(obj []byte) ([]field, error) {
	if fs, err := splitFields(obj, nil, nil); err == nil {
		out := make([]field, len(fs))
		for i, f := range fs {
			out[i] = field{name: f.Name, value: f.Value}
		}
		return out, nil
	}
	return decodeFields(obj)
}

// decodeFields is fieldsOf with encoding/json's decoder, whose errors say
// what is wrong with malformed input.
func decodeFields(obj []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, field{name: name, value: raw})
	}
	return out, nil
}

// selectFields returns obj reduced to the named fields, in that order;
// fields the item lacks are left out.
func selectFields(obj []byte, names []string) ([]byte, error) {
	fs, err := fieldsOf(obj)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]json.RawMessage, len(fs))
	for _, f := range fs {
		byName[f.name] = f.value
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, name := range names {
		v, ok := byName[name]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// cellText renders a JSON value as a CSV cell: strings unquoted, null
// empty, numbers and booleans as written, lists and objects as JSON.
func cellText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return ""
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return s
		}
	}
	return string(v)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
