package settings

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// keyLines are the lines of the keys nested in one setting's YAML value,
// by path ("api\x00delay"), recorded for the value set from origin.
type keyLines struct {
	origin string // the setting's origin when recorded ("gocrawl.yaml:3")
	file   string // the file's name
	lines  map[string]int
}

// recordKeyLines records the lines of the keys nested in the value of a
// top-level mapping entry (THROTTLING_SCOPES: {api: {delay: -1}}), so
// that a problem with one key can name its own line (KeyOrigin).
func recordKeyLines(mv *ast.MappingValueNode) map[string]int {
	lines := map[string]int{}
	var walk func(n ast.Node, prefix string, depth int)
	walk = func(n ast.Node, prefix string, depth int) {
		if depth > maxYAMLDepth {
			return
		}
		switch n := n.(type) {
		case *ast.MappingNode:
			for _, v := range n.Values {
				walk(v, prefix, depth+1)
			}
		case *ast.MappingValueNode:
			if n.Key == nil || n.Key.GetToken() == nil {
				return
			}
			tok := n.Key.GetToken()
			k := strings.TrimSpace(tok.Value)
			if k == "<<" {
				return
			}
			path := k
			if prefix != "" {
				path = prefix + "\x00" + k
			}
			lines[path] = tok.Position.Line
			walk(n.Value, path, depth+1)
		case *ast.AnchorNode:
			walk(n.Value, prefix, depth+1)
		case *ast.TagNode:
			walk(n.Value, prefix, depth+1)
		}
	}
	if mv != nil {
		walk(mv.Value, "", 0)
	}
	return lines
}

// KeyOrigin returns where the key at path inside the mapping value of
// setting name was written: "gocrawl.yaml:14" for THROTTLING_SCOPES, path
// ["api", "delay"], when the value came from a YAML file; the line of the
// longest part of path found; else the setting's own origin (Origin), or
// "" for a default.
func (s *Settings) KeyOrigin(name string, path ...string) string {
	s.mu.RLock()
	v, ok := s.vals[name]
	kl, kok := s.keyLines[name]
	s.mu.RUnlock()
	if !ok || v.Source == SourceDefault {
		return ""
	}
	if kok && kl.origin == v.Origin {
		for n := len(path); n > 0; n-- {
			if l, ok := kl.lines[strings.Join(path[:n], "\x00")]; ok {
				return fmt.Sprintf("%s:%d", kl.file, l)
			}
		}
	}
	return originOf(v)
}

// InvalidKey is InvalidErr for a problem with the key at path inside the
// mapping value of setting name, with the key's own origin (KeyOrigin).
func InvalidKey(s *Settings, name string, path []string, err error) *Error {
	e := InvalidErr(s, name, err)
	if o := s.KeyOrigin(name, path...); o != "" {
		e.Origin = o
	}
	return e
}
