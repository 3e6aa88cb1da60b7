package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// This file is a second WARC reader, written from the WARC 1.1
// specification (ISO 28500:2017, sections 4-6) and independent of
// reader.go: the standard library's gzip, one member at a time, and a
// strict parse of each record. The tests check the files the Writer makes
// with it, so that a bug shared by our writer and our reader cannot hide.

type specRecord struct {
	fields map[string][]string // lower-case names
	block  []byte
	offset int64 // of the gzip member
}

func (r specRecord) get(name string) string {
	if v := r.fields[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// byteCounter counts what the gzip reader consumes; being an io.ByteReader
// the gzip reader does not read past a member.
type byteCounter struct {
	r *bufio.Reader
	n int64
}

func (c *byteCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *byteCounter) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

var (
	specVersion = regexp.MustCompile(`^WARC/1\.[01]\r\n`)
	// field-name = token (RFC 2616 token chars).
	specField  = regexp.MustCompile(`^([!#$%&'*+\-.^_` + "`" + `|~0-9A-Za-z]+):[ \t]*(.*)$`)
	specUUID   = regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)
	specDate   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`)
	specDigest = regexp.MustCompile(`^sha1:[A-Z2-7]{32}$`)
)

// specRead parses every record of a .warc.gz file, requiring exactly one
// record per gzip member.
func specRead(t *testing.T, path string) []specRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &byteCounter{r: bufio.NewReader(f)}
	var out []specRecord
	for {
		if _, err := c.r.Peek(1); err == io.EOF {
			return out
		}
		start := c.n
		zr, err := gzip.NewReader(c)
		if err != nil {
			t.Fatalf("%s: offset %d: not a gzip member: %v", path, start, err)
		}
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: offset %d: gzip member: %v", path, start, err)
		}
		rec, rest, err := specParse(member)
		if err != nil {
			t.Fatalf("%s: offset %d: %v", path, start, err)
		}
		if len(rest) != 0 {
			t.Fatalf("%s: offset %d: %d bytes after the record in its gzip member", path, start, len(rest))
		}
		rec.offset = start
		out = append(out, rec)
	}
}

func specParse(b []byte) (specRecord, []byte, error) {
	loc := specVersion.FindIndex(b)
	if loc == nil {
		return specRecord{}, nil, errors.New("no version line")
	}
	b = b[loc[1]:]
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return specRecord{}, nil, errors.New("header not ended by CRLF CRLF")
	}
	rec := specRecord{fields: map[string][]string{}}
	for _, line := range strings.Split(string(b[:end]), "\r\n") {
		m := specField.FindStringSubmatch(line)
		if m == nil {
			return specRecord{}, nil, fmt.Errorf("bad field line %q", line)
		}
		n := strings.ToLower(m[1])
		rec.fields[n] = append(rec.fields[n], m[2])
	}
	b = b[end+4:]
	n, err := strconv.Atoi(rec.get("Content-Length"))
	if err != nil || n < 0 || n+4 > len(b) {
		return specRecord{}, nil, fmt.Errorf("bad Content-Length %q for %d bytes", rec.get("Content-Length"), len(b))
	}
	rec.block = b[:n]
	if string(b[n:n+4]) != "\r\n\r\n" {
		return specRecord{}, nil, errors.New("block not followed by CRLF CRLF")
	}
	return rec, b[n+4:], nil
}

func specDigestOf(b []byte) string {
	h := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(h[:])
}

// specCheck checks the mandatory fields and the digests of every record,
// and that requests and responses name each other.
func specCheck(t *testing.T, recs []specRecord) {
	t.Helper()
	ids := map[string]specRecord{}
	for i, r := range recs {
		for _, f := range []string{"WARC-Record-ID", "WARC-Date", "WARC-Type", "Content-Length"} {
			if len(r.fields[strings.ToLower(f)]) != 1 {
				t.Errorf("record %d: %s appears %d times, want once", i, f, len(r.fields[strings.ToLower(f)]))
			}
		}
		if !specUUID.MatchString(r.get("WARC-Record-ID")) {
			t.Errorf("record %d: WARC-Record-ID %q is not a UUID URN in angle brackets", i, r.get("WARC-Record-ID"))
		}
		if !specDate.MatchString(r.get("WARC-Date")) {
			t.Errorf("record %d: WARC-Date %q is not a W3C-ISO8601 UTC date", i, r.get("WARC-Date"))
		}
		if _, dup := ids[r.get("WARC-Record-ID")]; dup {
			t.Errorf("record %d: duplicate WARC-Record-ID", i)
		}
		ids[r.get("WARC-Record-ID")] = r
		if d := r.get("WARC-Block-Digest"); d != "" && d != specDigestOf(r.block) {
			t.Errorf("record %d: WARC-Block-Digest %s, the block's is %s", i, d, specDigestOf(r.block))
		}
		typ := r.get("WARC-Type")
		if i == 0 && typ != "warcinfo" {
			t.Errorf("the first record is %s, want warcinfo", typ)
		}
		switch typ {
		case "request", "response", "revisit":
			if r.get("WARC-Target-URI") == "" {
				t.Errorf("record %d (%s): no WARC-Target-URI", i, typ)
			}
			if r.get("WARC-Block-Digest") == "" {
				t.Errorf("record %d (%s): no WARC-Block-Digest", i, typ)
			}
		}
		if typ == "response" {
			i := bytes.Index(r.block, []byte("\r\n\r\n"))
			if i < 0 {
				t.Errorf("response record without an HTTP head")
				continue
			}
			if got, want := r.get("WARC-Payload-Digest"), specDigestOf(r.block[i+4:]); got != want {
				t.Errorf("response %s: WARC-Payload-Digest %s, the payload's is %s", r.get("WARC-Target-URI"), got, want)
			}
		}
		if typ == "revisit" && r.get("WARC-Profile") == "" {
			t.Errorf("revisit without WARC-Profile")
		}
	}
	for _, r := range recs {
		to := r.get("WARC-Concurrent-To")
		if to == "" {
			continue
		}
		o, ok := ids[to]
		if !ok {
			t.Errorf("%s record's WARC-Concurrent-To %s names no record of the file", r.get("WARC-Type"), to)
			continue
		}
		if o.get("WARC-Target-URI") != r.get("WARC-Target-URI") {
			t.Errorf("concurrent records of different URIs: %s, %s", o.get("WARC-Target-URI"), r.get("WARC-Target-URI"))
		}
	}
}
