package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Colours (Okabe–Ito, distinguishable with the common colour-vision
// deficiencies), each series also told apart by its line style.
const (
	colorAll       = "#0072B2" // blue: all clients
	colorBrowser   = "#D55E00" // vermillion: browser clients, would-blocks
	colorThreshold = "#009E73" // bluish green: thresholds
	colorGrid      = "#d0d0d0"
	colorText      = "#222222"
)

// Chart geometry, in SVG user units.
const (
	chartW  = 760
	chartH  = 260
	marginL = 64
	marginR = 16
	marginT = 16
	marginB = 44
	plotW   = chartW - marginL - marginR
	plotH   = chartH - marginT - marginB
	// legendH is the band above a peaks chart's plot that holds its
	// legend.
	legendH = 18
)

// markWidth is a generous estimate of the width of t in the charts' 12 px
// bold label font (measured in Chromium: about 7.2 units a character),
// for placing labels without a layout engine.
func markWidth(t string) float64 {
	return 7.6 * float64(utf8.RuneCountInString(t))
}

type svg struct{ b strings.Builder }

func (s *svg) open(id, title, desc string) {
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 %d %d" aria-labelledby="%s-t %s-d" class="chart">`,
		chartW, chartH, id, id)
	fmt.Fprintf(&s.b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, id, html.EscapeString(title), id, html.EscapeString(desc))
}

func (s *svg) close() template.HTML {
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String()) // built from escaped text only
}

func (s *svg) text(x, y float64, anchor, class, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, html.EscapeString(t))
}

