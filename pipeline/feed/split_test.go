package feed

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestSplitFieldsAgreesWithDecoder(t *testing.T) {
	objs := []string{
		`{}`,
		` { } `,
		`{"url":"https://a.test/x","status":200,"title":"T","depth":3}`,
		`{"a":{"b":[1,{"c":"}]"}],"d":null},"e":[],"f":true,"g":false,"h":-1.5e3}`,
		`{"q\"uo\\te":"x\"}","é":"ü","u\u0041":"\u00e9"}`,
		`{ "sp" : 1 , "ace" : [ 1 , 2 ] }`,
		`{"s":"a,b}c]d"}`,
	}
	for _, o := range objs {
		got, err := splitFields([]byte(o), nil)
		if err != nil {
			t.Fatalf("splitFields(%s): %v", o, err)
		}
		want, err := decodeFields([]byte(o))
		if err != nil {
			t.Fatalf("decodeFields(%s): %v", o, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d fields, want %d", o, len(got), len(want))
		}
		for i := range got {
			if got[i].Name != want[i].name || string(got[i].Value) != string(want[i].value) {
				t.Errorf("%s: field %d = %q:%s, want %q:%s", o, i, got[i].Name, got[i].Value, want[i].name, want[i].value)
			}
		}
	}
}

func TestSplitFieldsRejectsMalformed(t *testing.T) {
	for _, o := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"x}`, `{"a":[1}`, `{a:1}`, `{"a":1 "b":2}`} {
		if _, err := splitFields([]byte(o), nil); err == nil {
			t.Errorf("splitFields(%q): no error", o)
		}
	}
}

func FuzzSplitFields(f *testing.F) {
	f.Add(`{"url":"https://a.test/","n":1,"o":{"x":[1,"]"]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encodeItem writes valid UTF-8 only
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &obj) != nil {
			return // not an object
		}
		want, err := decodeFields([]byte(s))
		if err != nil {
			return // not an object
		}
		got, err := splitFields([]byte(s), nil)
		if err != nil {
			t.Fatalf("splitFields(%q): %v", s, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d fields, want %d", s, len(got), len(want))
		}
		for i := range got {
			if got[i].Name != want[i].name || string(got[i].Value) != string(want[i].value) {
				t.Fatalf("%q: field %d = %q:%s, want %q:%s", s, i, got[i].Name, got[i].Value, want[i].name, want[i].value)
			}
		}
	})
}

// BenchmarkSplitFields measures splitting one S1F item (the follow
// spider's page) into its fields: splitFields against the decoder it
// replaced.
func BenchmarkSplitFields(b *testing.B) {
	obj := []byte(`{"url":"http://one.test:8080/p/12345","status":200,"title":"Page 12345 of the tree","depth":4}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := splitFields(obj, make([]Field, 0, 8)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeFields(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
