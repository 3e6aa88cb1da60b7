package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// DefaultFile is the settings file read from the working directory when no
// file is named explicitly.
const DefaultFile = "gocrawl.yaml"

// EnvPrefix starts the environment variables that set settings:
// GOCRAWL_DOWNLOAD_DELAY=2 sets DOWNLOAD_DELAY.
const EnvPrefix = "GOCRAWL_"

// More error kinds, for errors.Is, returned while loading settings.
var (
	// ErrFile: the settings file cannot be read.
	ErrFile = errors.New("cannot read settings file")
	// ErrSyntax: a settings file or a -s option is not well-formed.
	ErrSyntax = errors.New("invalid syntax")
	// ErrAliasBudget: YAML aliases would expand a settings file or a value
	// beyond AliasBudget nodes (an "alias bomb"); it also matches ErrSyntax.
	ErrAliasBudget = fmt.Errorf("%w: YAML alias budget exceeded", ErrSyntax)
)

// AliasBudget is how many YAML nodes the aliases (*name, <<: *name) of
// one settings file or one -s / GOCRAWL_ value may expand to, in total.
// Real settings use a handful; a few lines of nested aliases can
// otherwise expand to billions of nodes and exhaust the memory of the
// machine before the crawl starts.
const AliasBudget = 10_000

// maxYAMLDepth bounds how deeply settings may nest.
const maxYAMLDepth = 200

// LoadOptions say where each layer of settings comes from. The zero value
// loads ./gocrawl.yaml if it exists and nothing else.
type LoadOptions struct {
	// File is a settings file named explicitly (--settings FILE); it must
	// exist. Empty means DefaultFile in Dir, which may be missing.
	File string
	// Dir is the directory searched for DefaultFile; empty means the
	// working directory.
	Dir string
	// NoFile skips the settings file layer entirely.
	NoFile bool
	// Spider holds the spider's own settings (spider.SettingsProvider) and
	// SpiderName names it in origins.
	Spider     map[string]any
	SpiderName string
	// Environ is the environment as os.Environ returns it; nil means none
	// (pass os.Environ() to read the real one). Every GOCRAWL_ variable must
	// name a setting, except those listed in EnvIgnore.
	Environ   []string
	EnvIgnore []string
	// Overrides are NAME=VALUE pairs from the command line (-s), highest
	// precedence; values are parsed as YAML.
	Overrides []string
}

// Load builds settings from the registered defaults and the layers of
// opts, lowest precedence first: file < spider < env < command line. It
// checks every value and returns all problems at once, joined (each one an
// *Error naming the setting, where the value came from and what to fix);
// the returned Settings hold every valid value even when err is not nil.
func Load(opts LoadOptions) (*Settings, error) {
	s := New()
	var errs []error
	if !opts.NoFile {
		errs = append(errs, s.loadFileLayer(opts.File, opts.Dir)...)
	}
	if len(opts.Spider) > 0 {
		origin := "spider"
		if opts.SpiderName != "" {
			origin = "spider " + opts.SpiderName
		}
		if err := s.SetMap(opts.Spider, SourceSpider, origin); err != nil {
			errs = append(errs, unjoin(err)...)
		}
	}
	errs = append(errs, s.SetEnv(opts.Environ, opts.EnvIgnore...)...)
	for _, o := range opts.Overrides {
		if err := s.SetOverride(o); err != nil {
			errs = append(errs, err)
		}
	}
	return s, errors.Join(errs...)
}

func (s *Settings) loadFileLayer(file, dir string) []error {
	explicit := file != ""
	if !explicit {
		file = filepath.Join(dir, DefaultFile)
		if dir == "" {
			file = DefaultFile
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = "the file does not exist; check the path given to --settings"
		}
		return []error{&Error{Kind: ErrFile, Origin: file, Msg: msg}}
	}
	return unjoin(s.LoadYAML(data, file))
}

// LoadFile reads a YAML settings file (a mapping of setting names to
// values) into the file layer.
func (s *Settings) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &Error{Kind: ErrFile, Origin: path, Msg: err.Error()}
	}
	return s.LoadYAML(data, path)
}

