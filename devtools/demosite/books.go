package demosite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// BooksPerPage is how many books a catalogue or category page lists.
const BooksPerPage = 20

// Book is a book of the books site.
type Book struct {
	Title    string
	Category string
	// Price in pence: 5177 is shown as £51.77.
	Price int
	// Rating from 1 to 5 stars, shown as the class "star-rating Three".
	Rating int
	// Stock is the number of copies available; 0 shows "Out of stock".
	Stock int
	UPC   string
	// ID is part of the book's URL: /catalogue/<slug>_<ID>/index.html.
	ID int
}

// Slug returns the book's URL directory: "the-silent-river_1000".
func (b Book) Slug() string { return slugify(b.Title, "-", true) + "_" + strconv.Itoa(b.ID) }

// PriceText returns the price as shown on the site: "£51.77".
func (b Book) PriceText() string { return fmt.Sprintf("£%d.%02d", b.Price/100, b.Price%100) }

// Availability returns the availability text of the detail page:
// "In stock (7 available)" or "Out of stock".
func (b Book) Availability() string {
	if b.Stock == 0 {
		return "Out of stock"
	}
	return fmt.Sprintf("In stock (%d available)", b.Stock)
}

// RatingWords are the CSS class words of the star ratings, index = stars.
var RatingWords = [...]string{"Zero", "One", "Two", "Three", "Four", "Five"}

// Category is a category of the books site.
type Category struct {
	Name string
	ID   int
}

// Slug returns the category's URL directory: "mystery_3".
func (c Category) Slug() string { return slugify(c.Name, "-", true) + "_" + strconv.Itoa(c.ID) }

var categories = []Category{{"Travel", 2}, {"Mystery", 3}, {"Poetry", 4}, {"Science", 5}}

// categorySizes are how many books each category holds: Mystery spans
// two pages, the others one.
var categorySizes = []int{15, 25, 12, 8}

var (
	titleFirst  = []string{"The Silent", "A Light in", "Tales of the", "The Last", "Songs of the", "Beyond the", "The Hidden", "Notes from the", "The Curious", "Under the", "Secrets of the", "The Long"}
	titleSecond = []string{"River", "Attic", "Northern Sea", "Lighthouse", "Mountain", "Garden", "Observatory", "Harbour", "Library", "Desert"}
)

var books = makeBooks()

func makeBooks() []Book {
	var out []Book
	i := 0
	for ci, c := range categories {
		for range categorySizes[ci] {
			title := titleFirst[i%len(titleFirst)] + " " + titleSecond[(i/len(titleFirst)+i)%len(titleSecond)]
			if i >= len(titleFirst)*len(titleSecond)/2 {
				title += " II"
			}
			out = append(out, Book{
				Title:    title,
				Category: c.Name,
				Price:    1000 + (i*3779)%5000,
				Rating:   1 + (i*7)%5,
				Stock:    (i * 11) % 23,
				UPC:      fmt.Sprintf("%016x", uint64(i+1)*0x9e3779b97f4a7c15),
				ID:       1000 - i,
			})
			i++
		}
	}
	return out
}

// BookList returns every book in catalogue order.
func BookList() []Book { return append([]Book(nil), books...) }

// Categories returns the categories in sidebar order.
func Categories() []Category { return append([]Category(nil), categories...) }

