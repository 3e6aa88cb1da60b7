package monitor

import (
	"errors"
	"slices"
	"testing"
	"time"
)

type book struct {
	URL    string   `json:"url" monitor:"required,pattern=^https://"`
	Title  string   `json:"title" monitor:"required"`
	Price  *float64 `json:"price" monitor:"required"`
	ISBN   string   `json:"isbn" monitor:"pattern=^[0-9]{13}$"`
	Tags   []string `json:"tags" monitor:"pattern=^[a-z]+(,[a-z]+)*$"`
	Extra  any      `json:"extra" monitor:"type=object"`
	Count  any      `json:"count" monitor:"type=number"`
	Offers []offer  `json:"offers"`
	Seller *seller  `json:"seller"`
	Skip   string   `json:"-" monitor:"required"`
	hidden string   //nolint:unused // unexported fields are not checked
	Base
}

type offer struct {
	Shop  string  `json:"shop" monitor:"required"`
	Price float64 `json:"price" monitor:"required,type=number"`
}

type seller struct {
	Name string `monitor:"required"`
}

// Base is embedded: its fields are checked as the book's own.
type Base struct {
	Spider  string    `json:"spider" monitor:"required"`
	Scraped time.Time `json:"scraped" monitor:"type=string"`
}

func price(f float64) *float64 { return &f }

func validBook() book {
	return book{URL: "https://b.example/1", Title: "T", Price: price(0), ISBN: "9780000000001", Tags: []string{"a,b"},
		Extra: map[string]any{"k": 1}, Count: 3.0, Offers: []offer{{"s", 1}}, Seller: &seller{"x"}, Base: Base{Spider: "books"}}
}

func TestValidateStruct(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(b *book)
		want []string
	}{
		{"valid", func(b *book) {}, nil},
		{"valid through a pointer", nil, nil},
		{"missing fields", func(b *book) { b.URL, b.Title, b.Price = "", "", nil },
			[]string{"url: required, but missing", "title: required, but missing", "price: required, but missing"}},
		{"pattern", func(b *book) { b.URL = "ftp://b.example/1"; b.ISBN = "12" },
			[]string{`url: "ftp://b.example/1" does not match pattern ^https://`, `isbn: "12" does not match pattern ^[0-9]{13}$`}},
		{"empty optional field skips the pattern", func(b *book) { b.ISBN = "" }, nil},
		{"pattern on each string of a list", func(b *book) { b.Tags = []string{"ok", "Not OK"} },
			[]string{`tags[1]: "Not OK" does not match pattern ^[a-z]+(,[a-z]+)*$`}},
		{"type of an interface field", func(b *book) { b.Extra = "text"; b.Count = "3" },
			[]string{"extra: want type object, got string", "count: want type number, got string"}},
		{"integer is a number", func(b *book) { b.Count = 3 }, nil},
		{"nested list", func(b *book) { b.Offers = append(b.Offers, offer{}) },
			[]string{"offers[1].shop: required, but missing", "offers[1].price: required, but missing"}},
		{"nested pointer", func(b *book) { b.Seller = &seller{} }, []string{"seller.Name: required, but missing"}},
		{"embedded", func(b *book) { b.Spider = "" }, []string{"spider: required, but missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := validBook()
			var item any = &b
			if tc.edit != nil {
				tc.edit(&b)
				item = b
			}
			got, err := ValidateStruct(item)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateStructBadTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		item any
		want string
	}{
		{"unknown option", struct {
			A string `monitor:"requird"`
		}{}, `bad monitor tag on .A: unknown option "requird"; use required, type=T or pattern=RE`},
		{"unknown type", struct {
			A any `monitor:"type=text"`
		}{}, "bad monitor tag on .A: type=text is not a JSON type; use one of string, number, integer, boolean, array, object"},
		{"type against the Go type", struct {
			A int `monitor:"type=string"`
		}{}, "bad monitor tag on .A: type=string but the field's Go type int is always a JSON integer"},
		{"bad pattern", struct {
			A string `monitor:"pattern=(("`
		}{}, "bad monitor tag on .A: pattern= error parsing regexp: missing closing ): `((`"},
		{"pattern on a number", struct {
			A int `monitor:"pattern=^1"`
		}{}, "bad monitor tag on .A: pattern= needs a string field (or a list of strings, or any), not int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateStruct(tc.item)
			if !errors.Is(err, ErrBadTag) || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s (kind ErrBadTag)", err, tc.want)
			}
		})
	}
}

func TestValidateStructNotAStruct(t *testing.T) {
	for _, item := range []any{map[string]any{"a": 1}, "text", (*book)(nil), nil} {
		if _, err := ValidateStruct(item); !errors.Is(err, ErrNotStruct) {
			t.Errorf("ValidateStruct(%#v): %v, want ErrNotStruct", item, err)
		}
	}
}
