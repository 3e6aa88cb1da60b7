package settings

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/settings.md from the registry")

// docPath is the settings reference, generated from the registry.
var docPath = filepath.Join("..", "docs", "settings.md")

// TestSettingsDoc fails when docs/settings.md does not match the registry.
// Regenerate it with:
//
//	go test ./settings -run TestSettingsDoc -update
func TestSettingsDoc(t *testing.T) {
	want := renderDoc()
	if *updateDoc {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v; generate it with: go test ./settings -run TestSettingsDoc -update", err)
	}
	if string(got) != want {
		t.Errorf("docs/settings.md is stale (a setting was added or changed); regenerate it with:\n" +
			"\tgo test ./settings -run TestSettingsDoc -update")
	}
}

func renderDoc() string {
	var b strings.Builder
	b.WriteString(`# Settings reference

Every setting gocrawl knows, with its type, default and meaning. This file is
generated from the settings registry (the ` + "`settings/defaults*.go`" + ` files): after
adding or changing a setting, regenerate it with

    go test ./settings -run TestSettingsDoc -update

(the test fails while this file is stale). ` + "`gocrawl settings`" + ` prints the
effective values of a crawl and where each comes from; see
[cli.md](cli.md#settings) for how values are layered (defaults < gocrawl.yaml <
spider < GOCRAWL_<NAME> environment variables < -s NAME=VALUE) and written.

| Setting | Type | Default | Description |
|---|---|---|---|
`)
	for _, n := range Names() {
		d, _ := Lookup(n)
		doc := d.Doc
		if d.Deprecated != "" && !strings.HasPrefix(doc, "Deprecated") {
			doc = "Deprecated: " + d.Deprecated + ". " + doc
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", n, d.Type.Name(), docValue(d.Default), escapeCell(doc))
	}
	return b.String()
}

func docValue(v any) string {
	if s, ok := v.(string); ok {
		if s == "" {
			return `""`
		}
		return "`" + escapeCell(s) + "`"
	}
	j, err := json.Marshal(normalize(v))
	if err != nil {
		return escapeCell(fmt.Sprint(v))
	}
	return "`" + escapeCell(string(j)) + "`"
}

func escapeCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
