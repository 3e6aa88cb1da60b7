// Package monitor checks that a crawl's data came out right, the way
// Spidermon does for Scrapy: item validation against a JSON Schema (Schema)
// or against the `monitor` tags of the item's Go struct (StructTags,
// ValidateStruct), and thresholds on the crawl's stats (MinItems,
// MaxErrorShare, Max429Share, MaxDropShare, MaxDuration), plus any Check
// of your own (NewCheck, or a spider implementing Provider).
//
// A Monitor runs its checks every MONITOR_INTERVAL while the crawl runs,
// on the crawl's clock, and once when it has ended. After each run it
// writes the Results to MONITOR_RESULTS_FILE (by default
// <JOBDIR>/monitors.json) and, when a check failed, POSTs them to
// MONITOR_WEBHOOK_URL. `gocrawl run` (and every cli.Main program) builds
// one from the settings with FromSettings and exits with status 3 when the
// final run fails. See docs/monitors.md.
package monitor
