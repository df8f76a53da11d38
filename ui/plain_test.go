package ui

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestATableGivesWayLeastNeededFirstAndTakesBackWhatFits(t *testing.T) {
	table := plainTable{columns: []textColumn{
		{header: "arm", left: true}, {header: "wide", giveWay: 1}, {header: "n", giveWay: 2},
	}}
	table.add("greedy", strings.Repeat("x", 30), "1376")
	table.add("top-k-40", "y", "7")
	var out bytes.Buffer
	// 8 + 2 + 30 + 2 + 4 = 46 > 39: "n" goes first, yet once "wide" has gone
	// too, "n" fits again.
	leftOut, err := table.write(&out, 39)
	if err != nil || !slices.Equal(leftOut, []string{"wide"}) {
		t.Fatalf("left out %v (%v)", leftOut, err)
	}
	want := "arm          n\ngreedy    1376\ntop-k-40     7\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if leftOut, _ := table.write(&out, 0); leftOut != nil || !strings.Contains(out.String(), "wide") {
		t.Errorf("no width limit, yet %v left out:\n%s", leftOut, out.String())
	}
}
