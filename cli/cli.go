// Package cli is gocrawl's command line: `gocrawl run`, `list`,
// `settings`, `jobs`, `report`, `version`; `fetch`, `view`, `parse` and
// `shell` to look at one page the way a crawl does; `new` and `genspider`
// to make projects and spiders; `serve`, the crawl service (package
// service) that runs the program's spiders as jobs. A project gets the same command line for
// its own spiders with one call:
//
//	func main() { cli.Main(&myspider.Spider{}) }
//
// and adds commands of its own with Program (the gocrawl binary adds its
// demo and simulator that way, so that user programs do not link them).
//
// Every built-in command lives in a file named after it; a file adds its
// command to the root with addCommand in an init function, so new commands
// need no edit elsewhere.
//
// Exit status: 0 when the crawl ran (HTTP errors included), 2 for usage and
// settings errors (found before the first request), 1 for fatal errors
// (and for fetch, view and parse when no response came), 3 when the crawl
// ran but a monitor failed (ExitMonitor; see docs/monitors.md).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/spider"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFatal = 1
	ExitUsage = 2
)

// ExitError is an error with the exit status it causes.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as a usage or settings error: the command exits
// with status 2 (ExitUsage) and prints err. Nil stays nil.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// UsageErrorf is UsageError(fmt.Errorf(format, args...)).
func UsageErrorf(format string, args ...any) error { return UsageError(fmt.Errorf(format, args...)) }

// App is the state shared by the commands of one invocation.
type App struct {
	// Stdin is read by interactive commands (shell); nil means os.Stdin,
	// with line editing when it is a terminal.
	Stdin io.Reader
	// Stdout receives command output (lists, settings, JSON).
	Stdout io.Writer
	// Stderr receives logs, errors and the end-of-crawl summary.
	Stderr io.Writer
	// Environ is the environment (os.Environ format) read for GOCRAWL_
	// settings.
	Environ []string
	// Signals, when not nil, delivers interrupt requests (SIGINT, SIGTERM).
	// Main wires it to the process signals.
	Signals <-chan os.Signal

	spiders map[string]spider.Spider
	extra   []Command // the program's own commands
	// interrupted is set by the first signal, so that commands running
	// several crawls (demo) stop after the current one.
	interrupted atomic.Bool
}

// Spider returns the registered spider called name, or a usage error that
// lists the known names.
func (a *App) Spider(name string) (spider.Spider, error) {
	if sp, ok := a.spiders[name]; ok {
		return sp, nil
	}
	known := a.SpiderNames()
	if len(known) == 0 {
		return nil, UsageErrorf("unknown spider %q: no spiders are registered in this program", name)
	}
	return nil, UsageErrorf("unknown spider %q; known spiders: %s (see `list`)", name, strings.Join(known, ", "))
}

// SpiderNames returns the registered spider names, sorted.
func (a *App) SpiderNames() []string {
	names := make([]string, 0, len(a.spiders))
	for n := range a.spiders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Command builds one subcommand of a program's command line. The gocrawl
// binary adds its demo and simulator this way; a project can add its own
// (see Program). The helpers of this package (SettingsFlags, App.Crawl,
// NewLogger, WriteSummary, UsageErrorf, ExactArgs) give a command the same
// settings, logs, exit statuses and summary as the built-in ones.
type Command func(a *App) *cobra.Command

// commands holds the builders of the built-in subcommands, added by each
// command's file in an init function.
var commands []Command

// addCommand registers a built-in subcommand builder.
func addCommand(build Command) { commands = append(commands, build) }

// Program is a command line built on gocrawl: the spiders it can run and
// any commands it adds to the built-in ones (run, list, settings, jobs,
// report, fetch, view, parse, shell, new, genspider, serve, version).
//
//	func main() {
//		cli.Program{Spiders: []spider.Spider{&myspider.Spider{}}, Commands: []cli.Command{deployCommand}}.Main()
//	}
type Program struct {
	Spiders  []spider.Spider
	Commands []Command
}

// Main runs the command line with os.Args, the process's signals and
// environment, and exits with the command's status.
func (p Program) Main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	app := &App{Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ(), Signals: sig}
	os.Exit(app.run(context.Background(), os.Args[1:], p))
}

// Run runs the command line with args (without the program name), writing
// to stdout and stderr, and returns the exit status. It reads the process
// environment but not its signals; cancel ctx to stop a crawl gracefully.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := &App{Stdout: stdout, Stderr: stderr, Environ: os.Environ()}
	return app.run(ctx, args, p)
}

// Main runs the command line of a program offering spiders, and exits with
// the command's status:
//
//	func main() { cli.Main(&quotes.Spider{}, &books.Spider{}) }
func Main(spiders ...spider.Spider) { Program{Spiders: spiders}.Main() }

// Run is Program{Spiders: spiders}.Run(ctx, args, stdout, stderr).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, spiders ...spider.Spider) int {
	return Program{Spiders: spiders}.Run(ctx, args, stdout, stderr)
}

// Interrupted reports whether the process got an interrupt (SIGINT,
// SIGTERM) during a crawl, so that commands running several crawls stop
// after the current one.
func (a *App) Interrupted() bool { return a.interrupted.Load() }

func (a *App) run(ctx context.Context, args []string, p Program) int {
	a.spiders = map[string]spider.Spider{}
	a.extra = p.Commands
	for _, sp := range p.Spiders {
		if sp == nil {
			continue
		}
		if _, dup := a.spiders[sp.Name()]; dup {
			fmt.Fprintf(a.Stderr, "gocrawl: two spiders are named %q; give each spider a unique Name()\n", sp.Name())
			return ExitFatal
		}
		a.spiders[sp.Name()] = sp
	}
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitFatal
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if isCobraUsage(err) {
		code = ExitUsage
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintf(a.Stderr, "gocrawl: %s\n", indentLines(err.Error()))
		if code == ExitUsage && isCobraUsage(err) {
			fmt.Fprintln(a.Stderr, "Run 'gocrawl help' or 'gocrawl COMMAND --help' for usage.")
		}
	}
	return code
}

// errReported is wrapped by errors whose message was already printed.
var errReported = errors.New("reported")

// isCobraUsage recognises cobra's own argument and command errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// indentLines indents the lines after the first, for multi-error messages.
func indentLines(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
