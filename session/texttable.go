package session

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// TextTable is a table printed in columns two spaces apart, its header
// first. Where Width is set and the table is wider, the columns after the
// first Key are dealt into blocks that fit, one under another, each
// repeating the key columns: a terminal's lines are never cut or folded
// mid-row.
type TextTable struct {
	Rows [][]string
	Key  int
	// Repeat, where set, are the columns the blocks after the first
	// repeat in place of the Key columns: a short id where the first
	// block already names each row in full.
	Repeat     []int
	Width      int // 0: one block, however wide
	AlignRight bool
}

const textTableGap = 2

// Write prints the table's blocks, a blank line between two.
func (t TextTable) Write(w io.Writer) error {
	for i, block := range t.blocks() {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		var flags uint
		if t.AlignRight {
			flags = tabwriter.AlignRight
		}
		tw := tabwriter.NewWriter(w, 0, 0, textTableGap, ' ', flags)
		for _, row := range t.Rows {
			var cells []string
			for _, c := range block {
				cells = append(cells, cellOf(row, c))
			}
			line := strings.Join(cells, "\t")
			if t.AlignRight {
				line += "\t" // the last column is a cell too, aligned as the others
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// blocks are the column indexes of each block: the key columns, then as
// many of the rest as fit (one at least).
func (t TextTable) blocks() [][]int {
	columns := 0
	for _, row := range t.Rows {
		columns = max(columns, len(row))
	}
	widths := make([]int, columns)
	for _, row := range t.Rows {
		for c, cell := range row {
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	key := min(t.Key, columns)
	var keys []int
	for c := range key {
		keys = append(keys, c)
	}
	repeat := keys
	if t.Repeat != nil {
		repeat = t.Repeat
	}
	widthOf := func(cols []int) int {
		total := 0
		for _, c := range cols {
			total += widths[c] + textTableGap
		}
		return total
	}
	var out [][]int
	block, used, fixed := append([]int(nil), keys...), widthOf(keys), len(keys)
	for c := key; c < columns; c++ {
		need := widths[c] + textTableGap
		if t.Width > 0 && len(block) > fixed && used+need > t.Width {
			out = append(out, block)
			block, used, fixed = append([]int(nil), repeat...), widthOf(repeat), len(repeat)
		}
		block, used = append(block, c), used+need
	}
	return append(out, block)
}

func cellOf(row []string, c int) string {
	if c < len(row) {
		return row[c]
	}
	return ""
}

// WrapText breaks each line of text longer than width at spaces, its
// continuation lines indented two spaces, so that prose printed to a
// terminal is not folded mid-word. A word longer than a line stays whole.
// width 0 leaves text as it is.
func WrapText(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		lines[i] = wrapLine(line, width)
	}
	return strings.Join(lines, "\n")
}

func wrapLine(line string, width int) string {
	if utf8.RuneCountInString(line) <= width {
		return line
	}
	const indent = "  "
	var b strings.Builder
	used := 0
	for i, word := range strings.Split(line, " ") {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case used+1+n > width && used > len(indent):
			b.WriteString("\n" + indent)
			used = len(indent)
		default:
			b.WriteByte(' ')
			used++
		}
		b.WriteString(word)
		used += n
	}
	return b.String()
}

// wrapping is a writer of prose that wraps it to width (WrapText); each
// write is whole lines.
type wrapping struct {
	w     io.Writer
	width int
}

func (p wrapping) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, WrapText(string(b), p.width)); err != nil {
		return 0, err
	}
	return len(b), nil
}
