package ui

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/guptarohit/asciigraph"

	"github.com/tokentop/tokentop/ui/figure"
)

// Every color and border of the TUI lives here. Colors are plain ANSI
// indices so that Bubble Tea's color-profile downsampling (NO_COLOR,
// 16-color terminals) degrades them; nothing is told apart by color
// alone: arms also differ by name and glyph, deltas by sign.

// graphColors are asciigraph's names for the ANSI colours of figure.Arm.
var graphColors = map[string]asciigraph.AnsiColor{
	"10": asciigraph.Green, "11": asciigraph.Yellow, "12": asciigraph.Blue, "13": asciigraph.Magenta, "14": asciigraph.Cyan,
}

// The arms' marks are figure's, shared with the HTML report.
func armColor(i int) color.Color               { return lipgloss.Color(figure.Arm(i).ANSI) }
func armGraphColor(i int) asciigraph.AnsiColor { return graphColors[figure.Arm(i).ANSI] }
func armGlyph(i int) string                    { return figure.Arm(i).Glyph }

var (
	colorDim    = lipgloss.Color("8")
	colorAccent = lipgloss.Color("12")
	colorGood   = lipgloss.Color("10")
	colorBad    = lipgloss.Color("9")
	colorWarn   = lipgloss.Color("11")

	stylePanelTitle = lipgloss.NewStyle().Bold(true)
	styleTitle      = lipgloss.NewStyle().Bold(true).Foreground(colorAccent)
	styleDim        = lipgloss.NewStyle().Foreground(colorDim)
	styleBold       = lipgloss.NewStyle().Bold(true)
	styleGood       = lipgloss.NewStyle().Foreground(colorGood)
	styleBad        = lipgloss.NewStyle().Foreground(colorBad)
	styleWarn       = lipgloss.NewStyle().Foreground(colorWarn)
	styleSelected   = lipgloss.NewStyle().Bold(true).Foreground(colorAccent)
	styleConfirm    = lipgloss.NewStyle().Bold(true).Foreground(colorWarn)
)

func armStyle(i int) lipgloss.Style { return lipgloss.NewStyle().Foreground(armColor(i)) }

// paint is a style reduced to its escape codes, for glyphs drawn many
// times a frame: lipgloss's Render does layout work that a run of glyphs
// does not need, and was most of a large frame's cost.
type paint struct{ prefix, suffix string }

func newPaint(s lipgloss.Style) paint {
	r := s.Render("X")
	i := strings.Index(r, "X")
	return paint{r[:i], r[i+1:]}
}

func (p paint) apply(s string) string { return p.prefix + s + p.suffix }

var (
	paintPlain = paint{}
	paintBold  = newPaint(styleBold)
	paintDim   = newPaint(styleDim)

	borderPaint        = newPaint(lipgloss.NewStyle().Foreground(colorDim))
	borderPaintFocused = newPaint(lipgloss.NewStyle().Foreground(colorAccent))
	armPaints          = func() []paint {
		p := make([]paint, figure.Arms())
		for i := range p {
			p[i] = newPaint(armStyle(i))
		}
		return p
	}()
)

func armPaint(i int) paint { return armPaints[i%len(armPaints)] }

var armBarStyle = lipgloss.NewStyle().Foreground(colorAccent)
