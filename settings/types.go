package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Type checks a raw value (as decoded from YAML or given in Go) and returns
// it in the setting's canonical Go type.
type Type interface {
	// Name describes the type for error messages ("integer", "list of integers").
	Name() string
	// Convert checks v and returns it normalised.
	Convert(v any) (any, error)
}

type typeFunc struct {
	name string
	fn   func(any) (any, error)
}

func (t typeFunc) Name() string               { return t.name }
func (t typeFunc) Convert(v any) (any, error) { return t.fn(v) }

// NewType builds a Type from a name and a conversion function.
func NewType(name string, convert func(any) (any, error)) Type { return typeFunc{name, convert} }

// Canonical Go types: Bool -> bool, Int -> int, Float -> float64 (seconds
// for durations), String -> string, StringList -> []string, IntList -> []int,
// Map -> map[string]any, Any -> as decoded.
var (
	Bool       Type = typeFunc{"boolean", toBool}
	Int        Type = typeFunc{"integer", toInt}
	Float      Type = typeFunc{"number", toFloat}
	String     Type = typeFunc{"string", toString}
	StringList Type = typeFunc{"list of strings", toStrings}
	IntList    Type = typeFunc{"list of integers", toInts}
	Map        Type = typeFunc{"mapping", toMap}
	Any        Type = typeFunc{"any value", func(v any) (any, error) { return normalize(v), nil }}
)

// NonNegative wraps a numeric type so that negative values are rejected.
func NonNegative(t Type) Type {
	return typeFunc{"non-negative " + t.Name(), func(v any) (any, error) {
		c, err := t.Convert(v)
		if err != nil {
			return nil, err
		}
		switch n := c.(type) {
		case int:
			if n < 0 {
				return nil, fmt.Errorf("%d is negative", n)
			}
		case float64:
			if n < 0 {
				return nil, fmt.Errorf("%v is negative", n)
			}
		}
		return c, nil
	}}
}

// OneOf accepts a value of the first type in ts that converts it.
func OneOf(ts ...Type) Type {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	return typeFunc{strings.Join(names, " or "), func(v any) (any, error) {
		var first error
		for _, t := range ts {
			c, err := t.Convert(v)
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}}
}

// FloatPair accepts a 2-item list of numbers [low, high] with low <= high
// and returns [2]float64.
var FloatPair Type = typeFunc{"[low, high] pair of numbers", func(v any) (any, error) {
	l, ok := normalize(v).([]any)
	if !ok || len(l) != 2 {
		return nil, fmt.Errorf("not a 2-item list")
	}
	lo, err := toFloat(l[0])
	if err != nil {
		return nil, err
	}
	hi, err := toFloat(l[1])
	if err != nil {
		return nil, err
	}
	if lo.(float64) > hi.(float64) {
		return nil, fmt.Errorf("low %v is above high %v", lo, hi)
	}
	return [2]float64{lo.(float64), hi.(float64)}, nil
}}

// IntPair accepts a 2-item list of integers [low, high] with low <= high and
// returns [2]int.
var IntPair Type = typeFunc{"[low, high] pair of integers", func(v any) (any, error) {
	l, ok := normalize(v).([]any)
	if !ok || len(l) != 2 {
		return nil, fmt.Errorf("not a 2-item list")
	}
	lo, err := toInt(l[0])
	if err != nil {
		return nil, err
	}
	hi, err := toInt(l[1])
	if err != nil {
		return nil, err
	}
	if lo.(int) > hi.(int) {
		return nil, fmt.Errorf("low %v is above high %v", lo, hi)
	}
	return [2]int{lo.(int), hi.(int)}, nil
}}

func toBool(v any) (any, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
	}
	return nil, fmt.Errorf("not a boolean")
}

func toInt(v any) (any, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case uint64:
		if n > math.MaxInt64 {
			return nil, fmt.Errorf("%d is too large", n)
		}
		return int(n), nil
	case int32:
		return int(n), nil
	case uint32:
		return int(n), nil
	case uint:
		return int(n), nil
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("%v is not a whole number", n)
		}
		if n >= math.MaxInt64 || n < math.MinInt64 {
			return nil, fmt.Errorf("%v is too large", n)
		}
		return int(n), nil
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", n)
		}
		return i, nil
	}
	return nil, fmt.Errorf("not an integer")
}

func toFloat(v any) (any, error) {
	switch n := v.(type) {
	case float64:
		return finite(n)
	case float32:
		return finite(float64(n))
	case int, int64, uint64, int32, uint32, uint:
		i, err := toInt(n)
		if err != nil {
			return nil, err
		}
		return float64(i.(int)), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%q is not a number", n)
		}
		return finite(f)
	}
	return nil, fmt.Errorf("not a number")
}

// finite refuses NaN and the infinities: .inf is not "forever" but a
// value no setting can act on (a delay of .inf would overflow to zero).
func finite(f float64) (any, error) {
	switch {
	case math.IsNaN(f):
		return nil, fmt.Errorf("NaN is not a number")
	case math.IsInf(f, 0):
		return nil, fmt.Errorf("%v is not a finite number; use a large finite value, such as 86400 for a day", f)
	}
	return f, nil
}

// MaxSeconds is the largest number of seconds a duration setting or a
// server's delay (Retry-After, Refresh) stands for: about 31.7 years.
// Larger values behave as MaxSeconds, so a huge value means "practically
// forever", never an overflow to zero or a negative duration, and there
// is headroom for the throttler's jitter and backoff factors.
const MaxSeconds = 1e9

// Duration converts seconds to a time.Duration, saturating at ±MaxSeconds;
// NaN is 0. Use it wherever seconds come from settings, meta or headers:
// time.Duration(secs * float64(time.Second)) overflows for secs above
// about 9.2e9, and the result of the overflow is negative.
func Duration(secs float64) time.Duration {
	switch {
	case math.IsNaN(secs):
		return 0
	case secs >= MaxSeconds:
		return MaxSeconds * time.Second
	case secs <= -MaxSeconds:
		return -MaxSeconds * time.Second
	}
	return time.Duration(secs * float64(time.Second))
}

func toString(v any) (any, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return nil, fmt.Errorf("not a string")
}

func toStrings(v any) (any, error) {
	switch l := normalize(v).(type) {
	case nil:
		return []string{}, nil
	case string:
		if strings.TrimSpace(l) == "" {
			return []string{}, nil
		}
		parts := strings.Split(l, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts, nil
	case []any:
		out := make([]string, 0, len(l))
		for i, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("item %d (%v) is not a string", i, x)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a list")
}

func toInts(v any) (any, error) {
	switch l := normalize(v).(type) {
	case nil:
		return []int{}, nil
	case []any:
		out := make([]int, 0, len(l))
		for i, x := range l {
			n, err := toInt(x)
			if err != nil {
				return nil, fmt.Errorf("item %d: %v", i, err)
			}
			out = append(out, n.(int))
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a list")
}

func toMap(v any) (any, error) {
	switch m := normalize(v).(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("not a mapping")
}

// normalize turns decoded YAML/JSON/Go values into []any, map[string]any and
// scalars, so types can check them uniformly.
func normalize(v any) any {
	switch x := v.(type) {
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []int:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = normalize(s)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = normalize(s)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[fmt.Sprint(k)] = normalize(s)
		}
		return out
	case [2]float64:
		return []any{x[0], x[1]}
	case [2]int:
		return []any{x[0], x[1]}
	}
	return v
}

func describe(v any) string {
	switch x := normalize(v).(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("%T %v", v, v)
	}
}
