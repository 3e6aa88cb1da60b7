package feed

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unicode/utf8"
	"unsafe"
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
		got, err := splitFields([]byte(o), nil, nil)
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
		if _, err := splitFields([]byte(o), nil, nil); err == nil {
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
		got, err := splitFields([]byte(s), nil, nil)
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
			if _, err := splitFields(obj, make([]Field, 0, 8), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// As a sink feed splits: names from its cache, the fields on the
	// stack, then copied to a slice of their exact size.
	b.Run("scan-interned", func(b *testing.B) {
		b.ReportAllocs()
		var names nameCache
		for b.Loop() {
			var tmp [8]Field
			fs, err := splitFields(obj, tmp[:0], &names)
			if err != nil {
				b.Fatal(err)
			}
			_ = append(make([]Field, 0, len(fs)), fs...)
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

// TestNameCache: a name comes back equal, the cached string from the
// second time on, and past maxNames names are still right (not cached).
func TestNameCache(t *testing.T) {
	var c nameCache
	first := c.get([]byte("url"))
	if again := c.get([]byte("url")); again != "url" || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Errorf("get(url) = %q, not the cached string", again)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 * maxNames {
				name := fmt.Sprintf("f%d", (i*7+g)%(2*maxNames))
				if got := c.get([]byte(name)); got != name {
					t.Errorf("get(%s) = %q", name, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(*c.m.Load()); n != maxNames {
		t.Errorf("%d names cached, want the bound %d", n, maxNames)
	}
	if got := (*nameCache)(nil).get([]byte("x")); got != "x" {
		t.Errorf("nil cache: %q", got)
	}
}
