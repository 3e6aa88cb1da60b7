package render

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTabPoolPrefersTheProxysTab(t *testing.T) {
	opened := func(id int, proxy string) *tab {
		tb := &tab{id: id, proxy: proxy}
		tb.ctx = context.Background()
		return tb
	}
	for _, tc := range []struct {
		name  string
		free  []*tab
		proxy string
		want  int
	}{
		{"same proxy", []*tab{opened(0, ""), opened(1, "http://p:1"), opened(2, "http://q:1")}, "http://q:1", 2},
		{"no proxy", []*tab{opened(0, "http://p:1"), opened(1, "")}, "", 1},
		{"an unopened tab before reopening one", []*tab{opened(0, "http://p:1"), {id: 1}}, "http://q:1", 1},
		{"else the longest idle", []*tab{opened(0, "http://p:1"), opened(1, "http://r:1")}, "http://q:1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTabPool()
			for _, tb := range tc.free {
				p.put(tb)
			}
			got, err := p.get(context.Background(), tc.proxy, nil)
			if err != nil || got.id != tc.want {
				t.Fatalf("got tab %v (%v), want %d", got, err, tc.want)
			}
		})
	}
	t.Run("waits for a tab", func(t *testing.T) {
		p := newTabPool()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := p.get(ctx, "", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		go p.put(&tab{id: 7})
		got, err := p.get(context.Background(), "", nil)
		if err != nil || got.id != 7 {
			t.Fatalf("got %v, %v", got, err)
		}
	})
}
