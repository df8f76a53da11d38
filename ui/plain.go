package ui

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Plain text for a terminal after the TUI, or for a pipe: a width of 0
// means "no terminal, print everything at its natural width", so logs and
// files keep every column; a terminal's width is never wrapped mid-word.

// columnGap is the space between two table columns.
const columnGap = 2

// textColumn is one column of a plainTable.
type textColumn struct {
	header string
	left   bool // left-aligned (names); numbers align right
	// giveWay orders the columns that may be left out on a narrow
	// terminal: the highest goes first; 0 is never left out.
	giveWay int
}

// plainTable is a text table whose columns give way, least needed first,
// when the terminal is narrower than the whole table, instead of letting
// the terminal wrap every row in the middle of a number.
type plainTable struct {
	columns []textColumn
	rows    [][]string
}

func (t *plainTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// columnWidths are the widths of the columns' widest cells.
func (t *plainTable) columnWidths() []int {
	widths := make([]int, len(t.columns))
	for i, c := range t.columns {
		widths[i] = ansi.StringWidth(c.header)
		for _, row := range t.rows {
			widths[i] = max(widths[i], ansi.StringWidth(row[i]))
		}
	}
	return widths
}

// width is the whole table's width, every column shown.
func (t *plainTable) width() int {
	total := -columnGap
	for _, w := range t.columnWidths() {
		total += w + columnGap
	}
	return total
}

// write prints the table within width cells (0: no limit) and returns the
// headers of the columns it left out.
func (t *plainTable) write(w io.Writer, width int) (leftOut []string, err error) {
	widths := t.columnWidths()
	kept := make([]bool, len(t.columns))
	for i := range kept {
		kept[i] = true
	}
	total := t.width()
	var dropped []int
	for width > 0 && total > width {
		drop := -1
		for i, c := range t.columns {
			if kept[i] && c.giveWay > 0 && (drop < 0 || c.giveWay > t.columns[drop].giveWay) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		kept[drop] = false
		total -= widths[drop] + columnGap
		dropped = append(dropped, drop)
	}
	// A narrow column that gave way early may fit in the room a wide one
	// left: the most needed come back first.
	for _, i := range slices.Backward(dropped) {
		if total+columnGap+widths[i] <= width {
			kept[i] = true
			total += columnGap + widths[i]
		}
	}
	for _, i := range dropped {
		if !kept[i] {
			leftOut = append(leftOut, t.columns[i].header)
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var parts []string
		for i, cell := range cells {
			if !kept[i] {
				continue
			}
			pad := strings.Repeat(" ", widths[i]-ansi.StringWidth(cell))
			if t.columns[i].left {
				parts = append(parts, cell+pad)
			} else {
				parts = append(parts, pad+cell)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, strings.Repeat(" ", columnGap)), " ") + "\n")
	}
	headers := make([]string, len(t.columns))
	for i, c := range t.columns {
		headers[i] = c.header
	}
	line(headers)
	for _, row := range t.rows {
		line(row)
	}
	_, err = io.WriteString(w, b.String())
	return leftOut, err
}

// writeProse prints a line of prose within width cells (0: no limit),
// breaking only at spaces; continuation lines are indented so that each
// note still reads as one. A word longer than the width (a long path)
// stays whole, for the terminal to fold and a mouse to copy.
func writeProse(w io.Writer, width int, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if width <= 0 || ansi.StringWidth(text) <= width {
		fmt.Fprintln(w, text)
		return
	}
	const indent = "  "
	first, rest, _ := strings.Cut(wrapWords(text, width), "\n")
	fmt.Fprintln(w, first)
	for _, l := range strings.Split(wrapWords(strings.ReplaceAll(rest, "\n", " "), width-len(indent)), "\n") {
		fmt.Fprintln(w, indent+l)
	}
}
