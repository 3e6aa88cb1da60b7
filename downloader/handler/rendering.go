package handler

import (
	"strings"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Render is the name of the headless-browser handler (package render).
const Render = "render"

// MetaRender (bool, or "true"/"false") renders the request (true) or
// fetches it over plain HTTP (false), whatever RENDER_JS and RENDER_SCOPES
// say.
const MetaRender = "render"

// Rendering says which requests are rendered: RENDER_JS, RENDER_SCOPES
// and the render meta. The Render handler wants these requests; the engine
// uses it too, to tell a request or settings that ask for rendering in a
// program without a renderer.
type Rendering struct {
	// All is RENDER_JS: every request is rendered.
	All bool
	// Scopes is RENDER_SCOPES: requests whose host, or one of whose
	// throttling scopes, is listed are rendered.
	Scopes map[string]bool
}

// RenderingFromSettings reads RENDER_JS and RENDER_SCOPES.
func RenderingFromSettings(s *settings.Settings) Rendering {
	r := Rendering{All: s.Bool("RENDER_JS")}
	for _, name := range s.Strings("RENDER_SCOPES") {
		if r.Scopes == nil {
			r.Scopes = map[string]bool{}
		}
		r.Scopes[name] = true
	}
	return r
}

// Enabled reports whether the settings ask for rendering up front, and
// which setting does ("" when none): the browser is then looked for at
// start-up instead of at the first request with the render meta.
func (r Rendering) Enabled() (setting string, ok bool) {
	switch {
	case r.All:
		return "RENDER_JS", true
	case len(r.Scopes) > 0:
		return "RENDER_SCOPES", true
	}
	return "", false
}

// Wants reports whether req is to be rendered: its render meta when set,
// else RENDER_JS, else whether its host or one of its throttling scopes
// (which may be nil) is in RENDER_SCOPES.
func (r Rendering) Wants(req *spider.Request, scopes throttling.Scopes) bool {
	switch v := req.Get(MetaRender).(type) {
	case bool:
		return v
	case string:
		switch strings.ToLower(v) {
		case "true", "1", "yes":
			return true
		case "false", "0", "no":
			return false
		}
	}
	if r.All {
		return true
	}
	if len(r.Scopes) == 0 {
		return false
	}
	if r.Scopes[req.Host()] {
		return true
	}
	for _, s := range scopes {
		if r.Scopes[s.Name] {
			return true
		}
	}
	return false
}