// Books returns a handler serving the books site. Links are relative, as
// on books.toscrape.com, so a spider must resolve them against the page:
//
//	/robots.txt                                     allows everything, names the sitemap
//	/sitemap.xml, /sitemap-catalogue.xml, /sitemap-books.xml.gz  (see sitemap.go)
//	/ and /index.html                               catalogue page 1
//	/catalogue/page-N.html                          catalogue page N
//	/catalogue/category/books_1/index.html          every book, paginated
//	/catalogue/category/books/<slug>_<id>/index.html (then page-N.html)
//	/catalogue/<slug>_<id>/index.html               a book's detail page
func Books() http.Handler {
	bySlug := map[string]Book{}
	for _, b := range books {
		bySlug[b.Slug()] = b
	}
	catBySlug := map[string]Category{}
	for _, c := range categories {
		catBySlug[c.Slug()] = c
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/robots.txt":
			serveRobots(w, r)
		case booksSitemap(w, r):
		case p == "/" || p == "/index.html":
			serveHTML(w, r, listPage(p, "All products", books, 1, "catalogue/page-%d.html"))
		case strings.HasPrefix(p, "/catalogue/category/"):
			rest := strings.TrimPrefix(p, "/catalogue/category/")
			dir, file := rest[:max(0, strings.LastIndexByte(rest, '/'))], rest[strings.LastIndexByte(rest, '/')+1:]
			var list []Book
			var name string
			switch {
			case dir == "books_1":
				list, name = books, "Books"
			case strings.HasPrefix(dir, "books/"):
				c, ok := catBySlug[strings.TrimPrefix(dir, "books/")]
				if !ok {
					notFound(w)
					return
				}
				name = c.Name
				for _, b := range books {
					if b.Category == c.Name {
						list = append(list, b)
					}
				}
			default:
				notFound(w)
				return
			}
			n, ok := pageNumber(file, len(list))
			if !ok {
				notFound(w)
				return
			}
			serveHTML(w, r, listPage(p, name, list, n, "page-%d.html"))
		case strings.HasPrefix(p, "/catalogue/page-"):
			n, ok := pageNumber(strings.TrimPrefix(p, "/catalogue/"), len(books))
			if !ok || strings.HasSuffix(p, "index.html") {
				notFound(w)
				return
			}
			serveHTML(w, r, listPage(p, "All products", books, n, "page-%d.html"))
		case strings.HasPrefix(p, "/catalogue/") && strings.HasSuffix(p, "/index.html"):
			b, ok := bySlug[strings.TrimSuffix(strings.TrimPrefix(p, "/catalogue/"), "/index.html")]
			if !ok {
				notFound(w)
				return
			}
			serveHTML(w, r, detailPage(p, b))
		default:
			notFound(w)
		}
	})
}

