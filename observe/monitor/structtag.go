package monitor

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
)

// The `monitor` struct tag says what a valid item holds, field by field:
//
//	type Book struct {
//		URL   string   `json:"url" monitor:"required,pattern=^https://"`
//		Title string   `json:"title" monitor:"required"`
//		Price *float64 `json:"price" monitor:"required"`
//		ISBN  string   `json:"isbn" monitor:"pattern=^[0-9]{13}$"`
//		Extra any      `json:"extra" monitor:"type=object"`
//	}
//
// Options, separated by commas:
//
//   - required: the field is set: not its zero value (an empty string or
//     list, a nil pointer, map or interface, 0, false). Use a pointer for a
//     number whose 0 is valid.
//   - type=T: the value's JSON type is T: string, number, integer, boolean,
//     array or object. It is checked when the tag is read for a field of a
//     concrete Go type (a mismatch is a programming error) and on each item
//     for an interface field (any).
//   - pattern=RE: a string (or each string of a list) matches the regular
//     expression RE (Go syntax, unanchored: add ^ and $ to match the whole
//     value). pattern= comes last: everything after it is the expression,
//     commas included.
//
// type= and pattern= are checked only on fields that are set; add required
// to refuse empty ones. Fields are named as in the JSON export (the json
// tag's name); fields with json:"-" and unexported fields are not checked.
// Nested structs, pointers to them and lists of them are checked field by
// field ("offers[2].price"); embedded structs are flattened as
// encoding/json does.

// ErrBadTag is the kind of the error for a `monitor` tag that cannot be
// used: an unknown option or type, a regular expression that does not
// compile, a type= that contradicts the field's Go type.
var ErrBadTag = errors.New("bad monitor tag")

// ErrNotStruct is the kind of the error ValidateStruct returns for an item
// that is not a struct or a pointer to one (a map).
var ErrNotStruct = errors.New("item is not a struct")

// ValidateStruct checks item (a struct or a pointer to one) against the
// `monitor` tags of its fields and returns one problem per failing field,
// such as `url: "ftp://x" does not match pattern ^https://`; none when it
// is valid. The error is of kind ErrBadTag when a tag of item's type
// cannot be used, ErrNotStruct when item is not a struct. Call it in a
// test of your spider to check the tags of its item types.
func ValidateStruct(item any) ([]string, error) {
	v := reflect.ValueOf(item)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("%w: nil %s", ErrNotStruct, v.Type())
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %T", ErrNotStruct, item)
	}
	var problems []string
	if err := validateStruct(v, "", &problems, 0); err != nil {
		return nil, err
	}
	return problems, nil
}

// maxDepth bounds the recursion through nested structs (a linked list of
// items would otherwise be walked to its end).
const maxDepth = 16

type fieldRule struct {
	index    []int
	name     string
	required bool
	typ      string
	pattern  *regexp.Regexp
}

type structRules struct {
	fields []fieldRule
	err    error
}

var rulesCache sync.Map // reflect.Type -> *structRules

func rulesOf(t reflect.Type) *structRules {
	if r, ok := rulesCache.Load(t); ok {
		return r.(*structRules)
	}
	r := &structRules{}
	r.err = collect(t, nil, "", r)
	rulesCache.Store(t, r)
	return r
}

// collect adds the rules of t's fields to r; embedded structs without a
// JSON name are flattened into their parent, as encoding/json does.
func collect(t reflect.Type, index []int, prefix string, r *structRules) error {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		name, jsonNamed := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && !jsonNamed {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := collect(ft, idx, prefix, r); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		rule, err := parseTag(t, f)
		if err != nil {
			return err
		}
		rule.index, rule.name = idx, name
		r.fields = append(r.fields, rule)
	}
	return nil
}

func jsonName(f reflect.StructField) (string, bool) {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name, false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name, false
	}
	return name, true
}

var jsonTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

