package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// frameInterval paces redraws during a run: at most 10 frames a second
// however fast trials arrive.
const frameInterval = 100 * time.Millisecond

type screen int

const (
	screenPicker screen = iota
	screenRun
	screenDone
	screenCompare
)

// Config is what the TUI starts from.
type Config struct {
	Profiles []*profiles.Profile
	Problems []error // user profiles that could not be read
	// Base holds the command line's choices; the picker fills in the
	// profile's plan, backend, model and trial counts.
	Base runner.Options
	// Now is the clock for elapsed and ETA (tests pin it).
	Now func() time.Time
}

// App is the root model: it routes messages to the screen in front and
// owns the run in progress, so no screen can leave a session half-written.
type App struct {
	ctx    context.Context
	cfg    Config
	width  int
	height int
	screen screen
	help   help.Model
	picker *picker
	dash   *dashboard
	data   *runData
	done   *doneView
	cmp    *compareView
	// notice says what became of the last HTML report (h), above the keys.
	notice   string
	run      *activeRun
	confirm  bool // asking whether to stop the run and quit
	quitting bool // stopping the run, then quitting: the user interrupted it
	stale    bool // run data changed since the last frame
	frame    string
	guard    crashGuard
}

// Outcome is how the last run ended, for the command to print after the
// TUI closes.
type Outcome struct {
	Ran bool
	// Interrupted is true when the user quit during the run (ctrl+c or
	// q, then y), which the command reports like SIGINT.
	Interrupted bool
	Arms        []string // in the profile's order
	// Manifest is the session's, once it was made (also when the run
	// did not finish).
	Manifest string
	Status   string
	Err      error
	Finished *runner.Finished
}

// New opens the TUI on the picker.
func New(ctx context.Context, cfg Config) *App {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &App{ctx: ctx, cfg: cfg, help: help.New(), width: 80, height: 24}
	a.picker = newPicker(cfg.Profiles, cfg.Problems, cfg.Base)
	return a
}

// NewRun opens the TUI on the dashboard of a run that starts at once.
func NewRun(ctx context.Context, cfg Config, plan *runner.Plan, b []backends.Backend) *App {
	a := New(ctx, cfg)
	a.startRun(plan, b)
	return a
}

// NewCompare opens the TUI on the compare screen.
func NewCompare(ctx context.Context, cfg Config, refs []session.Ref, sessions []*session.Session) *App {
	a := New(ctx, cfg)
	a.cmp = newCompareView(refs, sessions, nil)
	a.screen = screenCompare
	return a
}

// Init starts the picker's probes, or the run's event pump and frame
// tick, under the crash guard.
func (a *App) Init() tea.Cmd {
	_, cmd := a.guard.update(a, nil, func(tea.Msg) (tea.Model, tea.Cmd) { return a, a.start() })
	return cmd
}

// Crash is the panic that ended the program, or nil: the command reports
// it once the program has exited.
func (a *App) Crash() *Crash { return a.guard.caught() }

func (a *App) start() tea.Cmd {
	a.render()
	switch a.screen {
	case screenPicker:
		return a.picker.init(a.ctx)
	case screenRun:
		return tea.Batch(a.run.next(), tick())
	case screenCompare:
		return a.cmp.init()
	}
	return nil
}

// Outcome reports the last run once the program has exited; it waits for
// the runner, so the session files are final when it returns.
func (a *App) Outcome() Outcome {
	r := a.run
	if r == nil {
		return Outcome{}
	}
	r.cancel()
	r.abandonOnce.Do(func() { close(r.abandoned) })
	r.wait()
	return Outcome{Ran: true, Interrupted: a.quitting, Arms: r.arms, Manifest: r.manifest, Status: r.status, Err: r.err, Finished: r.finished}
}

type tickMsg time.Time

