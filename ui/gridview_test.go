package ui

import (
	"context"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/runner/grid"
)

// The grid screen lists every cell with its state as the run's events
// come in, says why a cell failed, and keeps the running cell's
// dashboard one key away; it fits 80×24 and 200×60.
func TestGridScreenFillsInAsCellsRun(t *testing.T) {
	m := testGrid(t, "[axes]\nthreads = [1, 2]\nmax_tokens = [8, 16]\n")
	events := syntheticRun([]string{"greedy"}, 0, 5)
	msgs := gridEventsMsg{{Slot: grid.Slot{Cell: 0, Repetition: 1}, Cell: &m.Cells[0], Failed: errString("builtin backend: no such model")}}
	for _, ev := range events {
		msgs = append(msgs, grid.Event{Slot: grid.Slot{Cell: 1, Repetition: 1}, Cell: &m.Cells[1], Left: 5, Event: ev})
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		app := NewGrid(context.Background(), m, 4, nil)
		app.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		app.Update(msgs)
		if strings.Contains(ansi.Strip(app.frame), "· running c02") {
			t.Errorf("%dx%d: events drawn before the tick", size[0], size[1])
		}
		app.Update(tickMsg{})
		screen := ansi.Strip(app.frame)
		failed := "failed: builtin backend: no such model"
		if size[0] == 80 {
			failed = "failed: builtin" // the rest is cut at the edge; the comparison's caveats have it whole
		}
		for _, want := range []string{"grid g · running c02", "c01", failed, "c02", "running", "c03", "waiting"} {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: %q missing:\n%s", size[0], size[1], want, screen)
			}
		}
		checkFits(t, app.frame, size[0], size[1])
		// The ranking, read off Update, fills in its cell's row.
		app.Update(gridRankedMsg{cmp: &grid.Comparison{Rows: []grid.Row{{Cell: "c04", Rank: 2, N: 7, TokensPerS: 900,
			E2E: metrics.Estimate{Value: 12.5, CI: metrics.CI{Lo: 12.1, Hi: 13.0}}}},
			Means: []grid.AxisMean{{Axis: "threads", Value: "1", Rows: 2, E2E: 15, E2ERatioVsFaster: 1.5}, {Axis: "threads", Value: "2", Rows: 2, E2E: 10, E2ERatioVsFaster: 1}}}})
		if screen := ansi.Strip(app.frame); !regexp.MustCompile(`threads +1 +2 +15\.00 +1\.50×`).MatchString(screen) {
			t.Errorf("%dx%d: the axis means missing from the rows the cells leave:\n%s", size[0], size[1], screen)
		}
		if screen := ansi.Strip(app.frame); !regexp.MustCompile(`2 +c04 .* 12\.50`).MatchString(screen) {
			t.Errorf("%dx%d: c04's rank and median missing:\n%s", size[0], size[1], screen)
		}
		app.Update(press("tab"))
		if dash := ansi.Strip(app.frame); !strings.Contains(dash, "greedy") || !strings.Contains(dash, "5/5 timed") {
			t.Errorf("%dx%d: tab shows no dashboard of the running cell:\n%s", size[0], size[1], dash)
		}
		checkFits(t, app.frame, size[0], size[1])
	}
}

