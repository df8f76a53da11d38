package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
)

// GridApp is the matrix screen: the grid as a table that fills in as its
// cells' sessions end (each cell's median e2e and interval, and its rank
// among the cells so far), with the running cell's dashboard one key
// (tab) away.
type GridApp struct {
	ctx     context.Context
	cancel  context.CancelFunc
	m       *grid.Matrix
	now     func() time.Time
	begin   time.Time
	pending int             // sessions to run at the start
	ended   int             // sessions ended since
	events  chan grid.Event // closed when the grid's run has ended
	over    bool            // the events are all in
	err     error           // the grid run's, once events is closed

	width, height int
	showDash      bool
	running       *grid.Event // the session in flight, from its Started
	data          *runData
	dash          *dashboard
	cmp           *grid.Comparison // the cells so far, ranked (off Update: it reads every session)
	cmpErr        error
	stale         bool // events came in since the last frame
	// states are each cell's latest state, from the manifest at the
	// start and the run's events after (the run owns the manifest).
	states   map[string]string
	frame    string
	quitting bool
	guard    crashGuard
}

// NewGrid opens the matrix screen on m, whose run starts with Init;
// pending counts the sessions it has to run.
func NewGrid(ctx context.Context, m *grid.Matrix, pending int, now func() time.Time) *GridApp {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &GridApp{ctx: ctx, cancel: cancel, m: m, now: now, pending: pending, width: 80, height: 24,
		events: make(chan grid.Event, 256), states: map[string]string{}}
	for i, c := range m.Cells { // read before the run starts writing it
		if runs := m.State.Cells[i].Runs; len(runs) > 0 {
			g.states[c.ID] = runs[len(runs)-1].Status
		}
	}
	return g
}

type gridEventsMsg []grid.Event
type gridDoneMsg struct{}

// gridRankedMsg is the cells ranked from their files, read by a command
// so that a grid of many sessions never stalls a frame.
type gridRankedMsg struct {
	cmp *grid.Comparison
	err error
}

// Init starts the grid's run, its event pump and the frame tick, under
// the crash guard.
func (g *GridApp) Init() tea.Cmd {
	_, cmd := g.guard.update(g, nil, func(tea.Msg) (tea.Model, tea.Cmd) {
		g.begin = g.now()
		g.guard.goroutine(func() {
			g.err = g.m.Run(g.ctx, func(ev grid.Event) { g.events <- ev })
		}, func() { close(g.events) })
		g.render()
		return g, tea.Batch(g.next(), tick(), g.rank())
	})
	return cmd
}

// Crash is the panic that ended the program, or nil.
func (g *GridApp) Crash() *Crash { return g.guard.caught() }

func (g *GridApp) rank() tea.Cmd {
	dir := g.m.Dir
	return func() tea.Msg {
		cmp, err := grid.Compare(dir, "", session.TestOptions{Resamples: 1000, Seed: 1})
		return gridRankedMsg{cmp, err}
	}
}

// Err is how the grid's run ended, once the program has exited: it stops
// the run if it still goes (the session in flight saves what it
// measured) and waits for it.
func (g *GridApp) Err() error {
	g.cancel()
	for range g.events { // unblock the run's sends until it closes them
	}
	return g.err
}

func (g *GridApp) next() tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-g.events
		if !ok {
			return gridDoneMsg{}
		}
		batch := gridEventsMsg{ev}
		for len(batch) < 256 {
			select {
			case ev, ok := <-g.events:
				if !ok {
					return batch // the close is seen on the next call
				}
				batch = append(batch, ev)
			default:
				return batch
			}
		}
		return batch
	}
}

// Update handles keys, events and ticks, under the crash guard. Events
// are drawn on the next tick, at most frameInterval apart, however fast
// they come.
func (g *GridApp) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return g.guard.update(g, msg, g.update)
}

func (g *GridApp) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		g.width, g.height = msg.Width, msg.Height
	case tickMsg:
		if !g.over {
			cmd = tick()
		}
		if !g.stale {
			return g, cmd
		}
	case gridEventsMsg:
		cmd = g.next()
		for _, ev := range msg {
			if g.apply(ev) {
				cmd = tea.Batch(cmd, g.rank())
			}
		}
		g.stale = true
		return g, cmd
	case gridRankedMsg:
		g.cmp, g.cmpErr = msg.cmp, msg.err
	case gridDoneMsg:
		g.over = true
		g.running = nil
		if g.quitting {
			return g, tea.Quit
		}
		cmd = g.rank()
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, keys.Interrupt) || key.Matches(msg, keys.Quit):
			if g.over {
				return g, tea.Quit
			}
			g.quitting = true
			g.cancel() // the session in flight saves what it measured, then the grid ends
		case key.Matches(msg, keys.NextPanel):
			g.showDash = !g.showDash
		case g.showDash && g.dash != nil:
			g.dash.update(msg)
		}
	}
	g.render()
	return g, cmd
}

