package pebbleq

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// FuzzParseRecord: a queue record read from a damaged job directory parses
// or fails with an error, never panics; what parses encodes back to the
// same bytes.
func FuzzParseRecord(f *testing.F) {
	f.Add(appendTestRecord(nil, pqueue.Info{Queue: "a.com", Priority: -3, NotBefore: time.Unix(1e9, 5),
		Scopes: throttling.Scopes{{Name: "a.com", Amount: 1}, {Name: "quota", Amount: 2.5}}}, []byte("req")))
	f.Add([]byte{recordVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{recordVersion, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, req, err := parseRecord(b, nil)
		if err != nil {
			return
		}
		again := appendTestRecord(nil, info, req)
		info2, req2, err := parseRecord(again, nil)
		if err != nil || info2.Queue != info.Queue || info2.Priority != info.Priority || !bytes.Equal(req, req2) ||
			len(info2.Scopes) != len(info.Scopes) {
			t.Fatalf("re-encoded record differs: %+v / %+v (%v)", info, info2, err)
		}
		for i := range info.Scopes {
			if info.Scopes[i].Name != info2.Scopes[i].Name ||
				math.Float64bits(info.Scopes[i].Amount) != math.Float64bits(info2.Scopes[i].Amount) {
				t.Fatalf("scope %d differs", i)
			}
		}
	})
}

// appendTestRecord writes the record header for info followed by the
// request, as a Push does.
func appendTestRecord(b []byte, info pqueue.Info, req []byte) []byte {
	return append(appendRecordHeader(b, info), req...)
}