func tick() tea.Cmd {
	return tea.Tick(frameInterval, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update routes a message, under the crash guard.
func (a *App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return a.guard.update(a, msg, a.update)
}

func (a *App) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.width, a.height = msg.Width, msg.Height
		a.help.SetWidth(msg.Width)
	case tickMsg:
		if a.run != nil && !a.run.ended() {
			cmd = tick()
		}
		if !a.stale {
			return a, cmd
		}
	case eventsMsg:
		for _, ev := range msg {
			a.data.apply(ev)
		}
		a.stale = true
		return a, a.run.next() // drawn on the next tick
	case baselinesMsg:
		a.done.showBaselines(msg)
	case verdictsMsg:
		a.done.showVerdicts(msg)
	case compareLoadedMsg:
		a.done.busy = ""
		a.cmp = newCompareView(msg.refs, msg.sessions, msg.err)
		a.notice = ""
		a.screen = screenCompare
		a.render()
		return a, a.cmp.init()
	case compareTestedMsg:
		a.cmp.showTests(msg)
	case reportMsg:
		a.done.setReport(msg)
	case htmlWrittenMsg:
		a.notice = htmlNotice(msg)
	case runEndedMsg:
		if a.quitting {
			return a, tea.Quit
		}
		a.confirm = false
		a.done = newDoneView(a.data, a.dash, a.run.status, a.run.err)
		a.notice = "" // an earlier run's report is not this one's
		a.screen = screenDone
		cmd = a.done.init()
	case tea.KeyPressMsg:
		var quit bool
		cmd, quit = a.key(msg)
		if quit {
			return a, tea.Quit
		}
	default:
		if a.screen == screenPicker {
			cmd = a.picker.update(a.ctx, msg)
		}
	}
	a.render()
	return a, cmd
}

// key handles a key press; quit reports that the program should end now.
func (a *App) key(msg tea.KeyPressMsg) (cmd tea.Cmd, quit bool) {
	running := a.run != nil && !a.run.ended()
	// ctrl+c stops at once, as SIGINT does, and quits even from a text
	// field, where q is just a letter; q asks first during a run.
	if key.Matches(msg, keys.Interrupt) {
		if !running {
			return nil, true
		}
		a.stopAndQuit()
		return nil, false
	}
	if a.confirm {
		switch {
		case key.Matches(msg, keys.Yes):
			a.stopAndQuit()
		case key.Matches(msg, keys.No):
			a.confirm = false
		}
		return nil, false
	}
	typing := a.screen == screenPicker && a.picker.typing()
	switch {
	case key.Matches(msg, keys.Quit) && !typing:
		if running {
			a.confirm = true
			return nil, false
		}
		return nil, true
	case key.Matches(msg, keys.Help) && !typing:
		a.help.ShowAll = !a.help.ShowAll
		return nil, false
	}
	switch a.screen {
	case screenPicker:
		if key.Matches(msg, keys.Start) && !a.picker.filtering() {
			plan, b, err := a.picker.prepare()
			if err != nil {
				a.picker.err = err.Error()
				return nil, false
			}
			a.startRun(plan, b)
			return tea.Batch(a.run.next(), tick()), false
		}
		return a.picker.update(a.ctx, msg), false
	case screenRun:
		switch {
		case key.Matches(msg, keys.Pause) && running:
			if a.dash.paused {
				a.run.plan.Pause.Resume()
			} else {
				a.run.plan.Pause.Hold()
			}
			a.dash.paused = !a.dash.paused
		case key.Matches(msg, keys.Stop) && running:
			a.stopRun()
		default:
			a.dash.update(msg)
		}
	case screenDone:
		if key.Matches(msg, keys.HTML) && a.done.mode == doneResults && a.done.saved() {
			a.notice = "writing the HTML report…"
			return writeRunHTML(a.done.data.finished.Manifest), false
		}
		if key.Matches(msg, keys.NewRun) && a.done.mode == doneResults {
			// The ended run was shown; quitting from the picker must not
			// report it again (nor its error as this exit's).
			a.run = nil
			a.screen = screenPicker
			// Back on the list, so q quits rather than typing into the
			// field the last run was started from.
			a.picker.setFocus(focusProfiles)
			return a.picker.init(a.ctx), false
		}
		return a.done.key(msg), false
	case screenCompare:
		if key.Matches(msg, keys.Back) && a.done != nil {
			a.screen = screenDone
			return nil, false
		}
		if key.Matches(msg, keys.HTML) && a.cmp.cmp != nil {
			a.notice = "writing the HTML report…"
			return writeHTML(a.cmp.refs, a.cmp.sessions, comparisonHTMLPath(a.cmp.refs)), false
		}
		a.cmp.update(msg)
	}
	return nil, false
}

