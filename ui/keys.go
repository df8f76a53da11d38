package ui

import "charm.land/bubbles/v2/key"

// keyMap holds every binding; each screen lists the ones it uses in its
// help line, so the help never offers a key that does nothing.
type keyMap struct {
	Pause, Stop, NextPanel, PrevPanel, Metric, Chart, Zoom key.Binding
	Start, Next, Prev, Compare, NewRun, Report, HTML, Back key.Binding
	Pick, NextModel, PrevModel, NextColumn, PrevColumn     key.Binding
	Help, Quit, Interrupt, Yes, No                         key.Binding
}

var keys = keyMap{
	Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
	Stop:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stop")),
	NextPanel: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "panel")),
	PrevPanel: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev panel")),
	Metric:    key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "metric")),
	Chart:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "mean/CV")),
	Zoom:      key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "zoom")),
	Start:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "start run")),
	Next:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
	Prev:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
	Compare:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "compare")),
	NewRun:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "new run")),
	Report:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "report")),
	HTML:      key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "html")),
	Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	Pick:      key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "A/B pick")),
	NextModel: key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("←/→", "model")),
	PrevModel: key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "prev model")),
	// Arrows only: h is the compare screen's HTML key.
	NextColumn: key.NewBinding(key.WithKeys("right"), key.WithHelp("←/→", "columns")),
	PrevColumn: key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "prev columns")),
	Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
	Quit:       key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
	Interrupt:  key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "stop, save and quit")),
	Yes:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes")),
	No:         key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n", "no")),
}

// bindings adapts a screen's key lists to Bubbles' help.KeyMap.
type bindings struct {
	short []key.Binding
	full  [][]key.Binding
}

func (b bindings) ShortHelp() []key.Binding  { return b.short }
func (b bindings) FullHelp() [][]key.Binding { return b.full }

// Help-line entries for keys bound above, named for what they do in one
// mode: derived, so the help can never list a key the handler does not
// match.
var (
	helpScroll     = key.NewBinding(key.WithKeys(append(keys.Prev.Keys(), keys.Next.Keys()...)...), key.WithHelp("↑/↓", "scroll"))
	helpMove       = relabel(helpScroll, "move")
	helpReportBack = relabel(keys.Report, "results")
	helpChoose     = relabel(keys.Start, "compare")
	// "n new" beside the done view's other keys keeps "q quit" on an
	// 80-column line.
	helpNewRun = relabel(keys.NewRun, "new")
)

func relabel(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}
