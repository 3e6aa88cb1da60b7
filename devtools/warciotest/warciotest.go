// Package warciotest reads WARC files in tests with warcio.js,
// webrecorder's WARC library, so that what gocrawl writes is checked by a
// reader that is not its own. warcio.js is installed with npm into the
// user's cache on first use; a test that needs it is skipped when node or
// npm are missing or the registry cannot be reached.
package warciotest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Version is the release of warcio.js the files are read with.
const Version = "2.4.11"

// Record is one WARC record as warcio.js read it.
type Record struct {
	// Type is WARC-Type; URI WARC-Target-URI; ID WARC-Record-ID.
	Type, URI, ID string
	// Headers holds every WARC header field by its name in lower case
	// (the last value of a repeated one); see Header.
	Headers map[string]string
	// Status is the HTTP status code of a response or revisit; 0 else.
	Status int
	// HTTPHeaders holds the HTTP header fields of a request or response
	// by their names in lower case; see HTTPHeader.
	HTTPHeaders map[string]string
	// Payload is the record's payload as warcio.js delimits it: after the
	// HTTP head, not decoded.
	Payload []byte
}

// Header returns the WARC header field name of r ("" when absent).
func (r Record) Header(name string) string { return r.Headers[strings.ToLower(name)] }

// HTTPHeader returns the HTTP header field name of r ("" when absent).
func (r Record) HTTPHeader(name string) string { return r.HTTPHeaders[strings.ToLower(name)] }

// script prints, for each record of the file, its WARC and HTTP header
// fields and its payload (base64).
const script = `
import { WARCParser } from "warcio";
import { createReadStream } from "node:fs";
const out = [];
for await (const rec of new WARCParser(createReadStream(process.argv[2]))) {
  const payload = await rec.readFully(false);
  const headers = {};
  for (const [k, v] of rec.warcHeaders.headers) headers[k.toLowerCase()] = v;
  const http = {};
  if (rec.httpHeaders) for (const [k, v] of rec.httpHeaders.headers) http[k.toLowerCase()] = v;
  out.push({
    type: rec.warcType, uri: rec.warcTargetURI || "", id: rec.warcHeader("WARC-Record-ID"),
    headers, httpHeaders: http,
    status: rec.httpHeaders ? Number(rec.httpHeaders.statusCode || 0) : 0,
    payload: Buffer.from(payload).toString("base64"),
  });
}
console.log(JSON.stringify(out));
`

// Read reads every record of the WARC file at path with warcio.js; the
// test fails when warcio.js cannot read it.
func Read(t testing.TB, path string) []Record {
	t.Helper()
	dir := install(t)
	js := filepath.Join(dir, "read-records.mjs")
	if err := os.WriteFile(js, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", js, path).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("warcio.js cannot read %s: %v\n%s", path, err, stderr)
	}
	var recs []Record
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatalf("warcio.js output: %v\n%s", err, out)
	}
	return recs
}

// install returns the folder where warcio.js is installed, installing it
// first when needed.
func install(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the archive is not read with warcio.js", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gocrawl-test", "warcio-"+Version)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error",
		"warcio@"+Version).CombinedOutput()
	if err != nil {
		t.Skipf("npm cannot install warcio@%s (no network?): %v\n%s", Version, err, out)
	}
	return dir
}
