package reqcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"sync"

	"github.com/gocrawl/gocrawl/internal/callbacks"
	"github.com/gocrawl/gocrawl/internal/reqnames"

	"github.com/gocrawl/gocrawl/spider"
)

// CodecVersion is the version byte that starts every encoded request. A
// record with another version is refused with ErrCodecVersion rather than
// misread; a future format change bumps it and keeps a decoder for the old
// one.
const CodecVersion byte = 1

// Bits of a record's flags.
const (
	flagDontFilter = 1 << iota
	// flagRefererField: the record's Referer header is the request's
	// Referer field (set by the Referer middleware), not a header of its
	// own. Records written before the flag existed lack it and decode the
	// Referer as a header, as they always did.
	flagRefererField
)

// ErrUnpersistable is the kind of error for a request that cannot be
// written to a job directory: a closure callback or errback, or a meta value
// that is not a JSON value. The error is an *EncodeError naming the request
// and the field.
var ErrUnpersistable = errors.New("request cannot be persisted")

// ErrCodecVersion is the kind of error for a stored request written by an
// incompatible version of the encoding.
var ErrCodecVersion = errors.New("unsupported request encoding version")

// ErrCorruptRecord is the kind of error for a stored request whose bytes do
// not decode.
var ErrCorruptRecord = errors.New("corrupt request record")

// EncodeError says which request and which of its fields could not be
// encoded. It matches ErrUnpersistable with errors.Is.
type EncodeError struct {
	// Request is the request's "METHOD URL".
	Request string
	// Field is the field at fault: "Callback", "Errback", `Meta["key"]`,
	// `Meta["key"][2]`, ...
	Field string
	// Err is the underlying reason.
	Err error
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("request %s cannot be persisted: %s: %v", e.Request, e.Field, e.Err)
}

// Unwrap returns the underlying reason.
func (e *EncodeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnpersistable) true.
func (e *EncodeError) Is(target error) bool { return target == ErrUnpersistable }

// Codec turns requests into bytes and back with a versioned binary
// encoding (see docs/jobs.md); it implements pqueue.Codec. It needs the
// spider to name callbacks: only methods of the spider can be found again
// after a restart.
//
// The encoding keeps the URL, method, headers, body, meta (the retry count
// included), priority, depth, DontFilter, and the callback and errback
// names. The disk queue stores each request's throttling scopes and
// effective priority beside it. Meta values must be JSON values: nil, bool, string, any Go
// integer or float kind, []any, []string, map[string]any and
// map[string]string, nested freely. Each decodes to the same Go type it
// was encoded from, so a middleware reading meta["retry_times"].(int) works
// the same before and after a restart.
type Codec struct {
	Spider spider.Spider
}

// Encode returns the encoding of req. It fails with an *EncodeError (kind
// ErrUnpersistable, and spider.ErrNotMethod for a closure callback) when a
// callback is a closure or a meta value is not a JSON value.
func (c Codec) Encode(req *spider.Request) ([]byte, error) { return c.Append(nil, req) }

