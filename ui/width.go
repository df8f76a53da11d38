package ui

import (
	"sync"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// cellWidth is ansi.StringWidth of one line, without its grapheme
// segmentation where none is needed: measuring was half of a frame's
// cost, and frames are made of ASCII, SGR sequences and a few symbols
// (box drawing, blocks, ±, —, …) that never join a neighbour into one
// grapheme. Any other byte or sequence is left to ansi.StringWidth.
func cellWidth(s string) int {
	w := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			w++
			i++
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameters, intermediates, one final byte.
			j := i + 2
			for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
				j++
			}
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			if j >= len(s) || s[j] < 0x40 || s[j] > 0x7e {
				return ansi.StringWidth(s)
			}
			i = j + 1
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !alone(r) {
				return ansi.StringWidth(s)
			}
			w++
			i += size
		default: // a control byte, or another escape sequence
			return ansi.StringWidth(s)
		}
	}
	return w
}

// aloneBelow bounds the runes alone looks up: Latin-1 to the end of the
// symbol blocks (arrows, mathematical operators, box drawing, blocks,
// geometric shapes, dingbats).
const aloneBelow = 0x2c00

// aloneRunes marks the runes below aloneBelow that are one cell wide and
// their own grapheme whatever stands beside them, by asking ansi itself:
// a rune that joined the one before (a combining mark) or after
// (a prepended one), or its own twin (a regional indicator), is left out.
var aloneRunes = sync.OnceValue(func() []bool {
	table := make([]bool, aloneBelow)
	for r := rune(0xa0); r < aloneBelow; r++ {
		s := string(r)
		table[r] = utf8.ValidString(s) && ansi.StringWidth(s) == 1 && ansi.StringWidth("a"+s) == 2 &&
			ansi.StringWidth(s+"a") == 2 && ansi.StringWidth(s+s) == 2
	}
	return table
})

// alone reports whether r is one cell and its own grapheme (aloneRunes).
func alone(r rune) bool { return r < aloneBelow && aloneRunes()[r] }
