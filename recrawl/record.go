package recrawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Change is what a visit found compared with the previous one.
type Change uint8

// The changes a response can have. ChangeNone is a response that says
// nothing about the page's content (a 5xx, a redirect).
const (
	ChangeNone      Change = iota
	ChangeNew              // first visit of the URL
	ChangeChanged          // the content differs from the last visit
	ChangeUnchanged        // 304 Not Modified, or the same fingerprint
	ChangeGone             // 404 or 410
)

var changeNames = [...]string{"", "new", "changed", "unchanged", "gone"}

// String returns new, changed, unchanged, gone, or "" for ChangeNone.
func (c Change) String() string {
	if int(c) < len(changeNames) {
		return changeNames[c]
	}
	return fmt.Sprintf("change(%d)", uint8(c))
}

// RecordVersion is the version of the record encoding.
const RecordVersion = 1

// Record is what a crawl remembers of one URL between visits.
type Record struct {
	// URL is the request's URL, for people reading the store.
	URL string `json:"url"`
	// Request is the encoded request that fetched the URL (the job's
	// request codec): a recrawl enqueues it again, with its callback and
	// meta.
	Request []byte `json:"req,omitempty"`
	// ETag and LastModified are the validators of the last 200.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lm,omitempty"`
	// Fingerprint is the hash of the last 200's content (see Fingerprint).
	Fingerprint Hash `json:"fp,omitzero"`
	// Status is the last HTTP status.
	Status int `json:"status,omitempty"`
	// Change is what the last visit found.
	Change Change `json:"change,omitempty"`
	// Round is the recrawl round of the last visit (0 = the first crawl).
	Round int `json:"round,omitempty"`
	// State is the schedule's memory of the URL.
	State State `json:"state,omitzero"`
}

type recordJSON struct {
	V int `json:"v"`
	Record
}

// Marshal encodes r with its version.
func (r Record) Marshal() ([]byte, error) {
	return json.Marshal(recordJSON{V: RecordVersion, Record: r})
}

// ErrCorrupt is the kind of a record or round that does not decode.
var ErrCorrupt = errors.New("recrawl: corrupt record")

// UnmarshalRecord decodes a record written by Marshal.
func UnmarshalRecord(b []byte) (Record, error) {
	var rj recordJSON
	if err := json.Unmarshal(b, &rj); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if rj.V != RecordVersion {
		return Record{}, fmt.Errorf("%w: version %d, this gocrawl reads %d", ErrCorrupt, rj.V, RecordVersion)
	}
	return rj.Record, nil
}

// Round is where a job is in its passes over the known URLs: round 0 is
// the first crawl, every recrawl (RECRAWL_ENABLED on a finished round)
// starts the next one.
type Round struct {
	N int `json:"n"`
	// Seeded says that no known URL is left to enqueue for the round. It
	// is set with Done: a round under way is seeded again by every run
	// that resumes it, which queues only what the round has neither made
	// nor queued.
	Seeded bool `json:"seeded,omitempty"`
	Done   bool `json:"done,omitempty"` // the round's crawl finished
	// Legacy marks a round begun on a job written before records were
	// kept: it has nothing to revisit with validators, so the round
	// fetches again every URL the spider reaches.
	Legacy bool `json:"legacy,omitempty"`
}

// Store keeps the records and the round of one job. Implementations are
// safe for concurrent use; a shared job's store is shared by its workers.
type Store interface {
	// Get returns the record under key, and whether there is one.
	Get(ctx context.Context, key string) (Record, bool, error)
	// Put replaces the record under key.
	Put(ctx context.Context, key string, r Record) error
	// Each calls fn for every record, in key order, until fn fails.
	Each(ctx context.Context, fn func(key string, r Record) error) error
	// Round returns the job's round. known is false for a job that has
	// not recorded one: a new job, or one written before records existed
	// (Legacy tells them apart: it is true for the latter).
	Round(ctx context.Context) (r Round, known bool, err error)
	// BeginRound starts the job's next round as NextRound says and
	// reports begun = true; when a round is under way it returns it with
	// begun = false. Of several workers of a shared job calling it at
	// once, exactly one begins the round.
	BeginRound(ctx context.Context, legacy bool) (r Round, begun bool, err error)
	// SaveRound records r (Seeded, Done) when the job is still in round
	// r.N, and does nothing when another round began since.
	SaveRound(ctx context.Context, r Round) error
}
