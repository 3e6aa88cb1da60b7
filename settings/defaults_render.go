package settings

// Rendering settings: pages rendered in headless Chromium by package render
// (docs/rendering.md).
func init() {
	for _, d := range []Def{
		{Name: "RENDER_JS", Type: Bool, Default: false, Doc: "Render every request in headless Chromium (the render meta and RENDER_SCOPES choose per request); callbacks get the rendered DOM."},
		{Name: "RENDER_SCOPES", Type: StringList, Default: []string{}, Doc: "Throttling scopes (host names such as app.example.com) whose requests are rendered in headless Chromium."},
		{Name: "RENDER_BROWSER_PATH", Type: String, Default: "", Doc: "Path of the Chromium or Chrome binary; empty = search PATH for chromium, chromium-browser, google-chrome, google-chrome-stable."},
		{Name: "RENDER_BROWSER_ARGS", Type: StringList, Default: []string{}, Doc: "Extra command-line flags for the browser processes, e.g. --js-flags=--max-old-space-size=512."},
		{Name: "BROWSER_CONCURRENCY", Type: NonNegative(Int), Default: 2, Doc: "Browser tabs rendering at once, spread over RENDER_BROWSER_PROCESSES browser processes (at least 1)."},
		{Name: "RENDER_BROWSER_PROCESSES", Type: NonNegative(Int), Default: 1, Doc: "Number of browser processes the tabs are spread over (at least 1, at most BROWSER_CONCURRENCY)."},
		{Name: "RENDER_WAIT", Type: String, Default: "load", Doc: "When a rendered page is ready: load (the load event), domcontentloaded, or networkidle (no network activity for 500 ms); the render_wait meta overrides it."},
		{Name: "RENDER_WAIT_SELECTOR", Type: String, Default: "", Doc: "CSS selector that must match an element before the page is taken (after RENDER_WAIT); the render_wait_selector meta overrides it."},
		{Name: "RENDER_TIMEOUT", Type: NonNegative(Float), Default: 30.0, Doc: "Seconds a render may take, waits and actions included; a page not ready by then fails with DownloadTimeoutError (the render_timeout meta overrides it)."},
		{Name: "RENDER_BLOCK_RESOURCE_TYPES", Type: StringList, Default: []string{"Image", "Font", "Media"}, Doc: "Subresource types a rendered page may not load (DevTools names: Image, Font, Media, Stylesheet, Script, XHR, Fetch, ...)."},
		{Name: "RENDER_THIRD_PARTY", Type: String, Default: "throttle", Doc: "Subresources of other hosts than the page's: throttle (each host through its own throttling scopes) or block."},
		{Name: "RENDER_SCREENSHOT", Type: Bool, Default: false, Doc: "Attach a PNG screenshot of every rendered page to Response.Screenshot (the render_screenshot meta chooses per request)."},
		{Name: "RENDER_BROWSER_MAX_PAGES", Type: NonNegative(Int), Default: 500, Doc: "Restart a browser process after it rendered this many pages, to bound leaks (0 = never)."},
		{Name: "RENDER_BROWSER_MAX_MEMORY", Type: NonNegative(Float), Default: 2048.0, Doc: "Restart a browser process when its process tree uses more than this many MiB of resident memory (0 = never)."},
	} {
		Register(d)
	}
}
