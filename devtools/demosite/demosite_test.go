package demosite

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// crawlAll fetches every page reachable from "/" through a[href] links and
// returns the body of each path; it fails on any link that is not a 200.
func crawlAll(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	seen := map[string]string{}
	queue := []string{srv.URL + "/"}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		pu, _ := url.Parse(u)
		if _, ok := seen[pu.Path]; ok {
			continue
		}
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: status %d", pu.Path, res.StatusCode)
		}
		seen[pu.Path] = string(body)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) {
			href, _ := s.Attr("href")
			nu, err := pu.Parse(href)
			if err != nil {
				t.Errorf("%s: bad link %q", pu.Path, href)
				return
			}
			if nu.Host == base.Host && nu.Path != "/login" {
				queue = append(queue, nu.String())
			}
		})
	}
	return seen
}

func TestQuotesSiteLinksAllResolve(t *testing.T) {
	pages := crawlAll(t, Quotes())
	for _, a := range authors {
		body, ok := pages["/author/"+AuthorSlug(a.Name)]
		if !ok {
			t.Errorf("author page of %s not linked", a.Name)
			continue
		}
		if !strings.Contains(body, `<span class="author-born-date">`+a.Born) {
			t.Errorf("author page of %s lacks the birth date", a.Name)
		}
	}
	for n := 2; n <= QuotesPages(); n++ {
		if _, ok := pages["/page/"+string(rune('0'+n))+"/"]; !ok {
			t.Errorf("page %d not reachable through Next links", n)
		}
	}
	if got := strings.Count(pages["/"], `class="quote"`); got != QuotesPerPage {
		t.Errorf("front page lists %d quotes, want %d", got, QuotesPerPage)
	}
}

func TestBooksSiteLinksAllResolve(t *testing.T) {
	pages := crawlAll(t, Books())
	slugs := map[string]bool{}
	for _, b := range books {
		if slugs[b.Slug()] {
			t.Errorf("duplicate book slug %s", b.Slug())
		}
		slugs[b.Slug()] = true
		body, ok := pages["/catalogue/"+b.Slug()+"/index.html"]
		if !ok {
			t.Errorf("detail page of %q not linked", b.Title)
			continue
		}
		for _, want := range []string{"<h1>" + esc(b.Title) + "</h1>", b.PriceText(), "star-rating " + RatingWords[b.Rating], b.Availability()} {
			if !strings.Contains(body, want) {
				t.Errorf("detail page of %q lacks %q", b.Title, want)
			}
		}
	}
	if _, ok := pages["/catalogue/category/books/mystery_3/page-2.html"]; !ok {
		t.Error("second page of the Mystery category not reachable")
	}
	if _, ok := pages["/catalogue/page-3.html"]; !ok {
		t.Error("third catalogue page not reachable")
	}
}

func TestRobotsAllowsAllAndUnknownPathsAre404(t *testing.T) {
	for name, h := range map[string]http.Handler{"quotes": Quotes(), "books": Books()} {
		for path, want := range map[string]int{
			"/robots.txt": 200, "/nope": 404, "/page/99/": 404, "/catalogue/page-99.html": 404,
			"/author/Nobody": 404, "/catalogue/category/books/nope_9/index.html": 404,
		} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if rec.Code != want && !(path == "/robots.txt") {
				t.Errorf("%s %s: status %d, want %d", name, path, rec.Code, want)
			}
			if path == "/robots.txt" && (rec.Code != 200 || !strings.Contains(rec.Body.String(), "Allow: /")) {
				t.Errorf("%s robots.txt: %d %q", name, rec.Code, rec.Body.String())
			}
		}
	}
}

// The sitemaps list every page the sites link to, each answering 200; the
// robots.txt files name them.
func TestSitemaps(t *testing.T) {
	for name, h := range map[string]http.Handler{"quotes": Quotes(), "books": Books()} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			robots := get(t, srv.URL+"/robots.txt", "")
			if !strings.Contains(robots, "Sitemap: "+srv.URL+"/sitemap.xml\n") {
				t.Fatalf("robots.txt lacks the Sitemap line:\n%s", robots)
			}
			listed := map[string]bool{}
			var walk func(u string)
			walk = func(u string) {
				body := get(t, u, "gzip")
				for _, m := range locRe.FindAllStringSubmatch(body, -1) {
					loc := m[1]
					if strings.HasSuffix(loc, ".xml") || strings.HasSuffix(loc, ".xml.gz") {
						walk(loc)
						continue
					}
					if listed[loc] {
						t.Errorf("%s listed twice", loc)
					}
					listed[loc] = true
				}
			}
			walk(srv.URL + "/sitemap.xml")
			pages := crawlAll(t, h)
			delete(pages, "/login")
			for p := range pages {
				if p == "/index.html" || strings.HasPrefix(p, "/catalogue/category/books_1/") || strings.HasSuffix(p, "/page-1.html") || p == "/page/1/" {
					continue // duplicates of listed pages
				}
				if !listed[srv.URL+p] {
					t.Errorf("page %s is not in the sitemaps", p)
				}
			}
			for u := range listed {
				if !strings.HasPrefix(u, srv.URL+"/") {
					t.Errorf("%s is not on the site", u)
					continue
				}
				if _, ok := pages[strings.TrimPrefix(u, srv.URL)]; !ok {
					get(t, u, "") // fails the test unless 200
				}
			}
		})
	}
}

var locRe = regexp.MustCompile(`<loc>([^<]+)</loc>`)

// get returns the body of a 200 response, decompressing gzip files.
func get(t *testing.T, u, acceptEncoding string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", u, res.StatusCode)
	}
	var r io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" || strings.HasSuffix(u, ".gz") {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
