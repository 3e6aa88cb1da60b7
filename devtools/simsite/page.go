package simsite

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
)

// filler is the padding text of generated pages.
const filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. "

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// renderPage writes page i of host name into buf. hostHeader is the Host
// the client asked for, used for absolute links.
func renderPage(buf *bytes.Buffer, g *Graph, i int, name, hostHeader string, p PagesConfig) {
	buf.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>")
	buf.WriteString(name)
	buf.WriteString(" page ")
	buf.WriteString(strconv.Itoa(i))
	buf.WriteString("</title></head>\n<body>\n<h1>Page ")
	buf.WriteString(strconv.Itoa(i))
	buf.WriteString("</h1>\n<ul class=\"links\">\n")
	for k, c := range g.links[i] {
		style := p.Links
		if style == LinksMixed {
			style = [...]LinkStyle{LinksRelative, "path-relative", LinksAbsolute}[k%3]
		}
		buf.WriteString("<li><a href=\"")
		switch style {
		case LinksAbsolute:
			buf.WriteString("http://")
			buf.WriteString(hostHeader)
			buf.WriteString(PagePath(int(c)))
		case "path-relative":
			// "../page/N" resolves to /page/N from "/" and from "/page/M".
			if c == 0 {
				buf.WriteString("../")
			} else {
				buf.WriteString("..")
				buf.WriteString(PagePath(int(c)))
			}
		default:
			buf.WriteString(PagePath(int(c)))
		}
		buf.WriteString("\">page ")
		buf.WriteString(strconv.Itoa(int(c)))
		buf.WriteString("</a></li>\n")
	}
	buf.WriteString("</ul>\n")
	const tail = "</body></html>\n"
	const padOpen, padClose = "<p class=\"pad\">", "</p>\n"
	if room := p.Size - buf.Len() - len(tail) - len(padOpen) - len(padClose); room > 0 {
		buf.WriteString(padOpen)
		for room > 0 {
			n := min(room, len(filler))
			buf.WriteString(filler[:n])
			room -= n
		}
		buf.WriteString(padClose)
	}
	buf.WriteString(tail)
}

// maintenancePage is the body of a soft-blocked answer.
const maintenancePage = "<!DOCTYPE html>\n<html><head><title>Under maintenance</title></head>\n" +
	"<body><h1>Under maintenance</h1><p>We are performing scheduled maintenance. Please come back later.</p></body></html>\n"

// limitedPage is the body of a 429/503 answer.
func limitedPage(status int) string {
	text := strconv.Itoa(status) + " " + http.StatusText(status)
	return "<!DOCTYPE html>\n<html><head><title>" + text + "</title></head><body><h1>" + text + "</h1></body></html>\n"
}
