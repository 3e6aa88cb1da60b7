package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/settings"
)

// NewLogger builds the crawl's logger from LOG_LEVEL, LOG_FORMAT and
// LOG_FILE. Logs go to stderr unless LOG_FILE names a file; the format is
// the zerolog console writer on a terminal and JSON otherwise, unless
// LOG_FORMAT says console or json. The returned func closes LOG_FILE.
func NewLogger(s *settings.Settings, stderr io.Writer) (zerolog.Logger, func() error, error) {
	level, err := parseLevel(s.String("LOG_LEVEL"))
	if err != nil {
		return zerolog.Nop(), nil, UsageError(err)
	}
	out := stderr
	closeFn := func() error { return nil }
	if path := s.String("LOG_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return zerolog.Nop(), nil, UsageErrorf("LOG_FILE: %v; check the path", err)
		}
		out, closeFn = f, f.Close
	}
	terminal := false
	if f, ok := out.(*os.File); ok {
		terminal = isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
	}
	switch strings.ToLower(s.String("LOG_FORMAT")) {
	case "json":
	case "console":
		out = zerolog.ConsoleWriter{Out: out, NoColor: !terminal, TimeFormat: "15:04:05.000"}
	case "auto", "":
		if terminal {
			out = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"}
		}
	default:
		closeFn()
		return zerolog.Nop(), nil, UsageErrorf("LOG_FORMAT %q: use auto, console or json", s.String("LOG_FORMAT"))
	}
	// Callbacks log from many goroutines; stderr may be any io.Writer.
	return zerolog.New(zerolog.SyncWriter(out)).Level(level).With().Timestamp().Logger(), closeFn, nil
}

func parseLevel(s string) (zerolog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG":
		return zerolog.DebugLevel, nil
	case "INFO", "":
		return zerolog.InfoLevel, nil
	case "WARNING", "WARN":
		return zerolog.WarnLevel, nil
	case "ERROR":
		return zerolog.ErrorLevel, nil
	case "CRITICAL", "FATAL":
		return zerolog.FatalLevel, nil
	case "NONE", "OFF", "DISABLED":
		return zerolog.Disabled, nil
	}
	return zerolog.NoLevel, fmt.Errorf("LOG_LEVEL %q: use DEBUG, INFO, WARNING, ERROR, CRITICAL or NONE", s)
}