// Append is Encode appending to dst; on error dst is returned unchanged.
func (c Codec) Append(dst []byte, req *spider.Request) ([]byte, error) {
	if req == nil || req.URL == nil {
		return dst, &EncodeError{Request: req.String(), Field: "URL", Err: errors.New("missing")}
	}
	stored := callbacks.Stored(req)
	cbName, ebName := stored.Callback, stored.Errback
	if req.Callback != nil || req.Errback != nil {
		if c.Spider == nil {
			return dst, &EncodeError{Request: req.String(), Field: "Callback", Err: errors.New("codec has no spider to name callbacks")}
		}
		if req.Callback != nil {
			n, err := funcName(c.Spider, req.Callback)
			if err != nil {
				return dst, &EncodeError{Request: req.String(), Field: "Callback", Err: err}
			}
			if n == "Parse" {
				n = ""
			}
			cbName = n
		}
		if req.Errback != nil {
			n, err := funcName(c.Spider, req.Errback)
			if err != nil {
				return dst, &EncodeError{Request: req.String(), Field: "Errback", Err: err}
			}
			ebName = n
		}
	}
	start := len(dst)
	b := append(dst, CodecVersion)
	// The Referer field is stored as the header it stands for (the same
	// bytes as before the field existed), with flagRefererField saying
	// so: it decodes as the field again, without a header map. A reader
	// that does not know the flag decodes it as the header, which sends
	// the same Referer.
	fieldRef := req.Referer != "" && req.Header.Get("Referer") == ""
	var flags uint64
	if req.DontFilter {
		flags |= flagDontFilter
	}
	if fieldRef {
		flags |= flagRefererField
	}
	b = binary.AppendUvarint(b, flags)
	b = appendString(b, req.URL.String())
	b = appendString(b, req.Method)
	b = binary.AppendVarint(b, int64(req.Priority))
	b = binary.AppendVarint(b, int64(req.Depth))
	b = appendString(b, cbName)
	b = appendString(b, ebName)

	keys := make([]string, 0, len(req.Header)+1)
	for k := range req.Header {
		if !fieldRef || k != "Referer" {
			keys = append(keys, k)
		}
	}
	if fieldRef {
		keys = append(keys, "Referer")
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		vs := req.Header[k]
		if fieldRef && k == "Referer" {
			vs = []string{req.Referer}
		}
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	b = appendBytes(b, req.Body)

	mkeys := make([]string, 0, len(req.Meta))
	for k := range req.Meta {
		mkeys = append(mkeys, k)
	}
	slices.Sort(mkeys)
	b = binary.AppendUvarint(b, uint64(len(mkeys)))
	for _, k := range mkeys {
		b = appendString(b, k)
		var err error
		b, err = appendValue(b, req.Meta[k], 0)
		if err != nil {
			var pe *pathError
			path := fmt.Sprintf("Meta[%q]", k)
			if errors.As(err, &pe) {
				path += pe.path
				err = pe.err
			}
			return dst[:start], &EncodeError{Request: req.String(), Field: path, Err: err}
		}
	}
	return b, nil
}

// Decode parses an encoded request. Callback and Errback stay nil; the
// request carries their names (callbacks.Stored), which the engine
// resolves on the spider (callbacks.Callbacks). Errors wrap ErrCodecVersion or ErrCorruptRecord.
func (c Codec) Decode(data []byte) (*spider.Request, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorruptRecord)
	}
	if data[0] != CodecVersion {
		return nil, fmt.Errorf("%w %d (this build reads version %d)", ErrCodecVersion, data[0], CodecVersion)
	}
	d := decoder{b: data[1:]}
	req := &spider.Request{}
	flags := d.uvarint()
	req.DontFilter = flags&flagDontFilter != 0
	rawURL := d.string()
	req.Method = d.string()
	req.Priority = int(d.varint())
	req.Depth = int(d.varint())
	callbacks.SetStored(req, reqnames.Names{Callback: d.string(), Errback: d.string()})
	if n := d.count(); n > 0 {
		for range n {
			k := d.string()
			m := d.count()
			if flags&flagRefererField != 0 && m == 1 && k == "Referer" {
				req.Referer = d.string()
				continue
			}
			vs := make([]string, m)
			for i := range vs {
				vs[i] = d.string()
			}
			if req.Header == nil {
				req.Header = make(http.Header, n)
			}
			req.Header[k] = vs
		}
	}
	if body := d.bytes(); len(body) > 0 {
		req.Body = slices.Clone(body)
	}
	if n := d.count(); n > 0 {
		req.Meta = make(spider.Meta, n)
		for range n {
			k := d.string()
			req.Meta[k] = d.value(0)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptRecord, d.err)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorruptRecord, len(d.b))
	}
	u, err := spider.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
	}
	req.URL = u
	return req, nil
}

type funcKey struct {
	spider reflect.Type
	pc     uintptr
}

type funcResult struct {
	name string
	err  error
}

// funcNames caches callbacks.FuncName, which costs a reflective method
// lookup: a crawl names the same few callbacks millions of times.
var funcNames sync.Map // funcKey -> funcResult

func funcName(sp spider.Spider, fn any) (string, error) {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.IsNil() {
		return "", nil
	}
	k := funcKey{reflect.TypeOf(sp), v.Pointer()}
	if r, ok := funcNames.Load(k); ok {
		return r.(funcResult).name, r.(funcResult).err
	}
	name, err := callbacks.FuncName(sp, fn)
	funcNames.Store(k, funcResult{name, err})
	return name, err
}

