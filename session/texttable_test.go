package session

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// A table wider than its width is dealt into blocks that each fit, every
// block repeating the key columns, every other cell printed once, in order.
func TestTextTableFitsItsWidthInBlocks(t *testing.T) {
	rows := [][]string{{"metric", "stat"}}
	for c := range 7 {
		rows[0] = append(rows[0], fmt.Sprintf("A#arm-number-%d", c))
	}
	for r := range 5 {
		row := []string{"ttft_ms", fmt.Sprintf("p%d", 90+r)}
		for c := range 7 {
			row = append(row, fmt.Sprintf("%d.%d (+%d.0%%)", r, c, c))
		}
		rows = append(rows, row)
	}
	for _, width := range []int{0, 40, 60, 80, 200} {
		var b strings.Builder
		if err := (TextTable{Rows: rows, Key: 2, Width: width, AlignRight: true}).Write(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		blocks := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
		if width == 0 || width == 200 {
			if len(blocks) != 1 {
				t.Errorf("width %d: %d blocks, want 1:\n%s", width, len(blocks), out)
			}
		} else if len(blocks) < 2 {
			t.Errorf("width %d: one block:\n%s", width, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if width > 0 && utf8.RuneCountInString(line) > width {
				t.Errorf("width %d: a line of %d: %q", width, utf8.RuneCountInString(line), line)
			}
		}
		for _, block := range blocks {
			if lines := strings.Split(block, "\n"); len(lines) != len(rows) || !strings.Contains(lines[0], "metric") || !strings.Contains(lines[1], "ttft_ms") {
				t.Errorf("width %d: a block without its key columns:\n%s", width, block)
			}
		}
		// Every header cell once, in order.
		last := -1
		for c := range 7 {
			name := fmt.Sprintf("arm-number-%d", c)
			at := strings.Index(strings.ReplaceAll(out, "\n", " "), name)
			if strings.Count(out, name) != 1 || at < last {
				t.Errorf("width %d: %s printed %d times, or out of order:\n%s", width, name, strings.Count(out, name), out)
			}
			last = at
		}
	}
}

// Prose wraps at spaces within its width, continuation lines indented,
// every word kept in order; a word longer than the line stays whole.
func TestWrapTextKeepsEveryWord(t *testing.T) {
	text := "B#greedy vs A#greedy: the sessions were set up differently (max_tokens 128 vs 64; prompts (3 vs 1, not the same text)), so the verdicts below measure that as well\nshort line\n" +
		strings.Repeat("x", 50) + " tail"
	for _, width := range []int{0, 20, 40, 80} {
		got := WrapText(text, width)
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(text), " ") {
			t.Errorf("width %d: words changed:\n%s", width, got)
		}
		for _, line := range strings.Split(got, "\n") {
			if width > 0 && utf8.RuneCountInString(line) > width && !strings.Contains(line, strings.Repeat("x", 50)) {
				t.Errorf("width %d: %q is wider", width, line)
			}
		}
		if width > 0 && !strings.Contains(got, "\n  ") {
			t.Errorf("width %d: no indented continuation:\n%s", width, got)
		}
	}
	if WrapText(text, 0) != text {
		t.Error("width 0 must leave the text alone")
	}
}

// With Repeat, the first block names the rows in full and later blocks
// repeat only the short id: no block carries the long names again.
func TestTextTableRepeatsOnlyTheIdAfterTheFirstBlock(t *testing.T) {
	rows := [][]string{{"rank", "cell", "model · dtype · threads", "e2e median [95% CI] ms", "TTFT p50 [95% CI]", "TPOT p50 [95% CI]"}}
	for r := range 4 {
		rows = append(rows, []string{fmt.Sprint(r + 1), fmt.Sprintf("c%02d", r), "stories15M-synthetic · q8_0 · 2 threads", "206.1 [195.5, 242.8]", "28.93 [24.37, 36.87]", "0.1145 [0.1120, 0.1195]"})
	}
	var b strings.Builder
	if err := (TextTable{Rows: rows, Key: 3, Repeat: []int{1}, Width: 80}).Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	blocks := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(blocks) < 2 || strings.Count(out, "stories15M-synthetic") != 4 {
		t.Fatalf("want the names once and more than one block:\n%s", out)
	}
	for i, block := range blocks[1:] {
		lines := strings.Split(block, "\n")
		if !strings.HasPrefix(lines[0], "cell ") || !strings.HasPrefix(lines[1], "c00 ") {
			t.Errorf("block %d does not begin with the cell id:\n%s", i+2, block)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("a line of %d: %q", utf8.RuneCountInString(line), line)
		}
		// An interval is never split across lines.
		if strings.Count(line, "[") != strings.Count(line, "]") {
			t.Errorf("an interval broken: %q", line)
		}
	}
}
