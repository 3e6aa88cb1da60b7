package settings

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	RegisterCheck("test-check", func(s *Settings) error {
		if s.Int("CONCURRENT_ITEMS") == 7 {
			return Invalid(s, "CONCURRENT_ITEMS", "7 is unlucky")
		}
		return nil
	})
	RegisterCheck("test-panic", func(s *Settings) error {
		if s.String("BOT_NAME") == "boom" {
			panic("boom")
		}
		return nil
	})
	t.Cleanup(func() {
		checkMu.Lock()
		checks = checks[:len(checks)-2]
		checkMu.Unlock()
	})
	s := New()
	if err := Validate(s); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := s.LoadYAML([]byte("BOT_NAME: boom\nCONCURRENT_ITEMS: 7\n"), "gocrawl.yaml"); err != nil {
		t.Fatal(err)
	}
	err := Validate(s)
	errs := Errors(err)
	if len(errs) != 2 {
		t.Fatalf("Validate = %q, want 2 problems", errs)
	}
	if got, want := errs[0].Error(), "gocrawl.yaml:2: invalid setting CONCURRENT_ITEMS: 7 is unlucky"; got != want {
		t.Errorf("problem = %q, want %q", got, want)
	}
	if !errors.Is(errs[0], ErrInvalid) {
		t.Errorf("%v is not ErrInvalid", errs[0])
	}
	if !strings.Contains(errs[1].Error(), "settings check test-panic panicked: boom") {
		t.Errorf("panic = %q", errs[1])
	}
}
