package pebbleq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file is the store's codec: how entries become Pebble keys and
// values, and back. Keys, under the store's prefix p:
//
//	p "q" uvarint(len(queue)) queue prio' id   -> record   (sub-queue entry)
//	p "d" notBefore' id                        -> record   (delayed entry)
//	p "n"                                      -> uint64   (ID high-water mark)
//
//   - queue is the sub-queue's name (pqueue.Info.Queue), preceded by its
//     length so that no sub-queue's keys fall inside another's range: each
//     sub-queue is one contiguous key range (queuePrefix).
//   - prio' is the priority as an int64 with its sign bit flipped (so that
//     unsigned order is signed order), complemented (so that higher
//     priorities sort first), 8 bytes big-endian.
//   - notBefore' is the time in Unix nanoseconds with its sign bit flipped,
//     8 bytes big-endian (encodeTime): earlier times sort first.
//   - id is 8 bytes big-endian: among equal priorities (or times), first
//     pushed, first served. The "n" value is an ID in the same encoding.
//
// So Pebble's key order is exactly the order in which entries are served.
// A record (appendRecord, parseRecord) is:
//
//	recordVersion                                  1 byte
//	uvarint(len(queue)) queue
//	varint(priority)
//	varint(notBefore in Unix nanoseconds; 0 = none)
//	uvarint(len(scopes)), then for each scope:
//	  uvarint(len(name)) name  amount              float64, 8 bytes little-endian
//	the request                                    pqueue.Codec, to the end
//
// The record repeats the queue, priority and time so that an entry can be
// moved between the delayed set and its sub-queue without decoding the
// request.

// recordVersion starts every stored record.
const recordVersion byte = 1

// ErrCorrupt is the kind of error for stored keys or records that do not
// parse.
var ErrCorrupt = errors.New("pebbleq: corrupt queue data")

// queuePrefix is the start of every key of sub-queue name.
func (s *Store) queuePrefix(name string) []byte {
	p := append(slices.Clip(s.qp), binary.AppendUvarint(nil, uint64(len(name)))...)
	return append(p, name...)
}

func (s *Store) queueKey(q *subq, prio int, id uint64) []byte {
	return appendQueueKey(make([]byte, 0, len(q.prefix)+16), q, prio, id)
}

// appendQueueKey appends the key of entry id of sub-queue q to k.
func appendQueueKey(k []byte, q *subq, prio int, id uint64) []byte {
	k = append(k, q.prefix...)
	k = binary.BigEndian.AppendUint64(k, ^(uint64(int64(prio)) ^ (1 << 63)))
	return binary.BigEndian.AppendUint64(k, id)
}

// parseQueueKey returns the sub-queue name and ID of a sub-queue key.
func (s *Store) parseQueueKey(k []byte) ([]byte, uint64, error) {
	rest := k[len(s.qp):]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) != n+16 {
		return nil, 0, fmt.Errorf("%w: queue key %q", ErrCorrupt, k)
	}
	rest = rest[w:]
	return rest[:n], binary.BigEndian.Uint64(rest[n+8:]), nil
}

func (s *Store) delayedKey(t time.Time, id uint64) []byte {
	k := append(slices.Clip(s.dp), encodeTime(t)...)
	return binary.BigEndian.AppendUint64(k, id)
}

// parseDelayedKey returns the not-before time and ID of a delayed key.
func (s *Store) parseDelayedKey(k []byte) (time.Time, uint64, error) {
	if len(k) != len(s.dp)+16 {
		return time.Time{}, 0, fmt.Errorf("%w: delayed key %q", ErrCorrupt, k)
	}
	return decodeTime(k[len(s.dp):]), binary.BigEndian.Uint64(k[len(s.dp)+8:]), nil
}

// dueBound is the upper bound (exclusive) of the delayed keys due at now:
// the key right after the last possible key of time now.
func (s *Store) dueBound(now time.Time) []byte {
	upper := append(slices.Clip(s.dp), encodeTime(now)...)
	return append(upper, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0)
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())^(1<<63))
}

