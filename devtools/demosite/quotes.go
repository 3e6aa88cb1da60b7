package demosite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// QuotesPerPage is how many quotes a page of the quotes site lists.
const QuotesPerPage = 10

// Author is an author of the quotes site.
type Author struct {
	Name        string
	Born        string // "March 14, 1879"
	Location    string // "in Ulm, Germany"
	Description string
}

// Quote is a quote of the quotes site.
type Quote struct {
	Text   string // without the surrounding curly quotes
	Author string // an Author's Name
	Tags   []string
}

// Authors returns the authors of the quotes site, in order of first
// appearance.
func Authors() []Author { return append([]Author(nil), authors...) }

// QuoteList returns every quote of the quotes site in page order.
func QuoteList() []Quote { return append([]Quote(nil), quotes...) }

var authors = []Author{
	{"Albert Einstein", "March 14, 1879", "in Ulm, Germany", "A theoretical physicist who developed the theory of relativity."},
	{"Jane Austen", "December 16, 1775", "in Steventon Rectory, Hampshire, The United Kingdom", "An English novelist known for her six major novels."},
	{"Mark Twain", "November 30, 1835", "in Florida, Missouri, The United States", "An American writer, humorist and lecturer."},
	{"Oscar Wilde", "October 16, 1854", "in Dublin, Ireland", "An Irish poet and playwright."},
	{"Benjamin Franklin", "January 17, 1706", "in Boston, Massachusetts, The United States", "A writer, printer, scientist, inventor and statesman."},
	{"Ralph Waldo Emerson", "May 25, 1803", "in Boston, Massachusetts, The United States", "An American essayist, lecturer and poet."},
	{"Henry David Thoreau", "July 12, 1817", "in Concord, Massachusetts, The United States", "An American essayist, poet and philosopher."},
	{"Charles Dickens", "February 7, 1812", "in Portsmouth, The United Kingdom", "An English writer and social critic."},
	{"Marie Curie", "November 7, 1867", "in Warsaw, Poland", "A physicist and chemist who conducted pioneering research on radioactivity."},
	{"Lao Tzu", "January 1, 0601", "in China", "An ancient Chinese philosopher and writer."},
}

var quotes = []Quote{
	{"Imagination is more important than knowledge.", "Albert Einstein", []string{"imagination", "knowledge"}},
	{"It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.", "Jane Austen", []string{"humor", "love", "marriage"}},
	{"The secret of getting ahead is getting started.", "Mark Twain", []string{"inspirational", "life"}},
	{"Be yourself; everyone else is already taken.", "Oscar Wilde", []string{"be-yourself", "inspirational"}},
	{"Well done is better than well said.", "Benjamin Franklin", []string{"action", "inspirational"}},
	{"What lies behind us and what lies before us are tiny matters compared to what lies within us.", "Ralph Waldo Emerson", []string{"inspirational", "life"}},
	{"Go confidently in the direction of your dreams.", "Henry David Thoreau", []string{"dreams", "inspirational"}},
	{"It was the best of times, it was the worst of times.", "Charles Dickens", []string{"life", "books"}},
	{"Nothing in life is to be feared, it is only to be understood.", "Marie Curie", []string{"fear", "knowledge", "life"}},
	{"A journey of a thousand miles begins with a single step.", "Lao Tzu", []string{"inspirational", "action"}},
	{"Life is like riding a bicycle. To keep your balance you must keep moving.", "Albert Einstein", []string{"life", "simile"}},
	{"There is no charm equal to tenderness of heart.", "Jane Austen", []string{"love", "humor"}},
	{"Kindness is the language which the deaf can hear and the blind can see.", "Mark Twain", []string{"kindness", "inspirational"}},
	{"We are all in the gutter, but some of us are looking at the stars.", "Oscar Wilde", []string{"inspirational", "dreams"}},
	{"An investment in knowledge pays the best interest.", "Benjamin Franklin", []string{"knowledge", "books"}},
	{"To be yourself in a world that is constantly trying to make you something else is the greatest accomplishment.", "Ralph Waldo Emerson", []string{"be-yourself", "life"}},
	{"Not until we are lost do we begin to understand ourselves.", "Henry David Thoreau", []string{"life", "simile"}},
	{"No one is useless in this world who lightens the burdens of another.", "Charles Dickens", []string{"kindness", "life"}},
	{"Be less curious about people and more curious about ideas.", "Marie Curie", []string{"knowledge", "imagination"}},
	{"Nature does not hurry, yet everything is accomplished.", "Lao Tzu", []string{"life", "simile"}},
	{"The important thing is not to stop questioning.", "Albert Einstein", []string{"knowledge", "imagination"}},
	{"I declare after all there is no enjoyment like reading!", "Jane Austen", []string{"books", "humor"}},
	{"Twenty years from now you will be more disappointed by the things that you didn't do than by the ones you did do.", "Mark Twain", []string{"dreams", "action"}},
	{"I can resist everything except temptation.", "Oscar Wilde", []string{"humor"}},
	{"Tell me and I forget. Teach me and I remember. Involve me and I learn.", "Benjamin Franklin", []string{"knowledge", "action"}},
	{"Do not go where the path may lead, go instead where there is no path and leave a trail.", "Ralph Waldo Emerson", []string{"inspirational", "action"}},
	{"Books are the treasured wealth of the world.", "Henry David Thoreau", []string{"books"}},
	{"Have a heart that never hardens, and a temper that never tires.", "Charles Dickens", []string{"kindness", "love"}},
	{"One never notices what has been done; one can only see what remains to be done.", "Marie Curie", []string{"action", "life"}},
	{"Knowing others is intelligence; knowing yourself is true wisdom.", "Lao Tzu", []string{"knowledge", "be-yourself"}},
}