// pageNumber parses "index.html" (1) or "page-N.html" for a list of n books.
func pageNumber(file string, n int) (int, bool) {
	pages := max(1, (n+BooksPerPage-1)/BooksPerPage)
	if file == "index.html" {
		return 1, true
	}
	s, ok := strings.CutPrefix(file, "page-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".html")
	k, err := strconv.Atoi(s)
	if !ok || err != nil || k < 1 || k > pages {
		return 0, false
	}
	return k, true
}

// rel returns the relative prefix from the page at path back to the root:
// "" for "/", "../" for "/catalogue/page-2.html".
func rel(path string) string {
	return strings.Repeat("../", max(0, strings.Count(path, "/")-1))
}

func booksHeader(b *strings.Builder, path, title string) {
	root := rel(path)
	fmt.Fprintf(b, `<!DOCTYPE html>
<html lang="en-us" class="no-js">
<head>
    <meta http-equiv="content-type" content="text/html; charset=UTF-8" />
    <title>
    %s | Books to Scrape - Sandbox
</title>
</head>
<body id="default" class="default">
    <header class="header container-fluid">
        <div class="page_inner"><div class="row">
            <div class="col-sm-8 h1"><a href="%sindex.html">Books to Scrape</a><small> We love being scraped!</small></div>
        </div></div>
    </header>
    <div class="container-fluid page"><div class="page_inner">
`, esc(title), root)
}

const booksFooter = `    </div></div>
    <footer class="footer container-fluid"></footer>
</body>
</html>
`

func sidebar(b *strings.Builder, root string) {
	fmt.Fprintf(b, `        <aside class="sidebar col-sm-4 col-md-3">
            <div class="side_categories">
                <ul class="nav nav-list">
                    <li>
                        <a href="%scatalogue/category/books_1/index.html">
                            Books
                        </a>
                        <ul>
`, root)
	for _, c := range categories {
		fmt.Fprintf(b, "                            <li>\n                                <a href=\"%scatalogue/category/books/%s/index.html\">\n                                    %s\n                                </a>\n                            </li>\n", root, c.Slug(), esc(c.Name))
	}
	b.WriteString("                        </ul>\n                    </li>\n                </ul>\n            </div>\n        </aside>\n")
}

func listPage(path, name string, list []Book, page int, nextPattern string) string {
	root := rel(path)
	var b strings.Builder
	title := name
	if page > 1 {
		title = fmt.Sprintf("%s | Page %d", name, page)
	}
	booksHeader(&b, path, title)
	sidebar(&b, root)
	pages := max(1, (len(list)+BooksPerPage-1)/BooksPerPage)
	lo, hi := (page-1)*BooksPerPage, min(page*BooksPerPage, len(list))
	fmt.Fprintf(&b, `        <div class="col-sm-8 col-md-9">
            <div class="page-header action"><h1>%s</h1></div>
            <form method="get" class="form-horizontal"><strong>%d</strong> results - showing <strong>%d</strong> to <strong>%d</strong>.</form>
            <section><div><ol class="row">
`, esc(name), len(list), lo+1, hi)
	for _, bk := range list[lo:hi] {
		href := root + "catalogue/" + bk.Slug() + "/index.html"
		short := bk.Title
		if len(short) > 20 {
			short = short[:17] + "..."
		}
		avail := `<p class="instock availability"><i class="icon-ok"></i> In stock</p>`
		if bk.Stock == 0 {
			avail = `<p class="outofstock availability"><i class="icon-remove"></i> Out of stock</p>`
		}
		fmt.Fprintf(&b, `                <li class="col-xs-6 col-sm-4 col-md-3 col-lg-3">
                    <article class="product_pod">
                        <div class="image_container"><a href="%s"><img src="%smedia/cache/%d.jpg" alt="%s" class="thumbnail"></a></div>
                        <p class="star-rating %s"><i class="icon-star"></i></p>
                        <h3><a href="%s" title="%s">%s</a></h3>
                        <div class="product_price">
                            <p class="price_color">%s</p>
                            %s
                        </div>
                    </article>
                </li>
`, href, root, bk.ID, esc(bk.Title), RatingWords[bk.Rating], href, esc(bk.Title), esc(short), bk.PriceText(), avail)
	}
	b.WriteString("            </ol></div>\n            <div><ul class=\"pager\">\n")
	if page > 1 {
		prev := fmt.Sprintf(nextPattern, page-1)
		if path == "/" || path == "/index.html" {
			prev = "index.html"
		}
		fmt.Fprintf(&b, "                <li class=\"previous\"><a href=\"%s\">previous</a></li>\n", prev)
	}
	fmt.Fprintf(&b, "                <li class=\"current\">\n                    Page %d of %d\n                </li>\n", page, pages)
	if page < pages {
		fmt.Fprintf(&b, "                <li class=\"next\"><a href=\"%s\">next</a></li>\n", fmt.Sprintf(nextPattern, page+1))
	}
	b.WriteString("            </ul></div>\n            </section>\n        </div>\n")
	b.WriteString(booksFooter)
	return b.String()
}

func detailPage(path string, bk Book) string {
	root := rel(path)
	var cat Category
	for _, c := range categories {
		if c.Name == bk.Category {
			cat = c
		}
	}
	var b strings.Builder
	booksHeader(&b, path, bk.Title)
	availClass := "instock"
	icon := "icon-ok"
	if bk.Stock == 0 {
		availClass, icon = "outofstock", "icon-remove"
	}
	fmt.Fprintf(&b, `        <ul class="breadcrumb">
            <li><a href="%sindex.html">Home</a></li>
            <li><a href="%scatalogue/category/books_1/index.html">Books</a></li>
            <li><a href="%scatalogue/category/books/%s/index.html">%s</a></li>
            <li class="active">%s</li>
        </ul>
        <article class="product_page">
            <div class="row">
                <div class="col-sm-6"><div id="product_gallery" class="carousel"><div class="thumbnail"><div class="carousel-inner"><div class="item active"><img src="%smedia/cache/%d.jpg" alt="%s" /></div></div></div></div></div>
                <div class="col-sm-6 product_main">
                    <h1>%s</h1>
                    <p class="price_color">%s</p>
                    <p class="%s availability">
                        <i class="%s"></i>
                        %s
                    </p>
                    <p class="star-rating %s">
                        <i class="icon-star"></i>
                    </p>
                </div>
            </div>
            <div id="product_description" class="sub-header"><h2>Product Description</h2></div>
            <p>A generated book in the %s category, served by the gocrawl demo site.</p>
            <div class="sub-header"><h2>Product Information</h2></div>
            <table class="table table-striped">
                <tr><th>UPC</th><td>%s</td></tr>
                <tr><th>Product Type</th><td>Books</td></tr>
                <tr><th>Price (excl. tax)</th><td>%s</td></tr>
                <tr><th>Price (incl. tax)</th><td>%s</td></tr>
                <tr><th>Tax</th><td>£0.00</td></tr>
                <tr><th>Availability</th><td>%s</td></tr>
                <tr><th>Number of reviews</th><td>0</td></tr>
            </table>
        </article>
`, root, root, root, cat.Slug(), esc(cat.Name), esc(bk.Title), root, bk.ID, esc(bk.Title),
		esc(bk.Title), bk.PriceText(), availClass, icon, bk.Availability(), RatingWords[bk.Rating],
		esc(bk.Category), bk.UPC, bk.PriceText(), bk.PriceText(), bk.Availability())
	b.WriteString(booksFooter)
	return b.String()
}
