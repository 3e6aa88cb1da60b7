// Package democmd holds the commands that only the gocrawl binary offers:
// `gocrawl demo` (crawls the offline demo site with the example spiders,
// then the two-host politeness experiment) and `gocrawl sim` (serves the
// simulated site). They link the simulated site, the demo site and the
// example spiders, which a user's own crawler built with package cli has
// no use for, so they are added by cmd/gocrawl through cli.Program rather
// than built into package cli.
package democmd
