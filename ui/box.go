package ui

import (
	"path/filepath"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// nonBreakingHyphen stands in for "-" while wrapping: ansi.Wrap always
// breaks after a hyphen, which split "-35.9%" and "top-k-40" across lines.
const nonBreakingHyphen = "\u2011"

// wrap breaks text into lines of at most w cells at spaces only, so that
// a negative number or a hyphenated arm name stays whole; a word longer
// than w is cut, so that a panel never overflows.
func wrap(text string, w int) []string {
	return strings.Split(keepHyphens(text, func(s string) string { return ansi.Wrap(s, w, " ") }), "\n")
}

// withPath ends lines with label and path on one line, on the last line
// where a readable part of the path fits, else a line of its own; a path
// too long for it keeps its file name and loses leading folders (the full
// path is printed when tokentop exits, and is in the report).
func withPath(lines []string, label, path string, w int) []string {
	const readable = 24
	last := lines[len(lines)-1]
	if room := w - cellWidth(last) - cellWidth(label); room >= min(readable, cellWidth(path)) {
		lines[len(lines)-1] = last + label + elidePath(path, room)
		return lines
	}
	label = strings.TrimLeft(label, " ·")
	return append(lines, label+elidePath(path, w-cellWidth(label)))
}

// elidePath fits a path into w cells by dropping leading folders for "…",
// keeping the file name and as many of its folders as fit.
func elidePath(path string, w int) string {
	if cellWidth(path) <= w {
		return path
	}
	parts := strings.Split(filepath.ToSlash(path), "/")
	kept := parts[len(parts)-1]
	for i := len(parts) - 2; i >= 0; i-- {
		next := parts[i] + "/" + kept
		if cellWidth("…/"+next) > w {
			break
		}
		kept = next
	}
	return fit(filepath.FromSlash("…/"+kept), w)
}

// wrapWords breaks text at spaces only, into lines of at most w cells
// unless one word is longer: for plain output, where a long path must stay
// whole for the terminal to fold and a mouse to copy.
func wrapWords(text string, w int) string {
	return keepHyphens(text, func(s string) string { return ansi.Wordwrap(s, w, "") })
}

// keepHyphens runs a wrapper with every "-" made non-breaking.
func keepHyphens(text string, wrapper func(string) string) string {
	return strings.ReplaceAll(wrapper(strings.ReplaceAll(text, "-", nonBreakingHyphen)), nonBreakingHyphen, "-")
}

// fit pads or cuts a (possibly styled) line to exactly w cells, so that
// no panel ever wraps or pushes its neighbour.
func fit(line string, w int) string {
	if w <= 0 {
		return ""
	}
	// Measuring is most of a frame's cost: measure once, again only after
	// cutting.
	width := cellWidth(line)
	if width > w {
		line = ansi.Truncate(line, w, "…")
		width = cellWidth(line)
	}
	if width < w {
		line += strings.Repeat(" ", w-width)
	}
	return line
}

// fitLines makes content exactly h lines of exactly w cells.
func fitLines(content string, w, h int) []string {
	lines := strings.Split(content, "\n")
	out := make([]string, max(0, h))
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return out
}

// sideBySide joins two panels of the same height line by line. Panels
// are exact rectangles, so unlike lipgloss.JoinHorizontal it need not
// measure them again; measuring is most of a frame's cost.
func sideBySide(left, right string) string {
	l, r := strings.Split(left, "\n"), strings.Split(right, "\n")
	for i := range l {
		if i < len(r) {
			l[i] += r[i]
		}
	}
	return strings.Join(l, "\n")
}

// box draws a rounded panel of exactly w×h cells with the title set in
// its top border; content is fitted to the inside.
// focusTitle marks the focused box's title with ▸, so focus shows without
// colour too.
func focusTitle(title string, focused bool) string {
	if focused {
		return "▸ " + title
	}
	return title
}

func box(title, content string, w, h int, focused bool) string {
	if w < 4 || h < 2 {
		return strings.Join(fitLines("", w, h), "\n")
	}
	b := lipgloss.RoundedBorder()
	edge := borderPaint
	if focused {
		edge = borderPaintFocused
	}
	label := ""
	if title != "" {
		label = " " + stylePanelTitle.Render(title) + " "
		if cellWidth(label) > w-4 {
			label = fit(label, w-4)
		}
	}
	top := edge.apply(b.TopLeft+b.Top) + label + edge.apply(strings.Repeat(b.Top, max(0, w-3-cellWidth(label)))+b.TopRight)
	lines := []string{top}
	for _, line := range fitLines(content, w-2, h-2) {
		lines = append(lines, edge.apply(b.Left)+line+edge.apply(b.Right))
	}
	lines = append(lines, edge.apply(b.BottomLeft+strings.Repeat(b.Bottom, w-2)+b.BottomRight))
	return strings.Join(lines, "\n")
}
