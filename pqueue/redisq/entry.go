package redisq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// An entry is stored as one string, the member of its sub-queue's sorted
// set (and of the delayed set, and the value of a reservation):
//
//	[0:8]   ID, big-endian: sequence*1024 + shard (assigned by the script
//	        that stores it; FIFO order among equal priorities follows from
//	        the byte order)
//	[8]     entryVersion
//	[9:17]  effective priority, float64 big-endian
//	[17]    1 when the sub-queue name is stored below, 0 when it is the
//	        scope names joined by NUL (throttling.Scopes.Key, always the
//	        case in the frontier)
//	[18:20] number of scopes, uint16 big-endian
//	        per scope: name length uint16, name, quota amount float64
//	[...]   with flag 1: sub-queue name length uint16, name
//	[...]   the request, encoded by the Codec (empty for the admission
//	        leases of requests sent outside the queue)
//
// The Lua scripts read the header (struct.unpack) to find the sub-queue and
// to check and record the scopes' gates; the request bytes are opaque to
// them.
const entryVersion byte = 1

// ErrCorruptEntry is the kind of error for a stored entry that does not
// decode.
var ErrCorruptEntry = errors.New("redisq: corrupt entry")

// encodeBody returns an entry without its ID: version, header and request.
// The sub-queue name is stored only when it is not scopes.Key().
func encodeBody(dst []byte, queue string, prio int, scopes throttling.Scopes, req []byte) ([]byte, error) {
	if len(scopes) > math.MaxUint16 {
		return nil, fmt.Errorf("redisq: %d scopes on one request", len(scopes))
	}
	explicit := queue != scopes.Key()
	if explicit && len(queue) > math.MaxUint16 {
		return nil, fmt.Errorf("redisq: sub-queue name of %d bytes", len(queue))
	}
	dst = append(dst, entryVersion)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(float64(prio)))
	if explicit {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(scopes)))
	for _, s := range scopes {
		if len(s.Name) > math.MaxUint16 {
			return nil, fmt.Errorf("redisq: scope name of %d bytes", len(s.Name))
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s.Name)))
		dst = append(dst, s.Name...)
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(s.Amount))
	}
	if explicit {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(queue)))
		dst = append(dst, queue...)
	}
	return append(dst, req...), nil
}

// decodeMember splits a stored entry into its Info and request bytes.
func decodeMember(m string) (pqueue.Info, []byte, error) {
	b := []byte(m)
	bad := func(what string) (pqueue.Info, []byte, error) {
		return pqueue.Info{}, nil, fmt.Errorf("%w: %s (%d bytes)", ErrCorruptEntry, what, len(b))
	}
	if len(b) < 20 {
		return bad("too short")
	}
	if b[8] != entryVersion {
		return bad(fmt.Sprintf("version %d, want %d", b[8], entryVersion))
	}
	in := pqueue.Info{ID: pqueue.ID(binary.BigEndian.Uint64(b))}
	in.Priority = int(math.Float64frombits(binary.BigEndian.Uint64(b[9:])))
	explicit := b[17] == 1
	n := int(binary.BigEndian.Uint16(b[18:]))
	pos := 20
	if n > 0 {
		in.Scopes = make(throttling.Scopes, n)
	}
	for i := range n {
		if pos+2 > len(b) {
			return bad("scope header cut")
		}
		l := int(binary.BigEndian.Uint16(b[pos:]))
		pos += 2
		if pos+l+8 > len(b) {
			return bad("scope cut")
		}
		in.Scopes[i] = throttling.Scope{Name: string(b[pos : pos+l]), Amount: math.Float64frombits(binary.BigEndian.Uint64(b[pos+l:]))}
		pos += l + 8
	}
	in.Queue = in.Scopes.Key()
	if explicit {
		if pos+2 > len(b) {
			return bad("sub-queue name cut")
		}
		l := int(binary.BigEndian.Uint16(b[pos:]))
		if pos+2+l > len(b) {
			return bad("sub-queue name cut")
		}
		in.Queue = string(b[pos+2 : pos+2+l])
		pos += 2 + l
	}
	return in, b[pos:], nil
}

// idBytes is the 8-byte form of an ID, as stored.
func idBytes(id pqueue.ID) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	return string(b[:])
}

// shardOfID returns the shard an ID was assigned in.
func shardOfID(id pqueue.ID) int { return int(uint64(id) % MaxShards) }
