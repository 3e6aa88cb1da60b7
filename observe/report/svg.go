package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// plot is one line chart over time, drawn as inline SVG by hand: axes with
// round ticks, one polyline per line, dashed horizontal reference lines
// (configured limits) and a legend. The colours come from CSS classes of
// the page (class "c-<Class>").
type plot struct {
	// ID names the plot in the page (data-plot), for tests and links.
	ID    string
	Title string
	// Unit is shown after the title ("per second", "seconds").
	Unit  string
	Lines []line
	Refs  []ref
	// XMax is the end of the time axis in seconds (the crawl's length).
	XMax float64
	// Integer makes the y ticks whole numbers (in flight, levels).
	Integer bool
}

// line is one plotted series.
type line struct {
	Name  string
	Class string
	X, Y  []float64
	// Step draws a staircase (a value that holds until the next point):
	// limits, levels, delays.
	Step bool
}

// ref is a horizontal reference line, such as a configured limit.
type ref struct {
	Name  string
	Class string
	Y     float64
}

// Plot size in SVG units; the page scales it to its column.
const (
	plotW, plotH                           = 480, 190
	marginL, marginR, marginT, marginB     = 46, 10, 30, 24
	innerW, innerH                         = plotW - marginL - marginR, plotH - marginT - marginB
	legendGap                          int = 14
)

// SVG renders p. Text is escaped, so the result is safe to inline.
func (p plot) SVG() template.HTML {
	xmax := p.XMax
	ymax := 0.0
	points := 0
	for _, l := range p.Lines {
		for i, y := range l.Y {
			if i < len(l.X) {
				xmax = max(xmax, l.X[i])
			}
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				ymax = max(ymax, y)
			}
		}
		points += len(l.Y)
	}
	for _, r := range p.Refs {
		ymax = max(ymax, r.Y)
	}
	if xmax <= 0 {
		xmax = 1
	}
	yticks := niceTicks(ymax, p.Integer)
	ytop := yticks[len(yticks)-1]
	xticks := timeTicks(xmax)
	sx := func(x float64) float64 { return marginL + x/xmax*innerW }
	sy := func(y float64) float64 { return marginT + innerH - y/ytop*innerH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" data-plot="%s" data-points="%d" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t" xmlns="http://www.w3.org/2000/svg">`,
		html.EscapeString(p.ID), points, plotW, plotH, html.EscapeString(p.ID))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title>`, html.EscapeString(p.ID), html.EscapeString(p.Title+" ("+p.Unit+")"))
	fmt.Fprintf(&b, `<text class="ptitle" x="%d" y="13">%s <tspan class="unit">%s</tspan></text>`, marginL, html.EscapeString(p.Title), html.EscapeString(p.Unit))
	// Grid and y axis.
	for _, t := range yticks {
		y := sy(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, marginL, y, plotW-marginR, y)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, marginL-4, y+3.5, formatNum(t))
	}
	for _, t := range xticks {
		x := sx(t)
		fmt.Fprintf(&b, `<line class="tickmark" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x, marginT+innerH, x, marginT+innerH+4)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, plotH-6, formatSeconds(t))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, marginL, marginT+innerH, plotW-marginR, marginT+innerH)
	// Reference lines under the data.
	for _, r := range p.Refs {
		y := sy(r.Y)
		fmt.Fprintf(&b, `<line class="ref c-%s" x1="%d" y1="%.1f" x2="%d" y2="%.1f"><title>%s: %s</title></line>`,
			html.EscapeString(r.Class), marginL, y, plotW-marginR, y, html.EscapeString(r.Name), formatNum(r.Y))
	}
	for _, l := range p.Lines {
		path := linePath(l, sx, sy)
		if path == "" {
			continue
		}
		fmt.Fprintf(&b, `<path class="line c-%s" d="%s"><title>%s</title></path>`, html.EscapeString(l.Class), path, html.EscapeString(l.Name))
	}
	if points == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no data</text>`, marginL+innerW/2, marginT+innerH/2)
	}
	// Legend, right-aligned on the title line.
	x := plotW - marginR
	items := make([]string, 0, len(p.Lines)+len(p.Refs))
	classes := make([]string, 0, cap(items))
	dashed := make([]bool, 0, cap(items))
	for _, l := range p.Lines {
		items, classes, dashed = append(items, l.Name), append(classes, l.Class), append(dashed, false)
	}
	for _, r := range p.Refs {
		items, classes, dashed = append(items, r.Name), append(classes, r.Class), append(dashed, true)
	}
	for i := len(items) - 1; i >= 0; i-- {
		w := 6*len(items[i]) + 18
		x -= w
		kind := "line"
		if dashed[i] {
			kind = "ref"
		}
		fmt.Fprintf(&b, `<g class="legend"><line class="%s c-%s" x1="%d" y1="20" x2="%d" y2="20"/><text x="%d" y="23">%s</text></g>`,
			kind, html.EscapeString(classes[i]), x, x+12, x+15, html.EscapeString(items[i]))
		x -= legendGap - 8
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: every text above is escaped
}

// linePath is the SVG path of l: a polyline, or a staircase for Step
// lines. NaN points break the line.
func linePath(l line, sx, sy func(float64) float64) string {
	var b strings.Builder
	pen := false
	for i, y := range l.Y {
		if i >= len(l.X) {
			break
		}
		if math.IsNaN(y) || math.IsInf(y, 0) {
			pen = false
			continue
		}
		x, yy := sx(l.X[i]), sy(y)
		switch {
		case !pen:
			fmt.Fprintf(&b, "M%.1f %.1f", x, yy)
		case l.Step:
			fmt.Fprintf(&b, "H%.1f V%.1f", x, yy)
		default:
			fmt.Fprintf(&b, "L%.1f %.1f", x, yy)
		}
		pen = true
	}
	return b.String()
}

// niceTicks returns 0 and round tick values up to at least ymax (at most
// about 5 ticks): steps of 1, 2 or 5 times a power of ten.
func niceTicks(ymax float64, integer bool) []float64 {
	if ymax <= 0 {
		ymax = 1
	}
	raw := ymax / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if integer && step < 1 {
		step = 1
	}
	var out []float64
	for v := 0.0; ; v += step {
		out = append(out, v)
		if v >= ymax-step*1e-9 {
			break
		}
	}
	return out
}

// timeTicks returns round times (in seconds) for an axis up to xmax.
func timeTicks(xmax float64) []float64 {
	steps := []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if xmax/s <= 6 {
			step = s
			break
		}
	}
	var out []float64
	for v := 0.0; v <= xmax+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// formatNum prints a tick or value compactly: 0, 0.5, 12, 1.5k.
func formatNum(v float64) string {
	switch {
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// formatSeconds prints an axis time: 500ms, 30s, 2m, 1h30m.
func formatSeconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 1:
		return fmt.Sprintf("%.0fms", s*1000)
	case s < 60:
		return formatNum(s) + "s"
	case s < 3600:
		m, sec := int(s)/60, int(s)%60
		if sec == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	h, m := int(s)/3600, int(s)%3600/60
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}