// QuotesPages returns how many list pages the quotes site has.
func QuotesPages() int { return (len(quotes) + QuotesPerPage - 1) / QuotesPerPage }

// AuthorSlug returns the path segment of an author page: "Albert-Einstein".
func AuthorSlug(name string) string { return slugify(name, "-", false) }

// Quotes returns a handler serving the quotes site:
//
//	/robots.txt             allows everything, names the sitemap
//	/sitemap.xml            every page (see sitemap.go)
//	/ and /page/N/          10 quotes per page with a "Next" link
//	/author/<Slug>          the author's name, birth date and place, bio
//	/tag/<tag>/page/1/      the quotes with that tag
func Quotes() http.Handler {
	byAuthor := map[string]Author{}
	for _, a := range authors {
		byAuthor[AuthorSlug(a.Name)] = a
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/robots.txt":
			serveRobots(w, r)
		case p == "/sitemap.xml":
			quotesSitemap(w, r)
		case p == "/":
			serveHTML(w, r, quotesPage(1))
		case strings.HasPrefix(p, "/page/"):
			n, err := strconv.Atoi(strings.Trim(strings.TrimPrefix(p, "/page/"), "/"))
			if err != nil || n < 1 || n > QuotesPages() {
				notFound(w)
				return
			}
			serveHTML(w, r, quotesPage(n))
		case strings.HasPrefix(p, "/author/"):
			a, ok := byAuthor[strings.Trim(strings.TrimPrefix(p, "/author/"), "/")]
			if !ok {
				notFound(w)
				return
			}
			serveHTML(w, r, authorPage(a))
		case strings.HasPrefix(p, "/tag/"):
			tag, rest, _ := strings.Cut(strings.TrimPrefix(p, "/tag/"), "/")
			var tagged []Quote
			for _, q := range quotes {
				for _, t := range q.Tags {
					if t == tag {
						tagged = append(tagged, q)
					}
				}
			}
			if len(tagged) == 0 || (rest != "" && strings.Trim(rest, "/") != "page/1") {
				notFound(w)
				return
			}
			serveHTML(w, r, quotesHTML("Quotes tagged "+tag, tagged, ""))
		default:
			notFound(w)
		}
	})
}

func quotesPage(n int) string {
	lo, hi := (n-1)*QuotesPerPage, min(n*QuotesPerPage, len(quotes))
	next := ""
	if n < QuotesPages() {
		next = fmt.Sprintf("/page/%d/", n+1)
	}
	return quotesHTML("Quotes to Scrape", quotes[lo:hi], next)
}

func quotesHeader(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<!DOCTYPE html>
<html lang="en">
<head>
	<meta charset="UTF-8">
	<title>%s</title>
</head>
<body>
    <div class="container">
        <div class="row header-box">
            <div class="col-md-8">
                <h1><a href="/" style="text-decoration: none">Quotes to Scrape</a></h1>
            </div>
            <div class="col-md-4"><p><a href="/login">Login</a></p></div>
        </div>
`, esc(title))
}

const quotesFooter = `    </div>
    <footer class="footer"><div class="container"><p class="text-muted">Quotes by: GoodReads.com (demo copy)</p></div></footer>
</body>
</html>
`

func quotesHTML(title string, qs []Quote, next string) string {
	var b strings.Builder
	quotesHeader(&b, title)
	b.WriteString("<div class=\"row\">\n    <div class=\"col-md-8\">\n")
	for _, q := range qs {
		fmt.Fprintf(&b, `    <div class="quote" itemscope itemtype="http://schema.org/CreativeWork">
        <span class="text" itemprop="text">“%s”</span>
        <span>by <small class="author" itemprop="author">%s</small>
        <a href="/author/%s">(about)</a>
        </span>
        <div class="tags">
            Tags:
            <meta class="keywords" itemprop="keywords" content="%s" >
`, esc(q.Text), esc(q.Author), AuthorSlug(q.Author), esc(strings.Join(q.Tags, ",")))
		for _, t := range q.Tags {
			fmt.Fprintf(&b, "            <a class=\"tag\" href=\"/tag/%s/page/1/\">%s</a>\n", esc(t), esc(t))
		}
		b.WriteString("        </div>\n    </div>\n")
	}
	b.WriteString("    <nav>\n        <ul class=\"pager\">\n")
	if next != "" {
		fmt.Fprintf(&b, "            <li class=\"next\">\n                <a href=\"%s\">Next <span aria-hidden=\"true\">&rarr;</span></a>\n            </li>\n", next)
	}
	b.WriteString("        </ul>\n    </nav>\n    </div>\n</div>\n")
	b.WriteString(quotesFooter)
	return b.String()
}

func authorPage(a Author) string {
	var b strings.Builder
	quotesHeader(&b, "Quotes to Scrape")
	fmt.Fprintf(&b, `    <div class="author-details">
        <h3 class="author-title">%s
        </h3>
        <p><strong>Born:</strong> <span class="author-born-date">%s</span> <span class="author-born-location">%s</span></p>
        <p><strong>Description:</strong></p>
        <div class="author-description">
        %s
        </div>
    </div>
`, esc(a.Name), esc(a.Born), esc(a.Location), esc(a.Description))
	b.WriteString(quotesFooter)
	return b.String()
}
