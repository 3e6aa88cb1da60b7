package cli

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// shellCommands are the shell's commands with their help, in the order
// `help` lists them.
var shellCommands = []struct{ name, args, help string }{
	{"fetch", "URL", "fetch URL the way a crawl does and make it the current response (\"fetch\" alone fetches the current URL again)"},
	{"css", "SELECTOR", "the text of each element SELECTOR matches; SELECTOR may end with ::text (the element's own text) or ::attr(NAME)"},
	{"attr", "SELECTOR NAME", "the NAME attribute of each element SELECTOR matches"},
	{"html", "SELECTOR", "the outer HTML of each element SELECTOR matches"},
	{"links", "[SELECTOR]", "the absolute URLs of the links SELECTOR matches (default a[href]): what out.FollowAll would follow"},
	{"response", "", "the current response: status, URL, type, size, redirects"},
	{"headers", "", "the current response's headers"},
	{"body", "", "the current response's body"},
	{"view", "", "save the current response for a browser (opened when BROWSER is set)"},
	{"help", "", "this list"},
	{"exit", "", "leave the shell (also quit, or Ctrl-D)"},
}

// pseudo matches a trailing Scrapy-style pseudo-element of a selector:
// ::text or ::attr(name).
var pseudo = regexp.MustCompile(`::(text|attr\(\s*([^)\s]+)\s*\))\s*$`)

// shellQuery runs one selector command on res and writes the numbered
// results to w: kind is "css", "attr", "html" or "links".
func shellQuery(w io.Writer, res *spider.Response, kind, arg string) error {
	arg = strings.TrimSpace(arg)
	doc, err := res.Doc()
	if err != nil {
		return fmt.Errorf("the response is not HTML (%s): %v", res.Header.Get("Content-Type"), err)
	}
	var attrName, mode string
	switch kind {
	case "attr":
		i := strings.LastIndexFunc(arg, func(r rune) bool { return r == ' ' || r == '\t' })
		if i < 0 {
			return fmt.Errorf("attr needs a selector and an attribute name: attr a.next href")
		}
		arg, attrName, mode = strings.TrimSpace(arg[:i]), strings.TrimSpace(arg[i+1:]), "attr"
	case "links":
		if arg == "" {
			arg = "a[href]"
		}
		mode = "links"
	case "html":
		mode = "html"
	default:
		mode = "text"
		if m := pseudo.FindStringSubmatch(arg); m != nil {
			arg = strings.TrimSpace(arg[:len(arg)-len(m[0])])
			if m[1] == "text" {
				mode = "owntext"
			} else {
				mode, attrName = "attr", m[2]
			}
		}
	}
	if arg == "" {
		return fmt.Errorf("%s needs a CSS selector, e.g. %s div.quote", kind, kind)
	}
	if _, err := cascadia.ParseGroup(arg); err != nil {
		return fmt.Errorf("%q is not a CSS selector: %v", arg, err)
	}
	found := doc.Find(arg)
	if found.Length() == 0 {
		fmt.Fprintf(w, "no element matches %s\n", arg)
		return nil
	}
	n := 0
	var werr error
	found.Each(func(i int, s *goquery.Selection) {
		var v string
		switch mode {
		case "text":
			v = collapse(s.Text())
		case "owntext":
			v = collapse(s.Contents().FilterFunction(func(_ int, c *goquery.Selection) bool {
				return goquery.NodeName(c) == "#text"
			}).Text())
		case "attr":
			a, ok := s.Attr(attrName)
			if !ok {
				return
			}
			v = a
		case "html":
			h, err := goquery.OuterHtml(s)
			if err != nil {
				werr = err
				return
			}
			v = h
		case "links":
			href, ok := s.Attr("href")
			if !ok {
				if href, ok = s.Attr("src"); !ok {
					return
				}
			}
			req, err := res.NewRequest(href, nil)
			if err != nil {
				v = href + "  (not followed: " + err.Error() + ")"
			} else {
				v = req.URL.String()
			}
		}
		fmt.Fprintf(w, "[%d] %s\n", i, v)
		n++
	})
	if n == 0 && (mode == "attr" || mode == "links") {
		fmt.Fprintf(w, "%d elements match %s, none has the attribute\n", found.Length(), arg)
	}
	return werr
}

// collapse trims text and collapses its runs of white space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// describeResponse prints the current response's summary.
func describeResponse(w io.Writer, res *spider.Response) {
	fmt.Fprintf(w, "%d %s  %s\n", res.Status, http.StatusText(res.Status), res.URL.Redacted())
	if ct := res.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(w, "type: %s\n", ct)
	}
	fmt.Fprintf(w, "size: %d bytes\n", len(res.Body))
	if res.Request != nil {
		if chain := redirectChain(res.Request); len(chain) > 0 {
			fmt.Fprintf(w, "redirected from: %s\n", strings.Join(chain, " -> "))
		}
	}
}

// suggestCommand returns the shell command closest to word, or "".
func suggestCommand(word string) string {
	best, bestD := "", 3
	for _, c := range shellCommands {
		if d := settings.EditDistance(strings.ToLower(word), c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	return best
}
