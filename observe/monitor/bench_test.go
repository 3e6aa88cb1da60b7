package monitor

import (
	"context"
	"testing"
)

// The cost of validating one item, per validator: figures in
// docs/monitors.md.
func BenchmarkValidateItem(b *testing.B) {
	type item struct {
		URL   string  `json:"url" monitor:"required,pattern=^https://"`
		Title string  `json:"title" monitor:"required"`
		Price float64 `json:"price" monitor:"required"`
	}
	it := item{URL: "https://books.example/catalogue/a-light-in-the-attic_1000/index.html", Title: "A Light in the Attic", Price: 51.77}
	sch, err := LoadSchema(writeSchema(b, bookSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		v    Validator
	}{{"struct_tags", StructTags{}}, {"json_schema", sch}} {
		b.Run(bc.name, func(b *testing.B) {
			items := NewItems(0, false, bc.v)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := items.ProcessItem(ctx, it); err != nil {
					b.Fatal(err)
				}
			}
			if n := items.stats.Get(StatItemsInvalid); n > 0 {
				b.Fatalf("%v invalid items", n)
			}
		})
	}
}