// apply folds one event in; it reports whether a session ended, so that
// the cells are ranked again.
func (g *GridApp) apply(ev grid.Event) (ended bool) {
	if ev.Failed != nil {
		g.states[ev.Cell.ID] = "failed: " + ev.Failed.Error()
		return false
	}
	switch e := ev.Event.(type) {
	case runner.Started:
		g.running = &ev
		g.states[ev.Cell.ID] = "running"
		g.data = newRunData(ev.Cell.ID+" "+ev.Cell.Label, "", ev.Cell.ConvergeTol)
		g.dash = newDashboard(g.data, "grid "+g.m.Grid.Name, g.now())
	case runner.Finished:
		g.ended++
		g.states[ev.Cell.ID] = e.Status
		ended = true
	}
	if g.data != nil && g.running != nil && ev.Slot == g.running.Slot {
		g.data.apply(ev.Event)
	}
	return ended
}

// View draws the last frame.
func (g *GridApp) View() tea.View {
	v := tea.NewView(g.frame)
	v.AltScreen = true
	return v
}

func (g *GridApp) render() {
	g.stale = false
	w, h := g.width, g.height
	if frame, small := tooSmall(w, h); small {
		g.frame = frame
		return
	}
	help := "tab running cell's dashboard • q quit (the grid resumes where it stopped)"
	if g.over {
		help = "q quit"
	} else if g.showDash {
		help = "tab the grid • m metric • c mean/CV • z zoom • q quit"
	}
	header := g.header(w)
	bodyH := h - 2
	var body string
	if g.showDash && g.dash != nil && !g.over {
		body = g.dash.view(w, bodyH+1, g.now()) // its own header line replaces the grid's
		g.frame = body + "\n" + fit(styleDim.Render(help), w)
		return
	}
	body = box("cells · rank so far (1 = fastest) and group (a shared letter: no test tells them apart)", g.table(w-2, bodyH-2), w, bodyH, true)
	g.frame = strings.Join([]string{header, body, fit(styleDim.Render(help), w)}, "\n")
}

// header is the grid's name, progress and ETA.
func (g *GridApp) header(w int) string {
	elapsed := g.now().Sub(g.begin)
	status := fmt.Sprintf("%d/%d sessions", g.ended, g.pending)
	// A resumed grid counts this run's sessions; say what ran before, or
	// a finished grid opened again reads "0/0".
	if before := len(g.m.Cells)*g.m.Grid.Repetitions - g.pending; before > 0 {
		status += fmt.Sprintf(" (+%d done before)", before)
	}
	status += " · " + clock(elapsed)
	switch {
	case g.over && errors.Is(g.err, grid.ErrBudgetSpent):
		status = "budget spent · " + status
	case g.over:
		status = "done · " + status
	case g.ended > 0:
		eta := time.Duration(float64(elapsed) / float64(g.ended) * float64(g.pending-g.ended))
		status += " · ETA " + clock(eta)
	}
	title := styleTitle.Render("tokentop") + " grid " + g.m.Grid.Name
	if g.running != nil && !g.over {
		title += " · running " + g.running.Cell.ID
	}
	gap := w - cellWidth(title) - cellWidth(status)
	return fit(title+strings.Repeat(" ", max(1, gap))+styleBold.Render(status), w)
}

// rankText is a rank, or "—" for a cell too small to rank.
func rankText(rank int) string {
	if rank <= 0 {
		return "—"
	}
	return fmt.Sprint(rank)
}

// rankStyle colours a rank from good to bad; the number is always shown,
// so colour never carries it alone.
func rankStyle(rank, of int) lipgloss.Style {
	switch {
	case rank <= 0:
		return styleDim
	case rank == 1:
		return styleGood
	case of > 1 && rank > of*2/3:
		return styleBad
	}
	return lipgloss.NewStyle()
}