// LoadYAML sets the file layer from a YAML document whose top level maps
// setting names to values. name (the file's path) is used in origins, with
// the line of each setting: "gocrawl.yaml:12". An empty document is fine.
// All problems are returned, joined.
func (s *Settings) LoadYAML(data []byte, name string) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return syntaxError(name, err)
	}
	if err := checkAliases(f, name); err != nil {
		return err
	}
	if len(f.Docs) > 1 {
		return &Error{Kind: ErrSyntax, Origin: name, Msg: "the file holds several YAML documents (---); keep one mapping of settings"}
	}
	lines := map[string]int{}
	nested := map[string]map[string]int{}
	if len(f.Docs) == 1 && f.Docs[0].Body != nil {
		switch body := f.Docs[0].Body.(type) {
		case *ast.MappingNode:
			for _, mv := range body.Values {
				recordLine(lines, mv)
				recordNested(nested, mv)
			}
		case *ast.MappingValueNode:
			recordLine(lines, body)
			recordNested(nested, body)
		case *ast.CommentGroupNode, *ast.NullNode:
		default:
			return &Error{Kind: ErrSyntax, Origin: fmt.Sprintf("%s:%d", name, body.GetToken().Position.Line),
				Msg: "the top level must be a mapping of setting names to values, like DOWNLOAD_DELAY: 1"}
		}
	}
	var m map[string]any
	if len(f.Docs) == 1 && f.Docs[0].Body != nil {
		if err := yaml.NodeToValue(f.Docs[0].Body, &m); err != nil {
			return syntaxError(name, err)
		}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		origin := name
		if l, ok := lines[k]; ok {
			origin = fmt.Sprintf("%s:%d", name, l)
		}
		if err := s.Set(k, m[k], SourceFile, origin); err != nil {
			errs = append(errs, err)
			continue
		}
		if kl := nested[k]; len(kl) > 0 {
			s.mu.Lock()
			if s.keyLines == nil {
				s.keyLines = map[string]keyLines{}
			}
			s.keyLines[k] = keyLines{origin: origin, file: name, lines: kl}
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func recordNested(nested map[string]map[string]int, mv *ast.MappingValueNode) {
	if mv == nil || mv.Key == nil || mv.Key.GetToken() == nil {
		return
	}
	nested[strings.TrimSpace(mv.Key.GetToken().Value)] = recordKeyLines(mv)
}

func recordLine(lines map[string]int, mv *ast.MappingValueNode) {
	if mv == nil || mv.Key == nil {
		return
	}
	tok := mv.Key.GetToken()
	if tok == nil {
		return
	}
	lines[strings.TrimSpace(tok.Value)] = tok.Position.Line
}

func syntaxError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		return &Error{Kind: ErrSyntax, Origin: fmt.Sprintf("%s:%d:%d", name, p.Line, p.Column), Msg: ye.GetMessage()}
	}
	return &Error{Kind: ErrSyntax, Origin: name, Msg: err.Error()}
}

