package ui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// fit pads or cuts a (possibly styled) line to exactly w cells, so that
// no panel ever wraps or pushes its neighbour.
func fit(line string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(line) > w {
		line = ansi.Truncate(line, w, "…")
	}
	if pad := w - lipgloss.Width(line); pad > 0 {
		line += strings.Repeat(" ", pad)
	}
	return line
}

// fitLines makes content exactly h lines of exactly w cells.
func fitLines(content string, w, h int) []string {
	lines := strings.Split(content, "\n")
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return out
}

// box draws a rounded panel of exactly w×h cells with the title set in
// its top border; content is fitted to the inside.
func box(title, content string, w, h int, focused bool) string {
	if w < 4 || h < 2 {
		return strings.Join(fitLines("", w, h), "\n")
	}
	border := stylePanel
	if focused {
		border = stylePanelFocused
	}
	b := lipgloss.RoundedBorder()
	edge := border.UnsetBorderStyle().Foreground(border.GetBorderTopForeground())
	label := ""
	if title != "" {
		label = " " + stylePanelTitle.Render(title) + " "
		if lipgloss.Width(label) > w-4 {
			label = fit(label, w-4)
		}
	}
	top := edge.Render(b.TopLeft+b.Top) + label + edge.Render(strings.Repeat(b.Top, max(0, w-3-lipgloss.Width(label)))+b.TopRight)
	lines := []string{top}
	for _, line := range fitLines(content, w-2, h-2) {
		lines = append(lines, edge.Render(b.Left)+line+edge.Render(b.Right))
	}
	lines = append(lines, edge.Render(b.BottomLeft+strings.Repeat(b.Bottom, w-2)+b.BottomRight))
	return strings.Join(lines, "\n")
}
