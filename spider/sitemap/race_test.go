//go:build race

package sitemap

// raceEnabled: the race detector allocates for itself, so allocation
// bounds are not checked.
const raceEnabled = true
