// Package metrics measures what every crawl should report about its
// politeness and its useful throughput, per throttling scope (by default
// one per host) and for the whole crawl.
//
// A crawl is judged by ok responses per second, not completed requests per
// second (a fast 429 also "completes"), and a pool of N workers bounds
// requests in flight, not how fast they start: so the Recorder, an
// engine.Observer, counts every start and every outcome in one taxonomy
// (ok, 429, other 4xx/5xx, timeout, network error; retries apart), the
// start rate over short windows (the burst lives in the first few hundred
// milliseconds), requests in flight and their peak per scope, and the time
// each scope spent backing off.
//
// Everything else reads the Recorder:
//
//   - Monitor wires the pieces a crawl asks for in its settings:
//     LOGSTATS_INTERVAL progress lines (LogProgress), the PROGRESS_DISPLAY
//     live line on a terminal (Live), METRICS_ADDR (Prometheus, through
//     Exporter and Serve, with a bounded number of scope labels), and
//     STATS_DUMP_FILE at the end (WriteDump: the stats and a Snapshot as
//     JSON, plus a per-scope CSV).
//   - Snapshot is the state of every scope at one moment, for summaries
//     and for anything that plots a crawl.
//
// The measurements and their names are listed in docs/metrics.md.
package metrics