// testGrid expands a grid of stories260K on the built-in engine whose
// file goes on with rest (its axes, and any other keys).
func testGrid(t *testing.T, rest string) *grid.Matrix {
	t.Helper()
	g, err := profiles.ParseGrid("g.toml", []byte("name = \"g\"\nprofile = \"quick\"\nbackend = \"builtin\"\nmodel = \"stories260K\"\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := grid.Expand(g, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride, Power: telemetry.PowerOff})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type errString string

func (e errString) Error() string { return string(e) }

// The rows the table and the axis means leave show each ranked cell's
// median and interval on one log axis, in rank order, with its rank in
// words beside the colour; on a screen too short for all of them, none.
func TestGridScreenDrawsTheCellsIntervals(t *testing.T) {
	m := testGrid(t, "[axes]\nthreads = [1, 2]\n")
	ranked := gridRankedMsg{cmp: &grid.Comparison{Rows: []grid.Row{
		{Cell: "c01", Rank: 1, N: 9, E2E: metrics.Estimate{Value: 1, CI: metrics.CI{Lo: 0.9, Hi: 1.2}}},
		{Cell: "c02", Rank: 2, N: 9, E2E: metrics.Estimate{Value: 100, CI: metrics.CI{Lo: 80, Hi: 110}}},
	}}}
	for _, c := range []struct {
		w, h  int
		chart bool
	}{{200, 60, true}, {80, 24, true}, {80, 9, false}} {
		app := NewGrid(context.Background(), m, 2, nil)
		app.Update(tea.WindowSizeMsg{Width: c.w, Height: c.h})
		app.Update(ranked)
		screen := ansi.Strip(app.frame)
		c01 := regexp.MustCompile(`c01 #1 +├─*●─*┤ {20,}`)
		c02 := regexp.MustCompile(`c02 #2 {20,}├─*●─*┤`)
		axis := regexp.MustCompile(`0\.9000 +10\.00 +110\.0`)
		if got := c01.MatchString(screen) && c02.MatchString(screen) && axis.MatchString(screen); got != c.chart {
			t.Errorf("%dx%d: chart drawn %v, want %v:\n%s", c.w, c.h, got, c.chart, screen)
		}
		checkFits(t, app.frame, c.w, c.h)
	}
}

// Axis means that do not all fit give way whole axes at a time, and a
// line names the ones left out instead of dropping them silently.
func TestGridScreenNamesTheAxesItLeavesOut(t *testing.T) {
	m := testGrid(t, "[axes]\nthreads = [1, 2]\nmax_tokens = [8, 16]\n")
	app := NewGrid(context.Background(), m, 4, nil)
	app.cmp = &grid.Comparison{Means: []grid.AxisMean{
		{Axis: "threads", Value: "1", Rows: 2, E2E: 15, E2ERatioVsFaster: 1.5}, {Axis: "threads", Value: "2", Rows: 2, E2E: 10, E2ERatioVsFaster: 1},
		{Axis: "max_tokens", Value: "8", Rows: 2, E2E: 8, E2ERatioVsFaster: 1}, {Axis: "max_tokens", Value: "16", Rows: 2, E2E: 16, E2ERatioVsFaster: 2},
	}}
	for _, c := range []struct {
		h         int
		want, not []string
	}{
		{5, []string{"threads", "max_tokens"}, []string{"more ax"}},
		{4, []string{"threads", "+1 more axis (max_tokens): tokentop compare"}, []string{"16.00"}},
		{3, nil, []string{"threads"}},
	} {
		got := ansi.Strip(strings.Join(app.axisMeans(200, c.h), "\n"))
		if n := len(app.axisMeans(200, c.h)); n > c.h {
			t.Errorf("h=%d: %d lines", c.h, n)
		}
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("h=%d: %q missing:\n%s", c.h, want, got)
			}
		}
		for _, not := range c.not {
			if strings.Contains(got, not) {
				t.Errorf("h=%d: %q there:\n%s", c.h, not, got)
			}
		}
	}
}

// A resumed grid's header counts this run's sessions and those that ran
// before, so a finished grid opened again does not read "0/0".
func TestGridHeaderCountsSessionsFromBefore(t *testing.T) {
	m := testGrid(t, "repetitions = 2\n[axes]\nthreads = [1, 2]\n")
	for pending, want := range map[int]string{4: "0/4 sessions · ", 1: "0/1 sessions (+3 done before) · ", 0: "0/0 sessions (+4 done before) · "} {
		app := NewGrid(context.Background(), m, pending, nil)
		app.begin = app.now()
		if got := ansi.Strip(app.header(200)); !strings.Contains(got, want) {
			t.Errorf("%d pending: header %q, want %q in it", pending, got, want)
		}
	}
}
