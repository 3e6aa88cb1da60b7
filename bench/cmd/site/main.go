// Command site serves the simulated site of one benchmark scenario in its
// own process, so the crawler being measured does not share CPU time or
// memory accounting with the server.
//
// It prints one JSON line mapping host names to base URLs, then reads
// commands on standard input, one per line:
//
//	stats   prints a JSON line: host name -> simsite.HostStats
//	quit    (or end of input) closes the site and exits
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/internal/simsite"
)

func main() {
	name := flag.String("scenario", "", "scenario to serve (S1, S2, S3, S4-alone, S4-mixed)")
	flag.Parse()
	if err := run(*name); err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		os.Exit(1)
	}
}

func run(name string) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return err
	}
	srv, err := simsite.Start(context.Background(), sc.Site)
	if err != nil {
		return err
	}
	defer srv.Close()
	urls := map[string]string{}
	for _, h := range srv.Hosts() {
		// localhost (not 127.0.0.1) so crawlers see host names, as on the
		// web: an IP literal is a different kind of throttling scope.
		urls[h] = strings.Replace(srv.URL(h), "127.0.0.1", "localhost", 1)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(urls); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "stats":
			if err := enc.Encode(srv.Stats()); err != nil {
				return err
			}
		case "quit":
			return nil
		}
	}
	return in.Err()
}
