package simsite_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// A strict host with a token bucket of burst 2 refilling once every 10 s:
// the third and fourth immediate requests are answered 429 with
// Retry-After, and the server's records tell the story afterwards.
func Example() {
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
		Name:  "strict",
		Pages: simsite.PagesConfig{Count: 10, Graph: simsite.GraphChain},
		Limit: simsite.LimitConfig{Rate: 0.1, Burst: 2},
	}}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	title := regexp.MustCompile(`<title>(.*)</title>`)
	for i := range 4 {
		resp, err := http.Get(srv.URL("strict") + simsite.PagePath(i))
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %q retry-after=%q\n", simsite.PagePath(i), resp.StatusCode,
			title.FindSubmatch(body)[1], resp.Header.Get("Retry-After"))
	}

	st := srv.Stats()["strict"]
	fmt.Printf("requests=%d ok=%d 429=%d limited=%d\n", st.Requests, st.ByStatus[200], st.ByStatus[429], st.Limited)
	// Output:
	// / 200 "strict page 0" retry-after=""
	// /page/1 200 "strict page 1" retry-after=""
	// /page/2 429 "429 Too Many Requests" retry-after="10"
	// /page/3 429 "429 Too Many Requests" retry-after="10"
	// requests=4 ok=2 429=2 limited=2
}

// Config loads from YAML, so a site can live in a file.
func ExampleLoadConfig() {
	cfg, err := simsite.LoadConfig(strings.NewReader(`
hosts:
  - name: polite
    pages: {count: 20, graph: random, out_degree: 3}
    robots: {crawl_delay: 2s, disallow: [/page/1]}
`))
	if err != nil {
		panic(err)
	}
	srv, err := simsite.Start(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	resp, err := http.Get(srv.URL("polite") + "/robots.txt")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	// Output:
	// User-agent: *
	// Crawl-delay: 2
	// Disallow: /page/1
}
