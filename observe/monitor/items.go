package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/spider"
)

// Stats the item validation counts, kept in the crawl's stats (and so in
// a JOBDIR across resumes).
const (
	// StatItemsChecked counts the items validated.
	StatItemsChecked = "monitor/item_checked_count"
	// StatItemsInvalid counts the items found invalid.
	StatItemsInvalid = "monitor/item_invalid_count"
	// StatItemsUnchecked counts the items no validator could check (a map
	// item with only MONITOR_ITEM_STRUCT).
	StatItemsUnchecked = "monitor/item_unchecked_count"
)

// Validator checks one item and returns what is wrong with it, one
// problem per field; none when it is valid. An error of kind ErrNotStruct
// means the validator does not apply to this item; any other error makes
// the item invalid.
type Validator interface {
	Validate(ctx context.Context, item any) ([]string, error)
}

// StructTags validates struct items against their `monitor` field tags
// (see ValidateStruct).
type StructTags struct{}

// Validate calls ValidateStruct.
func (StructTags) Validate(_ context.Context, item any) ([]string, error) {
	return ValidateStruct(item)
}

// Schema validates items against a JSON Schema: the item is encoded as the
// JSON exports write it (encoding/json), then validated.
type Schema struct {
	path string
	sch  *jsonschema.Schema
}

// ErrBadSchema is the kind of the error of a JSON Schema file that cannot
// be read or compiled.
var ErrBadSchema = errors.New("bad JSON Schema")

// LoadSchema reads and compiles the JSON Schema file at path (drafts 4, 6,
// 7, 2019-09 and 2020-12; $ref to other local files work). Its errors are
// of kind ErrBadSchema.
func LoadSchema(path string) (*Schema, error) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadSchema, path, err)
	}
	return &Schema{path: path, sch: sch}, nil
}

var printer = message.NewPrinter(language.English)

// Validate encodes item to JSON and validates it.
func (s *Schema) Validate(_ context.Context, item any) ([]string, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the item as JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("cannot decode the item's JSON: %w", err)
	}
	err = s.sch.Validate(doc)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		var problems []string
		leaves(ve, &problems)
		return problems, nil
	}
	return nil, err
}

// leaves turns the tree of a validation error into one line per leaf:
// "/price: got string, want number".
func leaves(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		*out = append(*out, loc+": "+e.ErrorKind.LocalizedString(printer))
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
}

// maxExamples is how many invalid items the results describe.
const maxExamples = 5

// Items is the item_validation monitor: an item pipeline stage that runs
// every item through its validators (counting them in the stats), and a
// Check that fails when more than MaxInvalid items were invalid. Add it to
// the crawl's pipelines after those of ITEM_PIPELINES and before the feed
// exports (cli does): it validates what is exported.
type Items struct {
	// MaxInvalid is how many invalid items pass (MONITOR_MAX_INVALID_ITEMS).
	MaxInvalid int
	// Drop drops invalid items (reason invalid_item) instead of passing
	// them on (MONITOR_DROP_INVALID_ITEMS).
	Drop bool

	validators []Validator
	stats      *stats.Collector

	mu       sync.Mutex
	examples []string
}

// NewItems returns the item_validation monitor with validators.
func NewItems(maxInvalid int, drop bool, validators ...Validator) *Items {
	return &Items{MaxInvalid: maxInvalid, Drop: drop, validators: validators, stats: stats.New()}
}

// Open counts into the crawl's stats (pipeline.Opener).
func (it *Items) Open(_ context.Context, c *spider.Crawler) error {
	if c != nil && c.Stats != nil {
		it.stats = c.Stats
	}
	return nil
}

// ProcessItem validates item and passes it on, or drops it when it is
// invalid and Drop is set.
func (it *Items) ProcessItem(ctx context.Context, item any) (any, error) {
	var problems []string
	checked := false
	for _, v := range it.validators {
		p, err := v.Validate(ctx, item)
		switch {
		case errors.Is(err, ErrNotStruct):
			continue
		case err != nil:
			p = append(p, err.Error())
		}
		checked = true
		problems = append(problems, p...)
	}
	if !checked {
		it.stats.Inc(StatItemsUnchecked, 1)
		return item, nil
	}
	it.stats.Inc(StatItemsChecked, 1)
	if len(problems) == 0 {
		return item, nil
	}
	it.stats.Inc(StatItemsInvalid, 1)
	it.mu.Lock()
	if len(it.examples) < maxExamples {
		it.examples = append(it.examples, strings.Join(problems, "; "))
	}
	it.mu.Unlock()
	if it.Drop {
		return nil, pipeline.Drop("invalid_item")
	}
	return item, nil
}

// Name returns "item_validation".
func (it *Items) Name() string { return "item_validation" }

// Check fails when more than MaxInvalid items were invalid, with the
// problems of the first few.
func (it *Items) Check(_ context.Context, s Snapshot) Outcome {
	checked, invalid := int64(s.Get(StatItemsChecked)), int64(s.Get(StatItemsInvalid))
	var unchecked string
	if n := int64(s.Get(StatItemsUnchecked)); n > 0 {
		unchecked = fmt.Sprintf(" (%d items were not structs and were not checked)", n)
	}
	if invalid <= int64(it.MaxInvalid) {
		return Pass("%d of %d items invalid, at most MONITOR_MAX_INVALID_ITEMS %d%s", invalid, checked, it.MaxInvalid, unchecked)
	}
	it.mu.Lock()
	ex := strings.Join(it.examples, " | ")
	it.mu.Unlock()
	if ex != "" {
		ex = "; first: " + ex
	}
	return Fail("%d of %d items invalid, more than MONITOR_MAX_INVALID_ITEMS %d%s%s", invalid, checked, it.MaxInvalid, unchecked, ex)
}
