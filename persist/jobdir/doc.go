// Package jobdir keeps a crawl's state in a job directory (the JOBDIR
// setting) so that it can be paused, resumed, and survive a crash.
//
// A job directory holds one Pebble database (github.com/cockroachdb/pebble/v2)
// under JOBDIR/state and a LOCK file. The database contains, each under its
// own key prefix:
//
//   - a metadata record: format version, spider name, creation time;
//   - the request queue (package pqueue/pebbleq), requests encoded by Codec;
//   - the dupefilter's fingerprints;
//   - the throttling scopes' state, the stats so far and the item feeds'
//     positions, saved periodically and when the crawl stops.
//
// Open refuses, with an error of a kind tested by IsBadState, a job folder
// that belongs to another spider, was written by an incompatible version,
// is corrupted, or is in use by another process; it never silently starts
// over. Options.Reset (JOBDIR_RESET, gocrawl run --fresh) starts over on
// purpose. See docs/jobs.md for the guarantees and what a power failure can
// cost.
package jobdir