func parseTag(owner reflect.Type, f reflect.StructField) (fieldRule, error) {
	var rule fieldRule
	tag := f.Tag.Get("monitor")
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w on %s.%s: %s", ErrBadTag, owner.Name(), f.Name, fmt.Sprintf(format, args...))
	}
	for tag != "" {
		if re, ok := strings.CutPrefix(tag, "pattern="); ok {
			if !stringy(f.Type) {
				return rule, bad("pattern= needs a string field (or a list of strings, or any), not %s", f.Type)
			}
			p, err := regexp.Compile(re)
			if err != nil {
				return rule, bad("pattern= %v", err)
			}
			rule.pattern = p
			break
		}
		opt, rest, _ := strings.Cut(tag, ",")
		tag = rest
		switch name, val, _ := strings.Cut(strings.TrimSpace(opt), "="); name {
		case "":
		case "required":
			rule.required = true
		case "type":
			if !contains(jsonTypes, val) {
				return rule, bad("type=%s is not a JSON type; use one of %s", val, strings.Join(jsonTypes, ", "))
			}
			if k := staticKind(f.Type); k != "" && !kindIs(k, val) {
				return rule, bad("type=%s but the field's Go type %s is always a JSON %s", val, f.Type, k)
			}
			rule.typ = val
		default:
			return rule, bad("unknown option %q; use required, type=T or pattern=RE", opt)
		}
	}
	return rule, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// stringy reports whether a pattern can apply to a field of type t.
func stringy(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Slice, reflect.Array:
		return stringy(t.Elem())
	}
	return false
}

// staticKind is the JSON type every value of Go type t encodes to, or ""
// when it depends on the value (interfaces) or on a MarshalJSON method.
func staticKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string" // []byte is base64 text in JSON
		}
		return "array"
	case reflect.Map:
		return "object"
	case reflect.Struct:
		if t.String() == "time.Time" {
			return "string"
		}
		return "object"
	}
	return ""
}

// kindIs reports whether a value of JSON type have satisfies type=want: an
// integer is a number too.
func kindIs(have, want string) bool {
	return have == want || (have == "integer" && want == "number")
}

// dynamicKind is the JSON type of the value v holds.
func dynamicKind(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "null"
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64 {
		if f := v.Float(); f == float64(int64(f)) {
			return "integer" // JSON Schema counts 3.0 as an integer
		}
	}
	return staticKind(v.Type())
}

func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return v.Len() > 0
	}
	return !v.IsZero()
}

func validateStruct(v reflect.Value, prefix string, problems *[]string, depth int) error {
	if depth > maxDepth {
		return nil
	}
	rules := rulesOf(v.Type())
	if rules.err != nil {
		return rules.err
	}
	for _, r := range rules.fields {
		fv, ok := fieldByIndex(v, r.index)
		path := prefix + r.name
		if !ok || !isSet(fv) {
			if r.required {
				*problems = append(*problems, path+": required, but missing")
			}
			continue
		}
		if r.typ != "" {
			if k := dynamicKind(fv); !kindIs(k, r.typ) {
				*problems = append(*problems, fmt.Sprintf("%s: want type %s, got %s", path, r.typ, k))
				continue
			}
		}
		if r.pattern != nil {
			matchStrings(fv, path, r.pattern, problems)
		}
		if err := validateNested(fv, path, problems, depth); err != nil {
			return err
		}
	}
	return nil
}

// fieldByIndex follows index through embedded pointers; ok is false when
// one of them is nil.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 {
			for v.Kind() == reflect.Pointer {
				if v.IsNil() {
					return reflect.Value{}, false
				}
				v = v.Elem()
			}
		}
		v = v.Field(x)
	}
	return v, true
}

func matchStrings(v reflect.Value, path string, re *regexp.Regexp, problems *[]string) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !re.MatchString(s) {
			*problems = append(*problems, fmt.Sprintf("%s: %q does not match pattern %s", path, clip(s), re))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			matchStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i), re, problems)
		}
	default:
		*problems = append(*problems, fmt.Sprintf("%s: want a string for pattern %s, got %s", path, re, dynamicKind(v)))
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// validateNested checks the structs a field holds, directly or in a list.
func validateNested(v reflect.Value, path string, problems *[]string, depth int) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		return validateStruct(v, path+".", problems, depth+1)
	case reflect.Slice, reflect.Array:
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Array:
		default:
			return nil // a list of strings or numbers holds no fields
		}
		for i := range v.Len() {
			if err := validateNested(v.Index(i), fmt.Sprintf("%s[%d]", path, i), problems, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
