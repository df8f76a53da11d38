package ui

import (
	"fmt"
	"runtime/debug"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// Crash is a panic caught in a front end: its value and the stack of the
// goroutine it happened on. It is a bug; the command that ran the front
// end says so, where the session is, and exits non-zero.
type Crash struct {
	Value any
	Stack []byte
}

func (c *Crash) Error() string {
	return fmt.Sprintf("internal error (a bug in tokentop): %v", c.Value)
}

// crashGuard catches a panic in a program's Update, in any command it
// returns (each runs on a goroutine of its own), or in a goroutine it
// starts, keeps the first, and makes the program quit at its next
// message: Bubble Tea then restores the terminal as on any quit, and the
// command reports the crash. Without it a panic either exited 0 (Bubble
// Tea's own catch, reported as a kill) or left a raw terminal.
type crashGuard struct {
	mu    sync.Mutex
	crash *Crash
}

// crashedMsg wakes the program after a command panicked.
type crashedMsg struct{}

// catch keeps v as the crash, with the stack of the goroutine that
// panicked; it must be called from the deferred function that recovered.
func (g *crashGuard) catch(v any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.crash == nil {
		g.crash = &Crash{Value: v, Stack: debug.Stack()}
	}
}

// caught is the crash, or nil.
func (g *crashGuard) caught() *Crash {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.crash
}

// update runs a model's update for msg under the guard: a panic quits,
// and so does any message once a crash was caught elsewhere.
func (g *crashGuard) update(self tea.Model, msg tea.Msg, update func(tea.Msg) (tea.Model, tea.Cmd)) (model tea.Model, cmd tea.Cmd) {
	if g.caught() != nil {
		return self, tea.Quit
	}
	defer func() {
		if v := recover(); v != nil {
			g.catch(v)
			model, cmd = self, tea.Quit
		}
	}()
	model, cmd = update(msg)
	return model, g.command(cmd)
}

// command guards cmd, and the commands of a batch it returns.
func (g *crashGuard) command(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() (msg tea.Msg) {
		defer func() {
			if v := recover(); v != nil {
				g.catch(v)
				msg = crashedMsg{}
			}
		}()
		msg = cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			guarded := make(tea.BatchMsg, len(batch))
			for i, c := range batch {
				guarded[i] = g.command(c)
			}
			return guarded
		}
		return msg
	}
}

// goroutine runs f on a goroutine of its own under the guard; after
// runs either way (a channel close that wakes the program).
func (g *crashGuard) goroutine(f, after func()) {
	go func() {
		defer after()
		defer func() {
			if v := recover(); v != nil {
				g.catch(v)
			}
		}()
		f()
	}()
}
