// Command gen wrote the job directory beside it (state/, synced.json,
// remaining.txt) with the gocrawl library of main at f0ae6d8, whose queue
// deleted acknowledged and promoted entries with Pebble's Delete (before
// SingleDelete). It is kept to show how the fixture was made:
//
//	git archive f0ae6d8 | tar -x -C /tmp/old && cp -r gen /tmp/old/gen
//	cd /tmp/old && go run ./gen DIR
//
// TestResumeJobWrittenWithDelete resumes that job with today's store.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

func main() {
	dir := os.Args[1]
	ctx := context.Background()
	j, err := jobdir.Open(dir, "test", jobdir.Options{SyncInterval: -1})
	check(err)
	s, err := pebbleq.New(j.DB(), pebbleq.Options{Codec: reqcodec.Codec{Spider: &testSpider{}}, Prefix: jobdir.PrefixQueue, GroupWrites: true})
	check(err)
	check(s.Open(ctx))
	left := map[string]bool{}
	push := func(i int, notBefore time.Time) {
		host := fmt.Sprintf("h%d.example", i%3)
		r := spider.MustRequest(fmt.Sprintf("https://%s/page-%d", host, i), nil)
		e := &pqueue.Entry{Info: pqueue.Info{Queue: host, Priority: i % 2, NotBefore: notBefore, Scopes: throttling.Scopes{{Name: host}}}, Req: r}
		check(s.Push(ctx, e))
		left[r.URL.String()] = true
	}
	take := func(n int, ack bool) {
		for range n {
			for h := range 3 {
				e, err := s.Reserve(ctx, fmt.Sprintf("h%d.example", h))
				check(err)
				if ack {
					check(s.Ack(ctx, e.ID))
					delete(left, e.Req.URL.String())
				}
			}
		}
	}
	for i := range 300 {
		push(i, time.Time{})
	}
	for i := 300; i < 330; i++ {
		push(i, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) // due: promoted below
	}
	for i := 330; i < 345; i++ {
		push(i, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)) // still delayed
	}
	check(s.Flush(ctx))
	take(30, true) // 90 acknowledged
	check(s.Flush(ctx))
	check(j.DB().Flush())                  // into an sstable: sets and deletes on disk
	_, err = s.PromoteDue(ctx, time.Now()) // 30 delayed keys deleted
	check(err)
	for i := 345; i < 400; i++ {
		push(i, time.Time{})
	}
	take(20, true) // 60 more acknowledged, in the log only
	take(2, false) // 6 reserved, not acknowledged: back in line on resume
	check(s.Close(ctx))
	check(j.Close())
	var urls []string
	for u := range left {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	check(os.WriteFile(filepath.Join(dir, "remaining.txt"), []byte(strings.Join(urls, "\n")+"\n"), 0o644))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
