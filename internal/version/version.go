// Package version holds gocrawl's version, shown by `gocrawl version` and in
// the default User-Agent.
package version

// Version is the gocrawl release.
const Version = "0.1.0"
