package settings

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Mask is what a secret is replaced by wherever settings are shown:
// `gocrawl settings`, the settings of a job in `gocrawl serve`, the
// warcinfo records of WARC files, error messages and logs.
const Mask = "***"

// secretPart matches a setting name, or a key of a mapping value, that
// names a secret: one of its parts (separated by _ or -) is PASSWORD,
// SECRET, TOKEN, AUTHORIZATION, COOKIE, API_KEY, ... ("HTTP_PASS",
// "X-Api-Key", "Authorization", "aws_secret_access_key").
var secretPart = regexp.MustCompile(`(?i)(^|[_-])(pass|passwd|password|pwd|secret|token|credentials?|api[_-]?key|access[_-]?key|private[_-]?key|auth|authorization|cookie|signature|sig)([_-]|$)`)

// urlPassword matches the userinfo of a URL with a password, anywhere in
// a text: group 1 is the scheme and user name, kept.
var urlPassword = regexp.MustCompile(`(?i)([a-z][a-z0-9+.\-]*://[^/?#@\s:"'{}\[\],]*):[^/?#\s"'{}\[\],]*@`)

// bareUserinfo matches "user:password@" at the start of a text with no
// scheme (a proxy written "user:pass@host:port").
var bareUserinfo = regexp.MustCompile(`^([^\s:/@"']+):[^\s/@"']+@`)

// secretParam matches a secret-named parameter with its value in a URL's
// query or a key=value text ("?token=abc", "password=x sslmode=off"):
// group 1 (what precedes the value) is kept.
var secretParam = regexp.MustCompile(`(?i)((?:^|[?&;\s])[a-z0-9_.\-]*(?:pass|passwd|password|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|signature|sig|auth)=)[^&;\s"']+`)

// IsSecret reports whether the whole value of setting name is a secret:
// its definition says so (Def.Secret), or its name has a part that names
// one (SERVE_TOKEN, a spider's API_KEY or LOGIN_PASSWORD setting).
func IsSecret(name string) bool {
	if d, ok := Lookup(name); ok && d.Secret {
		return true
	}
	return secretPart.MatchString(name)
}

// Redact returns v, the value of setting name, as it may be shown. It is
// the one place settings are redacted:
//
//   - the value of a secret setting (IsSecret) becomes Mask, unless it is
//     empty, a boolean or a number (HTTPAUTH_ENABLED: true is no secret);
//   - in any other string, the password of every URL in it becomes Mask
//     (the user name is kept), as do the values of secret-named query
//     parameters and key=value pairs (RedactText);
//   - in a mapping, the value under a secret-named key (Authorization,
//     Cookie, password, token, ...) becomes Mask, and keys and other
//     values are redacted as above; in a list, every element is.
//
// v is not modified: what changes is copied.
func Redact(name string, v any) any {
	if IsSecret(name) {
		return maskWhole(v)
	}
	return redactValue(v)
}

// maskWhole is Mask for a value that holds something.
func maskWhole(v any) any {
	switch x := v.(type) {
	case nil, bool, int, int64, float64:
		return v
	case string:
		if x == "" {
			return x
		}
	case []string:
		if len(x) == 0 {
			return x
		}
	case []any:
		if len(x) == 0 {
			return x
		}
	case map[string]any:
		if len(x) == 0 {
			return x
		}
	}
	return Mask
}

func redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return RedactText(x)
	case []string:
		out := slices.Clone(x)
		for i, s := range out {
			out[i] = RedactText(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secretPart.MatchString(k) {
				out[RedactText(k)] = maskWhole(e)
			} else {
				out[RedactText(k)] = redactValue(e)
			}
		}
		return out
	}
	return v
}

// RedactText returns s with the password of every URL in it replaced by
// Mask ("redis://:***@10.0.0.5:6379/0", "postgresql://crawl:***@db/items"),
// as well as a bare "user:password@host" (a proxy) and the values of
// secret-named query parameters and key=value pairs ("?token=***",
// "password=*** sslmode=disable"). Text without any is returned as it is.
func RedactText(s string) string {
	if !strings.ContainsAny(s, "@=") {
		return s
	}
	out := urlPassword.ReplaceAllString(s, "${1}:"+Mask+"@")
	if !strings.Contains(out, "://") {
		out = bareUserinfo.ReplaceAllString(out, "${1}:"+Mask+"@")
	}
	return secretParam.ReplaceAllString(out, "${1}"+Mask)
}

// RedactArg returns the text of setting name's value as given to -s (YAML)
// redacted as Redact redacts the value: a secret setting's text is Mask; a
// list or mapping whose redaction changes something is shown as the JSON
// of the redacted value; other text goes through RedactText.
func RedactArg(name, text string) string {
	if IsSecret(name) {
		return maskWhole(text).(string)
	}
	if v, err := ParseValue(text); err == nil {
		switch v.(type) {
		case []any, map[string]any:
			if r := Redact(name, v); !reflect.DeepEqual(r, v) {
				if b, err := json.Marshal(r); err == nil {
					return string(b)
				}
			}
		}
	}
	return RedactText(text)
}

// typeErrorText is the message of a value of setting name that its type
// refuses: the type's reason and what was given, redacted: a secret
// setting's value is not quoted at all (only its kind is named), other
// values through RedactText.
func typeErrorText(name string, d *Def, v any, err error) string {
	if IsSecret(name) {
		return fmt.Sprintf("the value is not a valid %s (not shown: the setting is a secret; got %s)", d.Type.Name(), kindOf(v))
	}
	return RedactText(fmt.Sprintf("%v (expected %s, got %s)", err, d.Type.Name(), describe(v)))
}

// kindOf names the kind of v without its content.
func kindOf(v any) string {
	switch normalize(v).(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return "a number"
}