// stopRun stops the run: the trial in flight is canceled and the session
// saved as partial; runEndedMsg then shows the done view.
func (a *App) stopRun() {
	a.data.event = "stopping: the trial in flight is canceled, the session saved as partial"
	a.run.cancel()
}

// stopAndQuit stops the run, and quits once it has saved.
func (a *App) stopAndQuit() {
	a.confirm, a.quitting = false, true
	a.stopRun()
}

func (a *App) startRun(plan *runner.Plan, b []backends.Backend) {
	a.attach(plan, startRun(a.ctx, plan, b, &a.guard))
}

// attach shows run on the dashboard.
func (a *App) attach(plan *runner.Plan, run *activeRun) {
	var models, where []string
	for _, t := range plan.Targets {
		if !slices.Contains(models, t.Target.Model) {
			models = append(models, t.Target.Model)
		}
		w := t.Kind.Name
		if !t.Kind.InProcess {
			w += " " + untrusted.URL(t.Target.URL)
		}
		if !slices.Contains(where, w) {
			where = append(where, w)
		}
	}
	a.data = newRunData(plan.Profile.Name, strings.Join(models, " + "), plan.ConvergeTol)
	a.dash = newDashboard(a.data, strings.Join(where, " + "), a.cfg.Now())
	a.run = run
	a.screen = screenRun
}

// View returns the last frame; frames are built in Update, paced by the
// tick during a run, so a burst of trials costs one frame, not many.
func (a *App) View() tea.View {
	v := tea.NewView(a.frame)
	v.AltScreen = true
	return v
}

// Below this size no screen is readable, so none is drawn.
const minWidth, minHeight = 20, 6

// tooSmall is the frame that says so, and whether w×h is below it.
func tooSmall(w, h int) (string, bool) {
	if w >= minWidth && h >= minHeight {
		return "", false
	}
	return strings.Join(fitLines(fmt.Sprintf("tokentop needs %d×%d; this terminal is %d×%d", minWidth, minHeight, w, h), w, h), "\n"), true
}

func (a *App) render() {
	a.stale = false
	w, h := a.width, a.height
	if frame, small := tooSmall(w, h); small {
		a.frame = frame
		return
	}
	helpLine := a.help.View(a.bindings())
	if a.confirm {
		helpLine = styleConfirm.Render("Stop the run and quit? Trials so far stay saved. y/n")
	}
	// The keys, then above them the notice, wrapped rather than cut (its
	// point is the path), each in the rows the other leaves, so that the
	// screen keeps at least one row at any size.
	foot := strings.Split(helpLine, "\n")
	foot = foot[:min(len(foot), h-1)]
	if a.notice != "" && (a.screen == screenDone || a.screen == screenCompare) {
		notice := wrap(a.notice, w)
		if room := h - 1 - len(foot); len(notice) > room {
			notice = notice[:room]
			if room > 0 {
				notice[room-1] = ansi.Truncate(notice[room-1], w-1, "") + "…"
			}
		}
		foot = append(notice, foot...)
	}
	bodyH := h - len(foot)
	var body string
	switch a.screen {
	case screenPicker:
		body = a.picker.view(w, bodyH)
	case screenRun:
		body = a.dash.view(w, bodyH, a.cfg.Now())
	case screenDone:
		body = a.done.view(w, bodyH)
	case screenCompare:
		body = a.cmp.view(w, bodyH)
	}
	// Every screen draws exact w-cell lines (the layout tests check), so
	// only the line count is settled here.
	lines := strings.Split(body, "\n")
	for len(lines) < bodyH {
		lines = append(lines, strings.Repeat(" ", w))
	}
	lines = lines[:bodyH]
	for _, l := range foot {
		lines = append(lines, fit(l, w))
	}
	a.frame = strings.Join(lines, "\n")
}