// Value tags of the meta encoding. Each Go type has its own tag so that a
// value decodes to the type it was encoded from.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagString
	tagInt
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat64
	tagFloat32
	tagList      // []any
	tagStrList   // []string
	tagMap       // map[string]any
	tagStrMap    // map[string]string
	maxMetaDepth = 64
)

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxMetaDepth {
		return b, &pathError{err: fmt.Errorf("nested deeper than %d levels", maxMetaDepth)}
	}
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case string:
		return appendString(append(b, tagString), x), nil
	case int:
		return binary.AppendVarint(append(b, tagInt), int64(x)), nil
	case int8:
		return binary.AppendVarint(append(b, tagInt8), int64(x)), nil
	case int16:
		return binary.AppendVarint(append(b, tagInt16), int64(x)), nil
	case int32:
		return binary.AppendVarint(append(b, tagInt32), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(b, tagInt64), x), nil
	case uint:
		return binary.AppendUvarint(append(b, tagUint), uint64(x)), nil
	case uint8:
		return binary.AppendUvarint(append(b, tagUint8), uint64(x)), nil
	case uint16:
		return binary.AppendUvarint(append(b, tagUint16), uint64(x)), nil
	case uint32:
		return binary.AppendUvarint(append(b, tagUint32), uint64(x)), nil
	case uint64:
		return binary.AppendUvarint(append(b, tagUint64), x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, &pathError{err: fmt.Errorf("%v is not a JSON number", x)}
		}
		return binary.LittleEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(x)), nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return b, &pathError{err: fmt.Errorf("%v is not a JSON number", x)}
		}
		return binary.LittleEndian.AppendUint32(append(b, tagFloat32), math.Float32bits(x)), nil
	case []string:
		b = binary.AppendUvarint(append(b, tagStrList), uint64(len(x)))
		for _, s := range x {
			b = appendString(b, s)
		}
		return b, nil
	case map[string]string:
		keys := slices.Sorted(mapKeys(x))
		b = binary.AppendUvarint(append(b, tagStrMap), uint64(len(x)))
		for _, k := range keys {
			b = appendString(appendString(b, k), x[k])
		}
		return b, nil
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for i, e := range x {
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, prefixPath(err, fmt.Sprintf("[%d]", i))
			}
		}
		return b, nil
	case map[string]any:
		keys := slices.Sorted(mapKeys(x))
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(x)))
		for _, k := range keys {
			b = appendString(b, k)
			var err error
			if b, err = appendValue(b, x[k], depth+1); err != nil {
				return b, prefixPath(err, fmt.Sprintf("[%q]", k))
			}
		}
		return b, nil
	case spider.Meta:
		return appendValue(b, map[string]any(x), depth)
	default:
		return b, &pathError{err: fmt.Errorf("value of type %T is not a JSON value (use nil, bool, string, numbers, []any, []string, map[string]any or map[string]string)", v)}
	}
}

func prefixPath(err error, p string) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: p + pe.path, err: pe.err}
	}
	return &pathError{path: p, err: err}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// decoder reads the encoding; the first error sticks and later reads
// return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length and checks it against the bytes left, so a corrupt
// record cannot make the decoder allocate gigabytes.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("count %d exceeds the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) fixed64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) fixed32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) value(depth int) any {
	if d.err != nil {
		return nil
	}
	if depth > maxMetaDepth {
		d.fail("meta nested deeper than %d levels", maxMetaDepth)
		return nil
	}
	if len(d.b) == 0 {
		d.fail("truncated meta value")
		return nil
	}
	tag := d.b[0]
	d.b = d.b[1:]
	switch tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagString:
		return d.string()
	case tagInt:
		return int(d.varint())
	case tagInt8:
		return int8(d.varint())
	case tagInt16:
		return int16(d.varint())
	case tagInt32:
		return int32(d.varint())
	case tagInt64:
		return d.varint()
	case tagUint:
		return uint(d.uvarint())
	case tagUint8:
		return uint8(d.uvarint())
	case tagUint16:
		return uint16(d.uvarint())
	case tagUint32:
		return uint32(d.uvarint())
	case tagUint64:
		return d.uvarint()
	case tagFloat64:
		return math.Float64frombits(d.fixed64())
	case tagFloat32:
		return math.Float32frombits(d.fixed32())
	case tagStrList:
		n := d.count()
		out := make([]string, n)
		for i := range out {
			out[i] = d.string()
		}
		return out
	case tagStrMap:
		n := d.count()
		out := make(map[string]string, n)
		for range n {
			k := d.string()
			out[k] = d.string()
		}
		return out
	case tagList:
		n := d.count()
		out := make([]any, n)
		for i := range out {
			out[i] = d.value(depth + 1)
		}
		return out
	case tagMap:
		n := d.count()
		out := make(map[string]any, n)
		for range n {
			k := d.string()
			out[k] = d.value(depth + 1)
		}
		return out
	default:
		d.fail("unknown meta value tag %d", tag)
		return nil
	}
}