// SetEnv sets the env layer from GOCRAWL_<NAME>=VALUE variables in environ
// (os.Environ format). Values are parsed as YAML. A GOCRAWL_ variable that
// names no setting is ignored with a warning (see Warnings), since shells
// and CI systems set such variables for their own use (GOCRAWL_BIN,
// GOCRAWL_HOME), unless its name is so close to a setting's that it is
// surely a typo (EnvTypo): that is an error suggesting the setting.
// Variables listed in ignore (full names, e.g. "GOCRAWL_HOME") are skipped
// silently.
func (s *Settings) SetEnv(environ []string, ignore ...string) []error {
	var errs []error
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) || slices.Contains(ignore, k) {
			continue
		}
		name := strings.TrimPrefix(k, EnvPrefix)
		if _, known := Lookup(name); !known {
			if typo := EnvTypo(name); typo != "" {
				errs = append(errs, &Error{Kind: ErrUnknown, Setting: name, Origin: k, Msg: fmt.Sprintf("did you mean %s? (set %s%s)", typo, EnvPrefix, typo)})
			} else {
				s.warn(fmt.Sprintf("ignoring environment variable %s: %s is not a setting (GOCRAWL_<NAME> variables set settings; `gocrawl settings` lists them)", k, name))
			}
			continue
		}
		if err := s.setRaw(name, v, SourceEnv, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// SetOverride sets the command-line layer from one "NAME=VALUE" string as
// given to -s. VALUE is parsed as YAML, so lists and mappings work:
// -s 'THROTTLING_SCOPES={"a.com": {"delay": 2}}'.
func (s *Settings) SetOverride(arg string) error {
	name, v, ok := strings.Cut(arg, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return &Error{Kind: ErrSyntax, Origin: "-s " + arg, Msg: "expected NAME=VALUE, e.g. -s DOWNLOAD_DELAY=2"}
	}
	return s.setRaw(name, v, SourceCommandLine, "-s "+name+"="+RedactArg(name, v))
}

// ParseValue parses a value given as text (environment, -s) as YAML. Text
// that is not valid YAML is returned as the string itself, with the YAML
// error. Aliases expanding beyond AliasBudget are an error of kind
// ErrAliasBudget.
func ParseValue(text string) (any, error) {
	if strings.TrimSpace(text) == "" {
		return text, nil
	}
	f, err := parser.ParseBytes([]byte(text), 0)
	if err != nil {
		return text, err
	}
	if err := checkAliases(f, "value"); err != nil {
		return text, err
	}
	var v any
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, nil
	}
	if len(f.Docs) > 1 {
		return text, errors.New("several YAML documents (---) in one value")
	}
	if err := yaml.NodeToValue(f.Docs[0].Body, &v); err != nil {
		return text, err
	}
	return v, nil
}

