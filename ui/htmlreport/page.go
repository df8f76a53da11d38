package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"

	"codeberg.org/go-fonts/liberation/liberationserifregular"

	"github.com/tokentop/tokentop/session"
)

//go:embed page.html.tmpl
var pageSource string

var page = template.Must(template.New("report").Parse(pageSource))

// chartFontFamily is the font gonum/plot lays the charts out in (its
// default), as its SVG writer names it.
const chartFontFamily = "Liberation Serif"

// chartFontFace carries that font inside the page, once for every chart:
// gonum measures each label in it, and a browser without it put a wider
// font in its place, so legend labels ran into their lines.
var chartFontFace = template.CSS(`@font-face { font-family: "` + chartFontFamily + `"; src: url(data:font/ttf;base64,` +
	base64.StdEncoding.EncodeToString(liberationserifregular.TTF) + `) format("truetype"); }`)

// WriteHTML writes the report as one page with everything inline: the
// charts as SVG elements, the styles and the charts' font in the head, no
// script, no font or file from anywhere else, so that it opens offline
// and survives being mailed.
func (r *Report) WriteHTML(w io.Writer) error {
	type chartView struct {
		Chart
		SVG template.HTML
	}
	view := struct {
		*Report
		Inline    []chartView
		ChartFont template.CSS
	}{Report: r}
	if len(r.Charts) > 0 {
		view.ChartFont = chartFontFace
	}
	for _, c := range r.Charts {
		svg, err := svgOf(c.plot)
		if err != nil {
			return fmt.Errorf("drawing %s: %w", c.Name, err)
		}
		// gonum/plot's own output, built from numbers and our labels,
		// which its SVG writer escapes.
		view.Inline = append(view.Inline, chartView{Chart: c, SVG: template.HTML(svg)})
	}
	return page.Execute(w, view)
}

// Save writes the page to path whole or not at all, readable by others:
// it is made to be shared.
func (r *Report) Save(path string) error {
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		return err
	}
	return session.WriteAtomic(path, page.Bytes())
}
