package demosite

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The sitemaps of the demo sites, for the sitemap spider:
//
//	quotes  /sitemap.xml            a urlset of every page (list, author and
//	                                tag pages), gzip-encoded in transit when
//	                                the client accepts it
//	books   /sitemap.xml            a sitemap index of the two below
//	        /sitemap-catalogue.xml  the catalogue and category list pages
//	        /sitemap-books.xml.gz   every book's detail page with its
//	                                <lastmod>, a gzip file
//
// Both robots.txt files name their /sitemap.xml in a "Sitemap:" line.

// BookLastMod is the <lastmod> of a book's detail page in the books
// sitemap: spread over the first half of 2024.
func BookLastMod(b Book) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, (1000-b.ID)*3%180)
}

// siteURL returns "http://host" for the request's Host.
func siteURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// serveRobots serves a robots.txt that allows everything and names the
// site's sitemap.
func serveRobots(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%sSitemap: %s/sitemap.xml\n", robotsTxt, siteURL(r))
}

func urlset(base string, paths []string, lastmod func(i int) string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for i, p := range paths {
		fmt.Fprintf(&b, "  <url><loc>%s%s</loc>", base, esc(p))
		if lastmod != nil {
			fmt.Fprintf(&b, "<lastmod>%s</lastmod>", lastmod(i))
		}
		b.WriteString("</url>\n")
	}
	b.WriteString("</urlset>\n")
	return b.String()
}

func serveXML(w http.ResponseWriter, r *http.Request, body string) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
		_, _ = w.Write(gzipped(body))
		return
	}
	fmt.Fprint(w, body)
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// QuotesSitemapPaths returns the paths the quotes sitemap lists.
func QuotesSitemapPaths() []string {
	paths := []string{"/"}
	for n := 2; n <= QuotesPages(); n++ {
		paths = append(paths, fmt.Sprintf("/page/%d/", n))
	}
	for _, a := range authors {
		paths = append(paths, "/author/"+AuthorSlug(a.Name))
	}
	seen := map[string]bool{}
	for _, q := range quotes {
		for _, t := range q.Tags {
			if !seen[t] {
				seen[t] = true
				paths = append(paths, "/tag/"+t+"/page/1/")
			}
		}
	}
	return paths
}

func quotesSitemap(w http.ResponseWriter, r *http.Request) {
	serveXML(w, r, urlset(siteURL(r), QuotesSitemapPaths(), nil))
}

// BooksListPaths returns the paths of the books site's list pages: the
// catalogue's and each category's, as sitemap-catalogue.xml lists them.
func BooksListPaths() []string {
	paths := []string{"/"}
	pages := (len(books) + BooksPerPage - 1) / BooksPerPage
	for n := 2; n <= pages; n++ {
		paths = append(paths, fmt.Sprintf("/catalogue/page-%d.html", n))
	}
	for i, c := range categories {
		paths = append(paths, "/catalogue/category/books/"+c.Slug()+"/index.html")
		for n := 2; n <= (categorySizes[i]+BooksPerPage-1)/BooksPerPage; n++ {
			paths = append(paths, fmt.Sprintf("/catalogue/category/books/%s/page-%d.html", c.Slug(), n))
		}
	}
	return paths
}

// booksSitemap serves the books site's sitemaps; ok is false for other
// paths.
func booksSitemap(w http.ResponseWriter, r *http.Request) bool {
	base := siteURL(r)
	switch r.URL.Path {
	case "/sitemap.xml":
		latest := time.Time{}
		for _, b := range books {
			if t := BookLastMod(b); t.After(latest) {
				latest = t
			}
		}
		serveXML(w, r, fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>%[1]s/sitemap-catalogue.xml</loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap><loc>%[1]s/sitemap-books.xml.gz</loc><lastmod>%[2]s</lastmod></sitemap>
</sitemapindex>
`, base, latest.Format("2006-01-02")))
	case "/sitemap-catalogue.xml":
		serveXML(w, r, urlset(base, BooksListPaths(), nil))
	case "/sitemap-books.xml.gz":
		paths := make([]string, len(books))
		for i, b := range books {
			paths[i] = "/catalogue/" + b.Slug() + "/index.html"
		}
		body := urlset(base, paths, func(i int) string { return BookLastMod(books[i]).Format("2006-01-02") })
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(gzipped(body))
	default:
		return false
	}
	return true
}
