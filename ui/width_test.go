package ui

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// widthPieces are what frames hold and what they must not be fooled by:
// styled text, box drawing and blocks, and then combining marks, wide and
// emoji runes, variation selectors, zero-width joiners, other escape
// sequences and control bytes.
var widthPieces = []string{"a", "Z", " ", "~", "\x1b[1;38;5;208m", "\x1b[0m", "\x1b[m", "─", "│", "╭", "█", "▁", "±", "—", "…", "✓", "✗", "⚠", "·", "×", "é",
	"\u0301", "e\u0301", "世", "界", "🙂", "\ufe0f", "\u200d", "👩\u200d💻", "🇫🇷", "\x1b]8;;http://x\x07", "\x1b]8;;\x1b\\", "\x1b[", "\x1b", "\t", "\n", "\x7f", "\xff", "ก\u0e33", "\u0915\u094d\u0937", "ᄀ", "\u1160"}

func TestCellWidthIsAnsiStringWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(widthPieces[rng.IntN(len(widthPieces))])
		}
		if s := b.String(); cellWidth(s) != ansi.StringWidth(s) {
			t.Fatalf("%q: cellWidth %d, ansi.StringWidth %d", s, cellWidth(s), ansi.StringWidth(s))
		}
	}
	// Every rune the table trusts, beside each piece.
	for r := rune(0); r < aloneBelow; r++ {
		if !alone(r) {
			continue
		}
		for _, p := range widthPieces {
			for _, s := range []string{string(r) + p, p + string(r)} {
				if cellWidth(s) != ansi.StringWidth(s) {
					t.Fatalf("%q: cellWidth %d, ansi.StringWidth %d", s, cellWidth(s), ansi.StringWidth(s))
				}
			}
		}
	}
}

func FuzzCellWidth(f *testing.F) {
	for _, p := range widthPieces {
		f.Add(p + "x" + p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if cellWidth(s) != ansi.StringWidth(s) {
			t.Fatalf("%q: cellWidth %d, ansi.StringWidth %d", s, cellWidth(s), ansi.StringWidth(s))
		}
	})
}

func BenchmarkCellWidth(b *testing.B) {
	line := "\x1b[38;5;208m│\x1b[0mgreedy      1,262  0.21  ±1.9%  47.8 ms [45.6, 48.9]  ▁▂▃▅▇█  ✓ faster\x1b[38;5;208m│\x1b[0m"
	b.Run("cellWidth", func(b *testing.B) {
		for b.Loop() {
			cellWidth(line)
		}
	})
	b.Run("ansi.StringWidth", func(b *testing.B) {
		for b.Loop() {
			ansi.StringWidth(line)
		}
	})
}