// setRaw sets name from text: parsed as YAML first, then, if the setting's
// type rejects that, as the plain string (so USER_AGENT=123 or
// LOG_FILE=yes mean the strings a user expects).
func (s *Settings) setRaw(name, text string, src Source, origin string) error {
	d, ok := Lookup(name)
	if !ok {
		return unknown(name, origin)
	}
	v, perr := ParseValue(text)
	if errors.Is(perr, ErrAliasBudget) {
		var e *Error
		if errors.As(perr, &e) {
			e.Setting, e.Origin = name, origin
			return e
		}
		return perr
	}
	if _, err := d.Type.Convert(v); err != nil {
		if _, serr := d.Type.Convert(text); serr == nil {
			v = text
		} else if perr != nil {
			return &Error{Kind: ErrSyntax, Setting: name, Origin: origin,
				Msg: fmt.Sprintf("value is not valid YAML (%s) and not a plain %s", firstLine(perr.Error()), d.Type.Name())}
		}
	}
	return s.Set(name, v, src, origin)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// unjoin flattens errors.Join results so each problem is reported once.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// Errors returns the individual problems in err (as returned by Load),
// so a caller can print one per line.
func Errors(err error) []error { return unjoin(err) }

// Deprecated returns a message for every deprecated setting whose value
// did not come from the defaults, saying what to use instead.
func (s *Settings) Deprecated() []string {
	var out []string
	for _, n := range s.Names() {
		d, ok := Lookup(n)
		if !ok || d.Deprecated == "" {
			continue
		}
		if v, _ := s.Origin(n); v.Source != SourceDefault {
			out = append(out, fmt.Sprintf("%s (set in %s) is deprecated: %s", n, originOf(v), d.Deprecated))
		}
	}
	return out
}

func originOf(v Value) string {
	if v.Origin != "" {
		return v.Origin
	}
	return v.Source.String()
}

// Entry is one effective setting, as `gocrawl settings` prints it.
type Entry struct {
	Name string `json:"name"`
	// Type is the setting's type name ("integer", "mapping", ...).
	Type string `json:"type"`
	// Value is the effective value.
	Value any `json:"value"`
	// Default is the registered default.
	Default any `json:"default"`
	// Source is the layer the value came from: "default", "file",
	// "spider", "env" or "command line".
	Source string `json:"source"`
	// Origin says where exactly ("gocrawl.yaml:12", "GOCRAWL_LOG_LEVEL",
	// "-s DOWNLOAD_DELAY=2"); empty for defaults.
	Origin string `json:"origin,omitempty"`
	// Doc is the setting's documentation.
	Doc string `json:"doc"`
	// Deprecated says what to use instead, for deprecated settings.
	Deprecated string `json:"deprecated,omitempty"`
}

// Entries returns the effective value and origin of the named settings,
// or of every setting when names is empty, sorted by name. An unknown name
// is an *Error with a suggestion; all unknown names are reported. Values
// and defaults are redacted (Redact): entries are for showing.
func (s *Settings) Entries(names ...string) ([]Entry, error) {
	if len(names) == 0 {
		names = Names()
	}
	var errs []error
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		d, ok := Lookup(n)
		if !ok {
			errs = append(errs, unknown(n, ""))
			continue
		}
		v, _ := s.Origin(n)
		out = append(out, Entry{Name: n, Type: d.Type.Name(), Value: normalize(Redact(n, v.V)), Default: normalize(Redact(n, d.Default)),
			Source: v.Source.String(), Origin: v.Origin, Doc: d.Doc, Deprecated: d.Deprecated})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// checkAliases refuses YAML whose aliases would expand beyond AliasBudget
// nodes in total, or that nests deeper than maxYAMLDepth, before anything
// is decoded: decoding expands every alias in memory. The error names the
// line of the alias that crossed the budget.
func checkAliases(f *ast.File, name string) error {
	for _, doc := range f.Docs {
		c := aliasCounter{anchors: map[string]int{}}
		c.size(doc, 0)
		if c.err != nil {
			return c.errorAt(name)
		}
	}
	return nil
}

type aliasCounter struct {
	anchors  map[string]int // anchor name -> nodes it stands for
	expanded int            // nodes produced by aliases so far
	kind     error          // ErrSyntax (too deep) or ErrAliasBudget
	err      error
	line     int // where the problem is
}

// size returns how many nodes n stands for once its aliases are expanded,
// saturating just above the budget.
func (c *aliasCounter) size(n ast.Node, depth int) int {
	if n == nil || c.err != nil {
		return 0
	}
	if depth > maxYAMLDepth {
		c.kind, c.err = ErrSyntax, fmt.Errorf("values nest more than %d levels deep", maxYAMLDepth)
		if tok := n.GetToken(); tok != nil {
			c.line = tok.Position.Line
		}
		return 0
	}
	sum := func(parts ...ast.Node) int {
		total := 1
		for _, p := range parts {
			total = min(total+c.size(p, depth+1), AliasBudget+1)
		}
		return total
	}
	switch n := n.(type) {
	case *ast.DocumentNode:
		return c.size(n.Body, depth+1)
	case *ast.MappingNode:
		parts := make([]ast.Node, len(n.Values))
		for i, v := range n.Values {
			parts[i] = v
		}
		return sum(parts...)
	case *ast.MappingValueNode:
		return sum(n.Key, n.Value)
	case *ast.SequenceNode:
		return sum(n.Values...)
	case *ast.TagNode:
		return c.size(n.Value, depth+1)
	case *ast.AnchorNode:
		s := c.size(n.Value, depth+1)
		if n.Name != nil {
			c.anchors[n.Name.GetToken().Value] = s
		}
		return s
	case *ast.AliasNode:
		s := 1
		if n.Value != nil {
			if v, ok := c.anchors[n.Value.GetToken().Value]; ok {
				s = v
			}
		}
		c.expanded = min(c.expanded+s, AliasBudget+1)
		if c.expanded > AliasBudget {
			c.kind, c.err = ErrAliasBudget, fmt.Errorf("aliases expand to more than %d values (a YAML alias bomb?); "+
				"repeat the values instead of nesting aliases", AliasBudget)
			c.line = n.GetToken().Position.Line
		}
		return s
	}
	return 1
}

func (c *aliasCounter) errorAt(name string) error {
	origin := name
	if c.line > 0 {
		origin = fmt.Sprintf("%s:%d", name, c.line)
	}
	return &Error{Kind: c.kind, Origin: origin, Msg: c.err.Error()}
}
