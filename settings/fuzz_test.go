package settings

import (
	"strings"
	"testing"
)

// FuzzLoadYAML: any settings file loads or fails with an error, within the
// alias budget (no alias bomb, no deep nesting, no panic).
func FuzzLoadYAML(f *testing.F) {
	f.Add([]byte("DOWNLOAD_DELAY: 1\nCONCURRENT_REQUESTS: 4\n"))
	f.Add([]byte("THROTTLING_SCOPES:\n  a.com: &s {delay: 2}\n  b.com: *s\n  c.com: {<<: *s, delay: .inf}\n"))
	f.Add([]byte(aliasBomb))
	f.Add([]byte("FEEDS: " + strings.Repeat("[", 250) + strings.Repeat("]", 250)))
	f.Add([]byte("--- \nDOWNLOAD_DELAY: 1\n---\nX: 2\n"))
	f.Add([]byte("DOWNLOAD_TIMEOUT: 1.0e+300\nDEPTH_LIMIT: 99999999999999999999\nUSER_AGENT: !!binary aGk=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = New().LoadYAML(data, "fuzz.yaml")
	})
}

// FuzzSettingValue: any -s or GOCRAWL_ value is parsed (as YAML, else as a
// plain string) or refused with an error; Seconds of an accepted value is
// never negative for the non-negative settings.
func FuzzSettingValue(f *testing.F) {
	for _, v := range []string{"2", ".inf", "-.inf", ".nan", "1e10", "1e400", `{"a.com": {"delay": 2}}`, "[429, 503]", "&a [*a]",
		"{a: &a [1,1], b: [*a,*a]}", "yes", "~", "0x1F", "1_000"} {
		f.Add("DOWNLOAD_DELAY", v)
		f.Add("THROTTLING_SCOPES", v)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		s, err := Load(LoadOptions{NoFile: true, Overrides: []string{name + "=" + value}})
		if err != nil || name != "DOWNLOAD_DELAY" {
			return
		}
		if d := s.Seconds("DOWNLOAD_DELAY"); d < 0 {
			t.Fatalf("DOWNLOAD_DELAY=%q gives %v", value, d)
		}
	})
}