// vtext writes t rotated to read upwards, centred on (x, y).
func (s *svg) vtext(x, y float64, class, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="%s" transform="rotate(-90 %.1f %.1f)">%s</text>`,
		x, y, class, x, y, html.EscapeString(t))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, dash string, width float64) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"`, x1, y1, x2, y2, stroke, width)
	if dash != "" {
		fmt.Fprintf(&s.b, ` stroke-dasharray="%s"`, dash)
	}
	s.b.WriteString(`/>`)
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceMax(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// timelineSVG draws would-blocks per hour as a bar (or, when there are
// many hours, a step area) chart over hours first…last (Unix hours).
func timelineSVG(id, title, desc string, first, last int64, values map[int64]int64) template.HTML {
	var s svg
	s.open(id, title, desc)
	n := last - first + 1
	if n < 1 {
		n = 1
	}
	var most int64
	for _, v := range values {
		most = max(most, v)
	}
	ymax := niceMax(float64(most))
	y := func(v float64) float64 { return marginT + plotH - v/ymax*plotH }
	x := func(h int64) float64 { return marginL + float64(h-first)/float64(n)*plotW }
	// Grid and y labels.
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		s.line(marginL, y(v), marginL+plotW, y(v), colorGrid, "", 1)
		s.text(marginL-6, y(v)+4, "end", "tick", strconv.FormatFloat(v, 'f', -1, 64))
	}
	// Bars or steps.
	if n <= 400 {
		bw := math.Max(float64(plotW)/float64(n), 1)
		for h := first; h <= last; h++ {
			v := values[h]
			if v == 0 {
				continue
			}
			fmt.Fprintf(&s.b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s: %d</title></rect>`,
				x(h), y(float64(v)), math.Max(bw-0.5, 0.8), y(0)-y(float64(v)), colorBrowser, hourLabel(h), v)
		}
	} else {
		var p strings.Builder
		fmt.Fprintf(&p, "M%.2f %.2f", x(first), y(0))
		for h := first; h <= last; h++ {
			v := float64(values[h])
			fmt.Fprintf(&p, "L%.2f %.2fL%.2f %.2f", x(h), y(v), x(h+1), y(v))
		}
		fmt.Fprintf(&p, "L%.2f %.2fZ", x(last+1), y(0))
		fmt.Fprintf(&s.b, `<path d="%s" fill="%s" stroke="none"/>`, p.String(), colorBrowser)
	}
	// Axes and x labels: the first and last hours and a few between.
	s.line(marginL, y(0), marginL+plotW, y(0), colorText, "", 1)
	ticks := min(n, 6)
	for i := int64(0); i < ticks; i++ {
		h := first
		if ticks > 1 {
			h = first + i*(n-1)/(ticks-1)
		}
		anchor := "middle"
		switch {
		case i == 0:
			anchor = "start"
		case i == ticks-1:
			anchor = "end"
		}
		s.line(x(h), y(0), x(h), y(0)+4, colorText, "", 1)
		s.text(x(h), y(0)+18, anchor, "tick", hourLabel(h))
	}
	s.text(marginL+plotW/2, chartH-6, "middle", "axis", "hour (UTC)")
	s.vtext(16, marginT+plotH/2, "axis", "would-block requests")
	return s.close()
}

func hourLabel(h int64) string {
	return time.Unix(h*3600, 0).UTC().Format("Jan 2 15h")
}

// A marker is a threshold drawn on a peaks chart.
type marker struct {
	at    int64
	label string
}

// peaksSVG draws, on log–log axes, how many clients reached each peak
// (clients whose peak in one window is at least x), for all clients and
// browser clients, with thresholds marked.
func peaksSVG(id, title, desc string, peaks []peakPoint, total, browsers int, marks []marker) template.HTML {
	var s svg
	s.open(id, title, desc)
	xmax := int64(1)
	for _, p := range peaks {
		xmax = max(xmax, p.peak)
	}
	for _, m := range marks {
		xmax = max(xmax, m.at)
	}
	xTop := niceMax(float64(xmax) * 1.05)
	yTop := niceMax(float64(max(total, 1)))
	// The legend has a band of its own above the plot, so that it covers
	// neither the curves nor the threshold labels.
	top, height := float64(marginT+legendH), float64(plotH-legendH)
	lx := func(v float64) float64 {
		return marginL + math.Log10(math.Max(v, 1))/math.Log10(math.Max(xTop, 10))*plotW
	}
	ly := func(v float64) float64 {
		return top + height - math.Log10(math.Max(v, 1))/math.Log10(math.Max(yTop, 10))*height
	}
	// Grid at powers of ten.
	for v := 1.0; v <= math.Max(yTop, 10); v *= 10 {
		s.line(marginL, ly(v), marginL+plotW, ly(v), colorGrid, "", 1)
		s.text(marginL-6, ly(v)+4, "end", "tick", strconv.FormatFloat(v, 'f', -1, 64))
	}
	for v := 1.0; v <= math.Max(xTop, 10); v *= 10 {
		s.line(lx(v), top, lx(v), top+height, colorGrid, "", 1)
		s.text(lx(v), top+height+18, "middle", "tick", strconv.FormatFloat(v, 'f', -1, 64))
	}
	s.line(marginL, top+height, marginL+plotW, top+height, colorText, "", 1)
	s.line(marginL, top, marginL, top+height, colorText, "", 1)
	series := func(count func(peakPoint) int, n int, color, dash string) {
		if n == 0 {
			return
		}
		var p strings.Builder
		left := n // clients with peak ≥ the current x
		fmt.Fprintf(&p, "M%.2f %.2f", lx(1), ly(float64(left)))
		for _, pt := range peaks {
			c := count(pt)
			if c == 0 {
				continue
			}
			fmt.Fprintf(&p, "L%.2f %.2f", lx(float64(pt.peak)), ly(float64(left)))
			left -= c
			if left > 0 {
				fmt.Fprintf(&p, "L%.2f %.2f", lx(float64(pt.peak)), ly(float64(left)))
			}
		}
		fmt.Fprintf(&s.b, `<path d="%s" fill="none" stroke="%s" stroke-width="2.5"`, p.String(), color)
		if dash != "" {
			fmt.Fprintf(&s.b, ` stroke-dasharray="%s"`, dash)
		}
		s.b.WriteString(`/>`)
	}
	series(func(p peakPoint) int { return p.clients }, total, colorAll, "")
	series(func(p peakPoint) int { return p.browsers }, browsers, colorBrowser, "7 4")
	for i, m := range marks {
		x := lx(float64(m.at))
		s.line(x, top, x, top+height, colorThreshold, "3 3", 2)
		// A label reads rightwards from its line unless that would run
		// past the plot's right edge; then it ends at the line.
		y := top + 12 + float64(i%4)*14
		if x+4+markWidth(m.label) <= marginL+plotW {
			s.text(x+4, y, "start", "mark", m.label)
		} else {
			s.text(x-4, y, "end", "mark", m.label)
		}
	}
	// Legend, in its band above the plot, left to right from the plot's
	// left edge.
	items := []struct{ color, dash, label string }{
		{colorAll, "", "all clients"}, {colorBrowser, "7 4", "browser clients"}, {colorThreshold, "3 3", "limit"},
	}
	s.b.WriteString(`<g class="legend">`)
	x, y := float64(marginL), float64(marginT+4)
	for _, it := range items {
		s.line(x, y-4, x+28, y-4, it.color, it.dash, 2.5)
		s.text(x+34, y, "start", "tick", it.label)
		x += 34 + markWidth(it.label) + 20
	}
	s.b.WriteString(`</g>`)
	s.text(marginL+plotW/2, chartH-6, "middle", "axis", "peak requests in one window (log scale)")
	s.vtext(16, marginT+plotH/2, "axis", "clients at or above (log)")
	return s.close()
}

type peakPoint struct {
	peak              int64
	clients, browsers int
}
