package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"

	"github.com/tokentop/tokentop/session"
)

//go:embed page.html.tmpl
var pageSource string

var page = template.Must(template.New("report").Parse(pageSource))

// WriteHTML writes the report as one page with everything inline: the
// charts as SVG elements and the styles in the head, no script, no font
// or file from anywhere else, so that it opens offline and survives being
// mailed.
func (r *Report) WriteHTML(w io.Writer) error {
	type chartView struct {
		Chart
		SVG template.HTML
	}
	view := struct {
		*Report
		Inline []chartView
	}{Report: r}
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
