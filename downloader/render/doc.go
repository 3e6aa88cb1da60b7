// Package render is gocrawl's second download handler: requests rendered
// in headless Chromium (through chromedp) instead of fetched over plain
// HTTP.
//
// Importing the package registers its handler (handler.Render) with the
// download handler registry; the gocrawl command and every cli.Main
// program import it, a program built on package engine directly adds
//
//	import _ "github.com/gocrawl/gocrawl/downloader/render"
//
// A request is rendered when its meta asks for it (MetaRender), when
// RENDER_JS is on, or when one of its scopes is listed in RENDER_SCOPES.
// Pages are opened in a pool of tabs over browser processes; the page's
// own subresources are admitted through the crawl's throttler like any
// request, so a rendered page is as polite as a fetched one. A
// PageActor spider can click, scroll and wait on a page before its HTML
// is read. With WARC_DIR, every exchange the browser makes for a page
// (its document, redirect hops, subresources, XHR) is collected from the
// browser's network events and handed to the Warc middleware, which
// archives it (downloader.BrowserExchange; docs/archive.md).
// docs/rendering.md explains the settings and costs.
package render
