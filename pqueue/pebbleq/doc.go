// Package pebbleq is the disk queue behind JOBDIR: a pqueue.Store that
// keeps every queued request in the job's Pebble database, so a paused or
// crashed crawl resumes with its frontier intact and memory does not grow
// with the queue.
//
// Layout, under the store's key prefix p (jobdir.PrefixQueue by default):
//
//	p "q" uvarint(len(queue)) queue prio' id   -> record   (sub-queues)
//	p "d" notBefore' id                        -> record   (delayed set)
//	p "n"                                      -> highest ID handed out
//
// prio' is the priority mapped so that higher priorities sort first, and
// notBefore' and id are big-endian, so Pebble's key order is exactly the
// order in which entries are served. A record holds a versioned header
// (queue, priority, not-before time, scopes with amounts) followed by the
// request encoded by the store's pqueue.Codec (reqcodec.Codec).
//
// Memory holds, per sub-queue, a count and a small read-ahead buffer of its
// best entries (one entry for a sub-queue only looked at, up to
// Options.HeadBuffer for one being consumed), plus the reserved entries
// (bounded by the requests in flight). Everything else stays on disk.
//
// Reservations are not written: Reserve only moves an entry out of line in
// memory and Ack deletes it. A crash or a Close therefore leaves reserved
// entries stored, and Open puts them back in line with their IDs
// (at-least-once delivery).
//
// Every entry's key is set once and deleted once: its ID is never handed
// out again (the "n" record is raised before an ID beyond it is used, in
// the same batch), and Nack and Open put entries back in line in memory
// without writing them. So Ack and PromoteDue delete with Pebble's
// SingleDelete, which cancels out with the Set it deletes when the two
// meet in a flush or compaction instead of leaving a tombstone to carry
// down the levels. Anything that would write an entry's key a second time
// must delete it with Delete instead (TestSingleDeleteKeysSetOnce fails
// otherwise).
//
// With Options.GroupWrites (as the job directory opens it), pushes and
// acknowledgements, with the fingerprints of the attached Set, wait in one
// pending batch that Flush commits as one atomic write (the engine calls
// it once per turn of its loop); the database is then always a prefix of
// the calls, in whole flushes.
//
// Writes use pebble.NoSync: the job directory syncs the write-ahead log
// periodically and on close (see jobdir.Options.SyncInterval). Pebble's
// log is replayed as a prefix, so after a power failure the queue is as it
// was at some moment of the last sync window: a request whose Ack is lost
// is fetched again, and a request pushed by a callback is never lost while
// the Ack of the job that produced it survives.
package pebbleq
