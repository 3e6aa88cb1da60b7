package service_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"os"
)

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func osArgs0() string { return os.Args[0] }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func newJar() http.CookieJar {
	j, _ := cookiejar.New(nil)
	return j
}
