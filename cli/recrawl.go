package cli

// The revisit schedule of continuous crawling: its settings check
// (RECRAWL_INTERVAL, RECRAWL_MIN_INTERVAL, RECRAWL_MAX_INTERVAL,
// RECRAWL_SCHEDULE, RECRAWL_BUDGET) runs in `gocrawl settings` and before
// `gocrawl run` sends anything, so a bad value exits with status 2.
import _ "github.com/gocrawl/gocrawl/recrawl"
