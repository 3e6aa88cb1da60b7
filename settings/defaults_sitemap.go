package settings

// Sitemap spider settings (package sitemap, docs/spiders.md). Sitemaps are
// untrusted input: these bound what one file and a chain of indexes may
// cost; each limit hit is logged with the sitemap's URL.
func init() {
	for _, d := range []Def{
		{Name: "SITEMAP_MAX_SIZE", Type: NonNegative(Int), Default: 50 << 20,
			Doc: "Most bytes of one sitemap, after decompression (gzip included), the sitemap spider reads; the rest is ignored and logged (default: the sitemap protocol's 50 MB; 0 = that default)."},
		{Name: "SITEMAP_MAX_URLS", Type: NonNegative(Int), Default: 50000,
			Doc: "Most URLs (or sitemaps, in an index) the sitemap spider takes from one file; the rest are ignored and logged (default: the protocol's 50,000; 0 = that default)."},
		{Name: "SITEMAP_MAX_DEPTH", Type: NonNegative(Int), Default: 3,
			Doc: "How deep sitemap indexes may nest: the sitemaps given to the spider or listed in robots.txt have depth 0, those an index of depth d lists have d+1; deeper ones are not requested and logged (0 = only the sitemaps given, no index is followed)."},
	} {
		Register(d)
	}
}
