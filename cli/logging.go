package cli

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/settings"
)

// Logs is a command's log stream: one format (human-readable console lines
// or JSON lines) to one destination (standard error, or LOG_FILE). The
// end-of-crawl summary goes through it too (Summary), so a stream is never
// a mix of JSON and text: in console format the summary is text between
// the log lines, in JSON one record, whatever LOG_LEVEL says. Results
// (items on -o -, the output of fetch, parse, demo) go to standard output
// instead.
type Logs struct {
	zerolog.Logger
	// Console is true when the stream is human-readable text, false for
	// JSON lines.
	Console bool

	out   io.Writer // the synchronised writer under Logger
	close func() error
}

// TimeFormat is how log timestamps are written: UTC, to the millisecond.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// OpenLogs builds a command's log stream from LOG_LEVEL, LOG_FORMAT and
// LOG_FILE. Logs go to stderr unless LOG_FILE names a file (appended to).
// LOG_FORMAT auto means console on a terminal and JSON otherwise (a file, a
// pipe). Warnings noticed while loading s (unknown GOCRAWL_ variables) are
// logged at once. Close it when the command ends.
func OpenLogs(s *settings.Settings, stderr io.Writer) (*Logs, error) {
	level := levelOf(s.String("LOG_LEVEL"))
	out := stderr
	closeFn := func() error { return nil }
	if path := s.String("LOG_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, UsageErrorf("LOG_FILE: %v; check the path", err)
		}
		out, closeFn = f, f.Close
	}
	terminal := false
	if f, ok := out.(*os.File); ok {
		terminal = isTerminal(f)
	}
	l := &Logs{close: closeFn}
	switch s.String("LOG_FORMAT") {
	case "console":
		l.Console = true
	case "json":
	default: // auto
		l.Console = terminal
	}
	// Callbacks log from many goroutines; stderr may be any io.Writer.
	l.out = zerolog.SyncWriter(out)
	if l.Console {
		cw := zerolog.ConsoleWriter{Out: l.out, NoColor: !terminal, TimeFormat: "15:04:05.000"}
		l.Logger = zerolog.New(cw).Level(level).With().Timestamp().Logger()
	} else {
		// Not .Timestamp(): its format is a process-wide zerolog setting
		// (seconds by default); this stream's are milliseconds.
		l.Logger = zerolog.New(l.out).Level(level).Hook(msTimestamp{})
	}
	for _, w := range s.Warnings() {
		l.Warn().Msg(w)
	}
	return l, nil
}

// Close closes LOG_FILE, if any.
func (l *Logs) Close() error { return l.close() }

// msTimestamp adds the time to JSON records, to the millisecond, UTC.
type msTimestamp struct{}

func (msTimestamp) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(TimeFormat))
}

// NewLogger builds the crawl's logger from LOG_LEVEL, LOG_FORMAT and
// LOG_FILE (see OpenLogs). The returned func closes LOG_FILE.
func NewLogger(s *settings.Settings, stderr io.Writer) (zerolog.Logger, func() error, error) {
	l, err := OpenLogs(s, stderr)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	return l.Logger, l.Close, nil
}

// levelOf maps a LOG_LEVEL value (already checked by its settings type)
// to a zerolog level.
func levelOf(s string) zerolog.Level {
	switch s {
	case "DEBUG":
		return zerolog.DebugLevel
	case "WARNING":
		return zerolog.WarnLevel
	case "ERROR":
		return zerolog.ErrorLevel
	case "CRITICAL":
		return zerolog.FatalLevel
	case "NONE":
		return zerolog.Disabled
	}
	return zerolog.InfoLevel
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
