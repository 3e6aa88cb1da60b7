package errkind_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/errkind"
)

type kindedErr struct{ k *errkind.Kind }

func (e kindedErr) Error() string            { return "kinded" }
func (e kindedErr) ErrorKind() *errkind.Kind { return e.k }
func (e kindedErr) Is(target error) bool     { return target == e.k }

func TestResolve(t *testing.T) {
	errs, err := errkind.Resolve("RETRY_EXCEPTIONS", []string{"DownloadFailedError", "DownloadTimeoutError"})
	if err != nil || len(errs) != 2 || !errors.Is(kindedErr{errkind.DownloadTimeout}, errs[1]) {
		t.Fatalf("Resolve = %v, %v", errs, err)
	}
	_, err = errkind.Resolve("RETRY_EXCEPTIONS", []string{"DownloadFailedErr"})
	if err == nil || !strings.Contains(err.Error(), "RETRY_EXCEPTIONS") || !strings.Contains(err.Error(), `"DownloadFailedErr"`) {
		t.Errorf("unknown kind error = %v", err)
	}
}

func TestLookup(t *testing.T) {
	if k := errkind.Lookup("DownloadTimeoutError"); k != errkind.DownloadTimeout {
		t.Errorf("Lookup(DownloadTimeoutError) = %v", k)
	}
	if k := errkind.Lookup("NoSuchError"); k != nil {
		t.Errorf("Lookup of an unknown name = %v, want nil", k)
	}
}

func TestOf(t *testing.T) {
	custom := errkind.New("CustomTestError")
	errkind.Register(custom.Name(), custom)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), ""},
		{kindedErr{errkind.DownloadTimeout}, "DownloadTimeoutError"},
		{fmt.Errorf("wrapped: %w", kindedErr{errkind.ResponseDataLoss}), "ResponseDataLossError"},
		{fmt.Errorf("custom: %w", custom), "CustomTestError"},
	} {
		if got := errkind.Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func ExampleRegister() {
	// A middleware that detects soft bans defines a kind for them, so
	// that RETRY_EXCEPTIONS and BACKOFF_EXCEPTIONS can name it.
	banned := errkind.New("BannedError")
	errkind.Register(banned.Name(), banned)

	err := fmt.Errorf("https://example.com/: %w", banned)
	fmt.Println(errkind.Of(err), errors.Is(err, banned))
	// Output: BannedError true
}
