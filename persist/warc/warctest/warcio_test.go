package warctest

import (
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/persist/warc"
)

// warcioVersion is the release of warcio.js (webrecorder's WARC library
// for JavaScript) the archives are checked with.
const warcioVersion = "2.4.11"

// warcio returns the folder where warcio.js is installed, installing it
// with npm into the user's cache on first use; the test is skipped when
// node or npm are missing or the registry cannot be reached.
func warcio(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the archive is not checked with warcio.js", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gocrawl-test", "warcio-"+warcioVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error",
		"warcio@"+warcioVersion).CombinedOutput()
	if err != nil {
		t.Skipf("npm cannot install warcio@%s (no network?): %v\n%s", warcioVersion, err, out)
	}
	return dir
}

// warcioScript reads a WARC file with warcio.js and prints, for each
// record, its type, fields and the SHA-1 of its payload as warcio.js
// delimits it (the HTTP head parsed, the rest raw).
const warcioScript = `
import { WARCParser } from "warcio";
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
const out = [];
for await (const rec of new WARCParser(createReadStream(process.argv[2]))) {
  const payload = await rec.readFully(false);
  out.push({
    type: rec.warcType, uri: rec.warcTargetURI || "", id: rec.warcHeader("WARC-Record-ID"),
    to: rec.warcHeader("WARC-Concurrent-To") || "", digest: rec.warcPayloadDigest || "",
    status: rec.httpHeaders ? Number(rec.httpHeaders.statusCode || 0) : 0,
    sha1: createHash("sha1").update(payload).digest("hex"),
  });
}
console.log(JSON.stringify(out));
`

type warcioRecord struct {
	Type, URI, ID, To, Digest, SHA1 string
	Status                          int
}

// checkIndependently reads path with warcio.js: every record parses, the
// payload digests match the payloads warcio.js reads, requests and
// responses name each other; and warcio.js's own CDXJ index of the file
// finds the captures at the offsets and lengths of ours.
func checkIndependently(t *testing.T, path string) {
	t.Helper()
	dir := warcio(t)
	script := filepath.Join(dir, "check.mjs")
	if err := os.WriteFile(script, []byte(warcioScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, path).Output()
	if err != nil {
		t.Fatalf("warcio.js cannot read %s: %v\n%s", path, err, stderrOf(err))
	}
	var recs []warcioRecord
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatalf("warcio.js output: %v\n%s", err, out)
	}
	ids := map[string]warcioRecord{}
	for _, r := range recs {
		ids[r.ID] = r
	}
	if len(recs) == 0 || recs[0].Type != "warcinfo" {
		t.Fatalf("warcio.js read %d records, the first %+v", len(recs), recs)
	}
	for _, r := range recs[1:] {
		if o, ok := ids[r.To]; !ok || o.URI != r.URI {
			t.Errorf("%s %s: WARC-Concurrent-To %q names no record of the same URI", r.Type, r.URI, r.To)
		}
		if r.Type == "request" {
			continue
		}
		if r.Status == 0 {
			t.Errorf("%s %s: warcio.js found no HTTP status", r.Type, r.URI)
		}
		if r.Type == "response" {
			sum, _ := hex.DecodeString(r.SHA1)
			if want := "sha1:" + base32.StdEncoding.EncodeToString(sum); r.Digest != want {
				t.Errorf("%s: WARC-Payload-Digest %s, warcio.js reads a payload of digest %s", r.URI, r.Digest, want)
			}
		}
	}

	// warcio.js's index against ours.
	cdx, err := exec.Command("node", filepath.Join(dir, "node_modules", "warcio", "dist", "cli.js"), "cdx-index", path).Output()
	if err != nil {
		t.Fatalf("warcio.js cdx-index: %v\n%s", err, stderrOf(err))
	}
	theirs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(cdx)), "\n") {
		e, err := warc.ParseLine(line)
		if err != nil {
			t.Fatalf("warcio.js index line %q: %v", line, err)
		}
		theirs[e.URL] = entryKey(e)
	}
	ours, err := warc.ReadIndex(warc.IndexPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for _, e := range ours {
		if theirs[e.URL] != entryKey(e) {
			diffs = append(diffs, "ours "+entryKey(e)+", warcio.js "+theirs[e.URL])
		}
	}
	sort.Strings(diffs)
	if len(ours) != len(theirs) || len(diffs) > 0 {
		t.Errorf("our index (%d entries) and warcio.js's (%d) differ:\n%s", len(ours), len(theirs), strings.Join(diffs, "\n"))
	}
}

func entryKey(e warc.Entry) string {
	return strings.Join([]string{e.SURT, e.Time.Format(warc.TimestampFormat), e.URL, strings.TrimPrefix(e.Digest, "sha1:"),
		itoa(e.Offset), itoa(e.Length), itoa(int64(e.Status))}, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
