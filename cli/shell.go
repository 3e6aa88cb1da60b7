package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { addCommand(shellCommand) }

func shellCommand(a *App) *cobra.Command {
	var (
		pf      pageFlags
		history string
	)
	cmd := &cobra.Command{
		Use:   "shell [URL]",
		Short: "Try selectors interactively on a page fetched the way a crawl does",
		Long: `Open a prompt over a response fetched as fetch does (the project's settings,
robots.txt, throttling, the downloader middlewares), and try CSS selectors on
it before writing a callback:

  css div.quote span.text        the text of each match
  css li.next a::attr(href)      an attribute (also ::text for own text)
  attr a.tag href                the same, as a command
  html div.quote                 the outer HTML of each match
  links li.next a                the absolute URLs FollowAll would follow
  fetch https://example.com/p/2  move on to another page
  response, headers, body, view, help, exit (or Ctrl-D)

The prompt has line editing (arrows, Ctrl-A/E/K/W, Ctrl-R to search) and a
history kept across sessions in ~/.gocrawl_history (--history FILE, or
--history "" for none). Logs go to standard error, at WARNING unless
LOG_LEVEL is set.`,
		Example: `  gocrawl shell https://quotes.toscrape.com/
  gocrawl shell --spider quotes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			s, l, o, err := pf.load(a, "shell")
			if err != nil {
				return err
			}
			defer l.Close()
			sh := &shell{app: a, ctx: cmd.Context(), settings: s, logs: l, opts: o, out: a.Stdout}
			if len(pos) == 1 {
				sh.fetch(pos[0])
			}
			return sh.loop(history)
		},
	}
	pf.add(cmd)
	home, _ := os.UserHomeDir()
	defHistory := ""
	if home != "" {
		defHistory = filepath.Join(home, ".gocrawl_history")
	}
	cmd.Flags().StringVar(&history, "history", defHistory, "keep the prompt's history in `FILE` (\"\" for none)")
	return cmd
}

// shell is one interactive session.
type shell struct {
	app      *App
	ctx      context.Context
	settings *settings.Settings
	logs     *Logs
	opts     fetchOptions
	out      io.Writer
	res      *spider.Response
	url      string
}

const shellPrompt = "gocrawl> "

// loop reads commands until exit or end of input. On a terminal it uses
// liner (line editing, history, completion); otherwise it reads lines
// from the App's Stdin as they come, for scripts and tests.
func (sh *shell) loop(historyFile string) error {
	in := sh.app.Stdin
	if in == nil {
		in = os.Stdin
	}
	if f, ok := in.(*os.File); !ok || f != os.Stdin || !liner.TerminalSupported() || !isTerminal(os.Stdin) {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if !sh.run(sc.Text()) {
				return nil
			}
		}
		return sc.Err()
	}
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetCompleter(func(line string) []string {
		var out []string
		for _, c := range shellCommands {
			if strings.HasPrefix(c.name, strings.ToLower(line)) {
				out = append(out, c.name+" ")
			}
		}
		return out
	})
	if historyFile != "" {
		if f, err := os.Open(historyFile); err == nil {
			ln.ReadHistory(f)
			f.Close()
		}
		defer func() {
			if f, err := os.OpenFile(historyFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
				ln.WriteHistory(f)
				f.Close()
			}
		}()
	}
	fmt.Fprintln(sh.out, `Type "help" for the commands, Ctrl-D to leave.`)
	for {
		line, err := ln.Prompt(shellPrompt)
		switch {
		case errors.Is(err, liner.ErrPromptAborted): // Ctrl-C: a fresh line
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(sh.out)
			return nil
		case err != nil:
			return err
		}
		if strings.TrimSpace(line) != "" {
			ln.AppendHistory(line)
		}
		if !sh.run(line) {
			return nil
		}
	}
}

// run executes one command line; it returns false to leave the shell.
func (sh *shell) run(line string) bool {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return true
	}
	name, arg, _ := strings.Cut(line, " ")
	name = strings.ToLower(name)
	arg = strings.TrimSpace(arg)
	switch name {
	case "exit", "quit":
		return false
	case "help", "?":
		for _, c := range shellCommands {
			fmt.Fprintf(sh.out, "  %-22s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
		}
		return true
	case "fetch":
		if arg == "" {
			arg = sh.url
		}
		if arg == "" {
			fmt.Fprintln(sh.out, "error: fetch needs a URL: fetch https://example.com/")
			return true
		}
		sh.fetch(arg)
		return true
	}
	known := false
	for _, c := range shellCommands {
		known = known || c.name == name
	}
	if !known {
		msg := fmt.Sprintf("error: unknown command %q", name)
		if s := suggestCommand(name); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		fmt.Fprintln(sh.out, msg+` (type "help")`)
		return true
	}
	if sh.res == nil {
		fmt.Fprintln(sh.out, "error: no response yet: fetch URL first")
		return true
	}
	var err error
	switch name {
	case "css", "attr", "html", "links":
		err = shellQuery(sh.out, sh.res, name, arg)
	case "response":
		describeResponse(sh.out, sh.res)
	case "headers":
		writeHeaderLines(sh.out, "", sh.res.Header)
	case "body":
		sh.out.Write(sh.res.Body)
		if len(sh.res.Body) > 0 && sh.res.Body[len(sh.res.Body)-1] != '\n' {
			fmt.Fprintln(sh.out)
		}
	case "view":
		var path string
		if path, err = saveForBrowser(sh.res, ""); err == nil {
			fmt.Fprintln(sh.out, path)
			err = openBrowser(sh.app.Environ, path)
		}
	}
	if err != nil {
		fmt.Fprintf(sh.out, "error: %v\n", err)
	}
	return true
}

// fetch makes rawURL's response the current one, or says why not.
func (sh *shell) fetch(rawURL string) {
	res, err := sh.app.fetchPage(sh.ctx, rawURL, sh.settings, sh.logs, sh.opts)
	if err != nil {
		fmt.Fprintf(sh.out, "error: %v\n", err)
		return
	}
	sh.res, sh.url = res, rawURL
	describeResponse(sh.out, res)
}
