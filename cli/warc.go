package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/persist/warc"
)

func init() { addCommand(warcCommand) }

func warcCommand(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "warc",
		Short: "Look inside web archives (WARC files) written with WARC_DIR",
		Long: `Look inside the WARC files a crawl wrote with -s WARC_DIR=DIR (see
docs/archive.md): list their records, or print what the archive holds for a
URL. A damaged file is reported with the offset of the record that cannot
be read (exit status 2).`,
	}
	cmd.AddCommand(warcLsCommand(a), warcGetCommand(a))
	return cmd
}

func warcLsCommand(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "ls FILE",
		Short: "List the records of a WARC file: offset, length, type, status, date, URL",
		Example: `  gocrawl warc ls archive/quotes-20260102150405000-00000.warc.gz
  gocrawl warc ls archive/quotes-20260102150405000-00000.warc.gz | grep response`,
		Args: ExactArgs(1, "one WARC file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := bufio.NewWriter(a.Stdout)
			tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "OFFSET\tLENGTH\tTYPE\tSTATUS\tDATE\tURL")
			_, err := warc.Scan(args[0], func(rec *warc.Record, pos warc.Position) error {
				status := "-"
				if head, _, ok := rec.HTTP(); ok && rec.Type() != warc.TypeRequest {
					if st, _, err := warc.ParseResponseHead(head); err == nil {
						status = fmt.Sprint(st.Code)
					}
				}
				typ := rec.Type()
				if t := rec.Header.Get("WARC-Truncated"); t != "" {
					typ += " (truncated: " + t + ")"
				}
				_, err := fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", pos.Offset, pos.Length, typ, status,
					rec.Header.Get("WARC-Date"), rec.TargetURI())
				return err
			})
			tw.Flush()
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return warcError(err)
		},
	}
}

func warcGetCommand(a *App) *cobra.Command {
	var headers, raw bool
	var method string
	cmd := &cobra.Command{
		Use:   "get FILE URL",
		Short: "Print the body archived for URL (FILE may be a folder of WARC files)",
		Long: `Print the body of the last capture of URL in the archive: a WARC file or a
folder of them. A revisit record is resolved to the response holding its
payload. The body is decoded (gzip, deflate, br) unless --raw is given;
--headers prints the status line and header fields first.`,
		Example: `  gocrawl warc get archive/ https://quotes.toscrape.com/ > page.html
  gocrawl warc get archive/quotes-20260102150405000-00000.warc.gz https://quotes.toscrape.com/ --headers`,
		Args: ExactArgs(2, "a WARC file or folder and a URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ar, err := warc.LoadArchive(args[0])
			if err != nil {
				return warcError(err)
			}
			c, err := ar.Lookup(method, args[1])
			if err != nil {
				return warcError(err)
			}
			body := c.Payload
			h := c.Header
			if enc := h.Get("Content-Encoding"); enc != "" && !raw {
				r, err := downloader.Decode(enc, bytes.NewReader(body))
				if err == nil {
					body, err = io.ReadAll(r)
				}
				if err != nil {
					return fmt.Errorf("%s: decoding the %s body (try --raw): %w", args[1], enc, err)
				}
				h = h.Clone()
				h.Del("Content-Encoding")
				h.Del("Content-Length")
			}
			w := bufio.NewWriter(a.Stdout)
			if headers {
				fmt.Fprintf(w, "%s %d %s\n", c.Status.Proto, c.Status.Code, c.Status.Reason)
				_ = h.Write(w)
				fmt.Fprintln(w)
			}
			w.Write(body)
			if err := w.Flush(); err != nil {
				return err
			}
			if c.Truncated != "" {
				fmt.Fprintf(a.Stderr, "gocrawl: %s: the archived body is incomplete (WARC-Truncated: %s)\n", args[1], c.Truncated)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&headers, "headers", false, "print the status line and header fields before the body")
	f.BoolVar(&raw, "raw", false, "print the body as received, without undoing its Content-Encoding")
	f.StringVar(&method, "method", "GET", "the request `METHOD` of the capture")
	return cmd
}

// warcError gives a damaged or missing file the usage exit status (2), as
// for the other inputs a command cannot use.
func warcError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, warc.ErrCorrupt) || errors.Is(err, os.ErrNotExist) {
		return UsageError(err)
	}
	return err
}