// bindings lists the keys of the screen in front, for the help line.
func (a *App) bindings() bindings {
	var short []key.Binding
	switch a.screen {
	case screenPicker:
		short = []key.Binding{keys.Start, keys.NextPanel, helpMove}
		switch a.picker.focus {
		case focusProfiles:
			// the list's own filter key: the idle status line that says
			// it gives way to the selected plan on a short terminal
			short = append(short, relabel(a.picker.list.KeyMap.Filter, "filter"))
		case focusBackends:
			short = append(short, keys.Pick, keys.NextModel)
		}
	case screenRun:
		short = []key.Binding{keys.Pause, keys.Stop, keys.Metric, keys.Chart, keys.NextPanel, keys.Zoom}
	case screenDone:
		short = a.done.bindings()
	case screenCompare:
		short = []key.Binding{keys.Metric, helpScroll}
		if a.cmp.columnsHidden(a.width) {
			short = append(short, keys.NextColumn)
		}
		short = append(short, keys.HTML)
		if a.done != nil {
			short = append(short, keys.Back)
		}
	}
	// ? is offered only where the full help says more than the line.
	full := [][]key.Binding{slices.Concat(short, []key.Binding{keys.Quit})}
	if a.screen == screenRun {
		short = append(short, keys.Help)
		full = [][]key.Binding{{keys.Pause, keys.Stop}, {keys.Metric, keys.Chart}, {keys.NextPanel, keys.PrevPanel, keys.Zoom}, {keys.Help, keys.Quit, keys.Interrupt}}
	}
	short = append(short, keys.Quit)
	return bindings{short: short, full: full}
}

// activeRun is the runner working in its own goroutine; its events reach
// Update as messages, in batches. It keeps the start and the end of the
// run itself, so the command can report them after the program is gone.
type activeRun struct {
	plan        *runner.Plan
	cancel      context.CancelFunc
	events      chan runner.Event
	abandoned   chan struct{} // closed once nobody reads events any more
	abandonOnce sync.Once
	done        chan struct{} // closed once Run returned; then the fields below are final
	status      string
	err         error
	arms        []string
	manifest    string
	finished    *runner.Finished
}

type eventsMsg []runner.Event

type runEndedMsg struct{}

func startRun(parent context.Context, plan *runner.Plan, b []backends.Backend, guard *crashGuard) *activeRun {
	ctx, cancel := context.WithCancel(parent)
	plan.Pause = &runner.Pause{}
	// A deep buffer so the runner never waits for a frame between trials.
	r := &activeRun{plan: plan, cancel: cancel, events: make(chan runner.Event, 4096),
		abandoned: make(chan struct{}), done: make(chan struct{})}
	internal := make(chan runner.Event)
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		defer close(r.events)
		for ev := range internal {
			switch ev := ev.(type) {
			case runner.Started:
				r.arms, r.manifest = ev.Arms, ev.Manifest
			case runner.Finished:
				r.finished = &ev
			}
			select {
			case r.events <- ev:
			case <-r.abandoned:
			}
		}
	}()
	guard.goroutine(func() {
		r.status, r.err = runner.Run(ctx, plan, b, internal)
	}, func() {
		<-forwarded // Run closes internal, even when it panics
		close(r.done)
	})
	return r
}

// next waits for events and delivers all that are queued at once.
func (r *activeRun) next() tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-r.events
		if !ok {
			<-r.done
			return runEndedMsg{}
		}
		batch := eventsMsg{ev}
		for len(batch) < cap(r.events) {
			select {
			case ev, ok := <-r.events:
				if !ok {
					return batch // the next call reports the end
				}
				batch = append(batch, ev)
			default:
				return batch
			}
		}
		return batch
	}
}

func (r *activeRun) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *activeRun) wait() { <-r.done }
