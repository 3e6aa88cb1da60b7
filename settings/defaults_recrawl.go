package settings

import (
	"fmt"
	"strings"
)

// recrawlFingerprint is RECRAWL_FINGERPRINT's type: body or text, stored
// lower case.
var recrawlFingerprint = NewType(`"body" or "text"`, func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	switch low := strings.ToLower(strings.TrimSpace(s.(string))); low {
	case "body", "text":
		return low, nil
	}
	return nil, fmt.Errorf("%q is not a fingerprint mode; use body (every byte of the response) or text (the page's text without tags, scripts and styles)", s)
})

// Recrawl settings: revisiting a finished job (docs/recrawl.md).
func init() {
	for _, d := range []Def{
		{Name: "RECRAWL_ENABLED", Type: Bool, Default: false, Doc: "Revisit a finished job (JOBDIR or REDIS_URL): every URL it knows is enqueued again with the validators of its last 200 (If-None-Match, If-Modified-Since); a 304 costs no body and does not call the callback. See docs/recrawl.md."},
		{Name: "RECRAWL_FINGERPRINT", Type: recrawlFingerprint, Default: "body", Doc: "What a page's content fingerprint covers, which decides changed or unchanged when a server sends no 304: body (every byte) or text (the text without tags, scripts and styles: a nonce or token in the markup is no change)."},
	} {
		Register(d)
	}
}