// table lists every cell: its rank and median e2e with its interval once
// it has run, and its state (running, waiting, failed and why). On a
// narrow screen tok/s, then n, then the axes' units and then the interval
// give way; rank, cell, values, median and state stay.
func (g *GridApp) table(w, h int) string {
	byCell := map[string]grid.Row{}
	if g.cmp != nil {
		for _, r := range g.cmp.Rows {
			if _, seen := byCell[r.Cell]; !seen { // a cell's first arm
				byCell[r.Cell] = r
			}
		}
	}
	build := func(level int) ([]string, int) {
		head := []string{"rank", "cell", strings.Join(g.m.Grid.AxisNames(), " · "), "n", "e2e median [95% CI] ms", "tok/s", "state"}
		rows := [][]string{head}
		var styles []lipgloss.Style
		for _, c := range g.m.Cells {
			state := g.states[c.ID]
			if state == "" {
				state = "waiting"
			}
			label := c.Label
			if level >= 3 {
				label = strings.Join(c.Values, " ")
			}
			row := []string{"", c.ID, label, "", "", "", state}
			style := lipgloss.NewStyle()
			if r, ok := byCell[c.ID]; ok && r.N > 0 {
				row[0], row[3], row[5] = strings.TrimSpace(rankText(r.Rank)+" "+r.Group), fmt.Sprint(r.N), session.FormatValue(r.TokensPerS)
				row[4] = fmt.Sprintf("%s [%s, %s]", session.FormatValue(r.E2E.Value), session.FormatValue(r.E2E.Lo), session.FormatValue(r.E2E.Hi))
				if level >= 4 {
					row[4] = session.FormatValue(r.E2E.Value)
				}
				style = rankStyle(r.Rank, len(g.cmp.Rows))
			}
			rows = append(rows, row)
			styles = append(styles, style)
		}
		if level >= 4 {
			rows[0][4] = "e2e median ms"
		}
		drop := map[int]bool{5: level >= 1, 3: level >= 2}
		widths := make([]int, len(head))
		for _, r := range rows {
			for i, cell := range r {
				widths[i] = max(widths[i], cellWidth(cell))
			}
		}
		var lines []string
		total := 0
		for k, r := range rows {
			var b strings.Builder
			for i, cell := range r {
				if drop[i] {
					continue
				}
				if i == len(r)-1 {
					b.WriteString(cell) // the state, last: an error may run long
					break
				}
				b.WriteString(fmt.Sprintf("%-*s  ", widths[i], cell))
			}
			line := b.String()
			if k == 0 {
				total = cellWidth(line) + 7 // room for a state word under its header
				lines = append(lines, styleBold.Render(fit(line, w)))
				continue
			}
			lines = append(lines, styles[k-1].Render(fit(line, w)))
		}
		return lines, total
	}
	var lines []string
	for level := 0; level <= 4; level++ {
		var need int
		if lines, need = build(level); need <= w {
			break
		}
	}
	if g.cmpErr != nil && g.ended > 0 { // before any session there is nothing to rank
		lines = append(lines, styleWarn.Render(fit("⚠ no ranking: "+g.cmpErr.Error(), w)))
	}
	// Rows the cells leave go to each axis value across the others, the
	// grid's summary so far.
	if means := g.axisMeans(w, h-len(lines)-1); len(means) > 0 {
		lines = append(append(lines, ""), means...)
	}
	// And what is left still, to the cells' medians and intervals drawn
	// side by side.
	if chart := g.forest(w, h-len(lines)-1); len(chart) > 0 {
		lines = append(append(lines, ""), chart...)
	}
	if len(lines) > h && h >= 2 {
		lines = append(lines[:h-1], styleDim.Render(fmt.Sprintf("+%d more cells: tokentop compare %s ranks them all", len(lines)-h+1, g.m.Dir)))
	}
	return strings.Join(lines, "\n")
}