func decodeTime(b []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)^(1<<63))).UTC()
}

// appendRecordHeader writes the record header for info.
func appendRecordHeader(b []byte, info pqueue.Info) []byte {
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(len(info.Queue)))
	b = append(b, info.Queue...)
	b = binary.AppendVarint(b, int64(info.Priority))
	var nb int64
	if !info.NotBefore.IsZero() {
		nb = info.NotBefore.UnixNano()
	}
	b = binary.AppendVarint(b, nb)
	b = binary.AppendUvarint(b, uint64(len(info.Scopes)))
	for _, sc := range info.Scopes {
		b = binary.AppendUvarint(b, uint64(len(sc.Name)))
		b = append(b, sc.Name...)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sc.Amount))
	}
	return b
}

// appender is a codec that can encode into a buffer (reqcodec.Codec can;
// see pqueue.Codec): a Push then encodes into the store's scratch buffer.
type appender interface {
	Append(dst []byte, req *spider.Request) ([]byte, error)
}

// appendEntryRecord appends e's record (header and encoded request) to
// dst. On error, nothing is stored.
func (s *Store) appendEntryRecord(dst []byte, e *pqueue.Entry) ([]byte, error) {
	b := appendRecordHeader(dst, e.Info)
	if a, ok := s.codec.(appender); ok {
		return a.Append(b, e.Req)
	}
	req, err := s.codec.Encode(e.Req)
	if err != nil {
		return dst, err
	}
	return append(b, req...), nil
}

// parseRecord returns the Info (without ID) and request bytes of a record.
// Queue and scope names come from names (nil: new strings).
func parseRecord(b []byte, names *names) (pqueue.Info, []byte, error) {
	var info pqueue.Info
	if len(b) == 0 || b[0] != recordVersion {
		if len(b) == 0 {
			return info, nil, errors.New("empty record")
		}
		return info, nil, fmt.Errorf("record version %d, this build reads %d", b[0], recordVersion)
	}
	b = b[1:]
	str := func() (string, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return "", false
		}
		s := names.get(b[w : w+int(n)])
		b = b[w+int(n):]
		return s, true
	}
	var ok bool
	if info.Queue, ok = str(); !ok {
		return info, nil, errors.New("bad queue name")
	}
	p, w := binary.Varint(b)
	if w <= 0 {
		return info, nil, errors.New("bad priority")
	}
	info.Priority, b = int(p), b[w:]
	nb, w := binary.Varint(b)
	if w <= 0 {
		return info, nil, errors.New("bad not-before time")
	}
	if nb != 0 {
		info.NotBefore = time.Unix(0, nb).UTC()
	}
	b = b[w:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return info, nil, errors.New("bad scope count")
	}
	b = b[w:]
	if n > 0 {
		info.Scopes = make(throttling.Scopes, n)
		for i := range info.Scopes {
			if info.Scopes[i].Name, ok = str(); !ok || len(b) < 8 {
				return info, nil, errors.New("bad scope")
			}
			info.Scopes[i].Amount = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
	}
	return info, b, nil
}

func prefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// names interns the queue and scope names of the records a store reads:
// a crawl has few of them, and each record read would otherwise allocate
// them again. It holds at most maxNames; when full it starts over, so the
// names of a crawl's later hosts (or per-request scopes) are shared too.
type names struct{ m map[string]string }

const maxNames = 1024

// get returns b as a string: the same string for the same bytes, as long
// as the set has not started over in between.
func (n *names) get(b []byte) string {
	if n == nil {
		return string(b)
	}
	if s, ok := n.m[string(b)]; ok {
		return s
	}
	if n.m == nil {
		n.m = make(map[string]string)
	} else if len(n.m) >= maxNames {
		clear(n.m)
	}
	s := string(b)
	n.m[s] = s
	return s
}
