package warc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repair reports a file that a killed crawl left open, and what was done
// to it.
type Repair struct {
	// File is the repaired file, without its .open suffix.
	File string
	// Records is how many whole records it holds.
	Records int
	// Cut is how many bytes of a partial last record were cut away.
	Cut int64
	// Removed is set when the file held no whole record and was deleted.
	Removed bool
}

// RepairDir repairs the files of dir still marked .open (their crawl was
// killed while writing them): each is cut after its last whole record,
// indexed, and renamed without the suffix.
func RepairDir(dir string) ([]Repair, error) {
	files, err := ListFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Repair
	for _, f := range files {
		if !strings.HasSuffix(f, openSuffix) {
			continue
		}
		r, err := RepairFile(f)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// RepairFile repairs one file left open (see RepairDir).
func RepairFile(path string) (Repair, error) {
	final := strings.TrimSuffix(path, openSuffix)
	rep := Repair{File: final}
	x := &Indexer{File: filepath.Base(final)}
	var es []Entry
	var lastReq int64 = -1 // offset of a trailing request record
	end, err := Scan(path, func(rec *Record, pos Position) error {
		rep.Records++
		lastReq = -1
		if rec.Type() == TypeRequest {
			lastReq = pos.Offset
		}
		if e, ok := x.Add(rec, pos); ok {
			es = append(es, e)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return rep, fmt.Errorf("repairing %s: %w", path, err)
	}
	if lastReq >= 0 {
		// An exchange is written request first, in one write: a request
		// without its response is the start of the exchange cut short.
		end = lastReq
		rep.Records--
	}
	st, serr := os.Stat(path)
	if serr != nil {
		return rep, serr
	}
	rep.Cut = st.Size() - end
	if rep.Records == 0 || (rep.Records == 1 && len(es) == 0 && end > 0 && onlyWarcinfo(path)) {
		rep.Removed = true
		return rep, os.Remove(path)
	}
	if rep.Cut > 0 {
		if err := os.Truncate(path, end); err != nil {
			return rep, fmt.Errorf("repairing %s: cutting its partial last record: %w", path, err)
		}
	}
	if err := WriteIndex(IndexPath(final), es); err != nil {
		return rep, err
	}
	if err := os.Rename(path, final); err != nil {
		return rep, err
	}
	return rep, syncDir(filepath.Dir(path))
}

// onlyWarcinfo reports whether the file's one record is its warcinfo.
func onlyWarcinfo(path string) bool {
	only := true
	_, _ = Scan(path, func(rec *Record, _ Position) error {
		only = only && rec.Type() == TypeWarcinfo
		return nil
	})
	return only
}
