// Package recrawl keeps what a crawl knows about each URL it visited, so
// that a later run can revisit it cheaply and tell what changed:
//
//   - a Record per URL: the validators of its last 200 (ETag,
//     Last-Modified), a fingerprint of its content, its last status, its
//     schedule State and the request that fetched it (to enqueue it again);
//   - a Store that keeps records with the crawl's job (JOBDIR in package
//     jobdir, REDIS_URL in package redisjob), and the recrawl Round: which
//     pass over the known URLs the job is in;
//   - Classify, which turns a response into a Change (new, changed,
//     unchanged, gone), and a Tracker that notices servers whose ETag
//     changes on every response and stops sending it to them.
//
// The schedule (when a URL is visited next: Policy, Fixed, Adaptive) and
// the Budget that caps revisits live in this package too; the engine
// wires both (docs/recrawl.md).
package recrawl
