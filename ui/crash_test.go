package ui

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// panicky is a model that panics where it is told to: in Update, in a
// command of a batch, or in a goroutine it starts.
type panicky struct {
	guard crashGuard
	where string
	done  chan struct{}
}

type goMsg struct{}

func (p *panicky) Init() tea.Cmd {
	return p.guard.command(func() tea.Msg { return goMsg{} })
}

func (p *panicky) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return p.guard.update(p, msg, func(msg tea.Msg) (tea.Model, tea.Cmd) {
		if _, ok := msg.(goMsg); !ok {
			return p, nil
		}
		switch p.where {
		case "update":
			var m map[string]int
			m["boom"]++ // a nil map: the kind of slip a view makes
		case "command":
			return p, tea.Batch(func() tea.Msg { return nil }, func() tea.Msg { panic("boom in a command") })
		case "goroutine":
			p.guard.goroutine(func() { panic("boom in a goroutine") }, func() { close(p.done) })
			// As the run's end wakes the App: a message once it is over.
			return p, func() tea.Msg { <-p.done; return runEndedMsg{} }
		}
		return p, nil
	})
}

func (p *panicky) View() tea.View { return tea.NewView("") }

// TestAPanicQuitsTheProgramCleanlyAndIsKept: wherever a front end
// panics, the real program quits as on any quit (so Bubble Tea restores
// the terminal), without reporting a kill, and the crash is kept with
// the stack that shows where it happened, for the command to report.
func TestAPanicQuitsTheProgramCleanlyAndIsKept(t *testing.T) {
	for _, where := range []string{"update", "command", "goroutine"} {
		model := &panicky{where: where, done: make(chan struct{})}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out bytes.Buffer
		_, err := tea.NewProgram(model, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(&out), tea.WithoutSignals()).Run()
		cancel()
		crash := model.guard.caught()
		if err != nil || crash == nil {
			t.Errorf("%s: program error %v, crash %v", where, err, crash)
			continue
		}
		if !strings.Contains(string(crash.Stack), "crash_test.go") || !strings.Contains(crash.Error(), "internal error (a bug in tokentop)") {
			t.Errorf("%s: %v\n%s", where, crash, crash.Stack)
		}
	}
}

// TestTheAppCatchesAPanicInItsScreens: a screen that panics while it is
// drawn (here a done view with no data) ends the program with the crash
// kept, not a half-drawn terminal.
func TestTheAppCatchesAPanicInItsScreens(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	a.screen, a.done = screenDone, &doneView{}
	_, cmd := a.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if cmd == nil || a.Crash() == nil {
		t.Fatalf("crash %v", a.Crash())
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Errorf("the crash answered %T, want a quit", cmd())
	}
	// Whatever comes next quits too.
	if _, cmd := a.Update(tickMsg{}); cmd == nil {
		t.Error("a message after the crash did not quit")
	}
}
