package ui

import (
	"bytes"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/tokentop/tokentop/session"
)

// Golden screens: a real Bubble Tea program (teatest) at a fixed size and
// color profile, fed fixed events with the clock pinned. Regenerate with
// go test ./ui -run Golden -update, and read the diff before committing.

func finalScreen(t testing.TB, m tea.Model, w, h int, msgs ...tea.Msg) string {
	t.Helper()
	return finalScreenAfter(t, m, w, h, "", msgs...)
}

// finalScreenAfter waits, before quitting, until the output shows text
// that work in the background produces.
func finalScreenAfter(t testing.TB, m tea.Model, w, h int, text string, msgs ...tea.Msg) string {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	for _, msg := range msgs {
		tm.Send(msg)
	}
	if text != "" {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
			teatest.WithDuration(20*time.Second))
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return ansi.Strip(tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).View().Content)
}

func midRun(t *testing.T) (*testRun, []tea.Msg) {
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.now = testStart.Add(3*time.Second + 400*time.Millisecond)
	events := syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 30)
	return tr, []tea.Msg{eventsMsg(events[:len(events)-30]), tickMsg{}}
}

func TestGoldenDashboard80x24(t *testing.T) {
	tr, msgs := midRun(t)
	golden.RequireEqual(t, finalScreen(t, tr.app, 80, 24, msgs...))
}

func TestGoldenDashboard200x60(t *testing.T) {
	tr, msgs := midRun(t)
	golden.RequireEqual(t, finalScreen(t, tr.app, 200, 60, msgs...))
}

func TestGoldenDone80x24(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 30)
	close(tr.app.run.done)
	golden.RequireEqual(t, finalScreen(t, tr.app, 80, 24, eventsMsg(append(events, finished(events, session.StatusComplete))), runEndedMsg{}))
}

func TestGoldenCompare80x24(t *testing.T) {
	dir := t.TempDir()
	var refs []session.Ref
	var sessions []*session.Session
	for i, id := range []string{"A", "B"} {
		path := writeSession(t, dir, id, float64(i)*4)
		s, err := session.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		refs, sessions = append(refs, session.Ref{Path: path}), append(sessions, s)
	}
	now := testStart
	golden.RequireEqual(t, finalScreenAfter(t, NewCompare(t.Context(), testConfig(&now), refs, sessions), 80, 24, "A#greedy:"))
}

// TestWrapKeepsNumbersWhole: ansi.Wrap breaks after any hyphen, which cut
// "-16.7%" into "[-" and "16.7%"; wrap breaks at spaces only.
func TestWrapKeepsNumbersWhole(t *testing.T) {
	lines := wrap("top-k-40 vs greedy: median TTFT +0.0% [-16.7%, +33.3%]", 38)
	if len(lines) != 2 || lines[0] != "top-k-40 vs greedy: median TTFT +0.0%" || lines[1] != "[-16.7%, +33.3%]" {
		t.Errorf("%q", lines)
	}
}