// forest draws each ranked cell's median e2e (●) and 95% interval
// (├─┤) on one log axis, a row per cell labelled with its ID and rank, in
// h lines or none: the table's numbers as a picture, so the spread between
// cells and the overlap of their intervals show at a glance.
func (g *GridApp) forest(w, h int) []string {
	if g.cmp == nil {
		return nil
	}
	var rows []grid.Row
	lo, hi := math.Inf(1), math.Inf(-1)
	seen := map[string]bool{}
	for _, r := range g.cmp.Rows {
		if seen[r.Cell] || r.Rank <= 0 || !(r.E2E.Lo > 0) || !(r.E2E.Hi >= r.E2E.Lo) {
			continue
		}
		seen[r.Cell] = true // a cell's first arm, as in the table
		rows = append(rows, r)
		lo, hi = min(lo, r.E2E.Lo), max(hi, r.E2E.Hi)
	}
	labelW := 0
	for _, r := range rows {
		labelW = max(labelW, cellWidth(r.Cell)+len(rankText(r.Rank))+2)
	}
	plotW := w - labelW - 1
	if len(rows) < 2 || len(rows)+2 > h || plotW < 20 {
		return nil
	}
	if hi <= lo {
		hi = lo * 1.01
	}
	col := func(v float64) int {
		return min(plotW-1, max(0, int(math.Round(math.Log(v/lo)/math.Log(hi/lo)*float64(plotW-1)))))
	}
	lines := []string{styleBold.Render(fit("e2e median ● and 95% interval ├─┤ per cell, ms, log scale", w))}
	for _, r := range rows {
		plot := []rune(strings.Repeat(" ", plotW))
		a, b := col(r.E2E.Lo), col(r.E2E.Hi)
		for c := a; c <= b; c++ {
			plot[c] = '─'
		}
		plot[a], plot[b] = '├', '┤'
		plot[col(r.E2E.Value)] = '●'
		label := fmt.Sprintf("%-*s", labelW, r.Cell+" #"+rankText(r.Rank))
		lines = append(lines, rankStyle(r.Rank, len(g.cmp.Rows)).Render(fit(label+" "+string(plot), w)))
	}
	return append(lines, styleDim.Render(fit(strings.Repeat(" ", labelW+1)+logAxis(lo, hi, plotW, col), w)))
}

// logAxis labels a log axis plotW wide from lo to hi: both ends, and each
// power of ten between them where its label does not run into another.
func logAxis(lo, hi float64, plotW int, col func(float64) int) string {
	axis := []rune(strings.Repeat(" ", plotW))
	taken := make([]bool, plotW)
	place := func(label string, at int) {
		r := []rune(label)
		at = min(max(0, at), plotW-len(r))
		for c := max(0, at-1); c < min(plotW, at+len(r)+1); c++ {
			if taken[c] {
				return
			}
		}
		for i, ch := range r {
			axis[at+i], taken[at+i] = ch, true
		}
	}
	place(session.FormatValue(lo), 0)
	right := session.FormatValue(hi)
	place(right, plotW-len([]rune(right)))
	for p := math.Ceil(math.Log10(lo)); p <= math.Floor(math.Log10(hi)); p++ {
		label := session.FormatValue(math.Pow(10, p))
		place(label, col(math.Pow(10, p))-len([]rune(label))/2)
	}
	return string(axis)
}

// axisMeans are the comparison's geometric means per axis value, as at
// most h table lines, whole axes only, with a line naming the axes left
// out; none before two values of an axis have matched cells.
func (g *GridApp) axisMeans(w, h int) []string {
	if g.cmp == nil || len(g.cmp.Means) == 0 {
		return nil
	}
	var axes [][]grid.AxisMean // the means in axis order, one slice per axis
	for i, m := range g.cmp.Means {
		if i == 0 || m.Axis != g.cmp.Means[i-1].Axis {
			axes = append(axes, nil)
		}
		axes[len(axes)-1] = append(axes[len(axes)-1], m)
	}
	// Whole axes only; when some do not fit, a line names them.
	fits := len(g.cmp.Means)+1 <= h
	rows := [][]string{{"axis", "value", "matched", "e2e geomean ms", "vs fastest"}}
	var left []string
	for _, axis := range axes {
		if len(left) > 0 || (!fits && len(rows)+len(axis)+1 > h) {
			left = append(left, axis[0].Axis)
			continue
		}
		for _, m := range axis {
			rows = append(rows, []string{m.Axis, m.Value, fmt.Sprint(m.Rows), session.FormatValue(m.E2E), fmt.Sprintf("%.2f×", m.E2ERatioVsFaster)})
		}
	}
	if len(rows) == 1 {
		return nil
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], cellWidth(c))
		}
	}
	var lines []string
	for k, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(fmt.Sprintf("%-*s  ", widths[i], c))
		}
		line := fit(strings.TrimRight(b.String(), " "), w)
		if k == 0 {
			line = styleBold.Render(line)
		}
		lines = append(lines, line)
	}
	if len(left) > 0 {
		noun := "axes"
		if len(left) == 1 {
			noun = "axis"
		}
		lines = append(lines, styleDim.Render(fit(fmt.Sprintf("+%d more %s (%s): tokentop compare %s shows all", len(left), noun, strings.Join(left, ", "), g.m.Dir), w)))
	}
	return lines
}
