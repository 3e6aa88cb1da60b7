package render

import (
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// TestHandlerRegistration checks that importing the package registers its
// handler, that the handler checks the RENDER_* settings when it is made,
// and that it starts nothing before the first rendered request.
func TestHandlerRegistration(t *testing.T) {
	f, ok := handler.Lookup(handler.Render)
	if !ok {
		t.Fatalf("no %q handler registered; registered: %v", handler.Render, handler.Names())
	}
	bad := settings.New()
	if err := bad.Set("RENDER_WAIT", "whenever", settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f(handler.Deps{Settings: bad}); err == nil || !strings.Contains(err.Error(), "RENDER_WAIT") {
		t.Fatalf("invalid RENDER_WAIT: err = %v, want one naming the setting", err)
	}
	h, err := f(handler.Deps{Settings: settings.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rh, ok := h.(*Handler)
	if !ok {
		t.Fatalf("the registered factory made a %T, want *render.Handler", h)
	}
	if rh.Renderer() != nil {
		t.Error("a renderer was made before any request asked to be rendered")
	}
	plain := spider.MustRequest("https://example.com/", nil)
	rendered := spider.MustRequest("https://example.com/app", nil)
	rendered.Set(MetaRender, true)
	if h.Wants(plain, nil) || !h.Wants(rendered, nil) {
		t.Errorf("Wants(plain) = %v, Wants(render meta) = %v; want false, true", h.Wants(plain, nil), h.Wants(rendered, nil))
	}
}
