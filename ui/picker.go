package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/list"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/registry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
)

// pickerFocus is what tab moves through on the picker.
type pickerFocus int

const (
	focusProfiles pickerFocus = iota
	focusBackends
	focusModel
	focusTrials
	focusWarmup
	pickerFocusCount
)

// profileItem shows a profile in the list: name, then its plan, arms and
// description.
type profileItem struct{ p *profiles.Profile }

func (i profileItem) Title() string {
	return i.p.Name + "  " + styleDim.Render("("+profileOrigin(i.p)+")")
}
func (i profileItem) Description() string {
	return i.plan() + " · " + i.p.Description
}

// plan is the profile's arms and trial counts.
func (i profileItem) plan() string {
	return fmt.Sprintf("%s · %d warmup + %d trials", strings.Join(i.p.ArmNames(), " vs "), i.p.Warmup, i.p.Trials)
}

// profileOrigin says where a profile came from: "shipped" with tokentop
// (not "builtin", which reads as the built-in backend), or its file.
func profileOrigin(p *profiles.Profile) string {
	if p.Source == "builtin" {
		return "shipped"
	}
	return p.Source
}
func (i profileItem) FilterValue() string { return i.p.Name + " " + i.p.Description }

// picker chooses a profile, a backend and the trial counts, then starts a
// run. Backends are probed in the background; their rows fill in as the
// answers come.
type picker struct {
	base     runner.Options
	list     list.Model
	delegate list.DefaultDelegate
	kinds    []backends.Kind
	probes   []*ProbeReport // nil while probing
	backend  int
	focus    pickerFocus
	inputs   [3]textinput.Model // model, trials, warmup
	problems []error
	err      string
	// models[i] is the model chosen for backend i from its server's own
	// list (←/→); "" means the typed one, else the profile's.
	models []string
	// picks are the targets chosen for an A/B (space), in order: with two
	// or more, enter runs one arm on each, interleaved.
	picks []abPick
}

// abPick is one target of a picker A/B: a backend and its model.
type abPick struct {
	kind  int
	model string
}

type probeMsg struct {
	index  int
	report ProbeReport
}

func newPicker(all []*profiles.Profile, problems []error, base runner.Options) *picker {
	items := make([]list.Item, len(all))
	selected := 0
	for i, p := range all {
		items[i] = profileItem{p}
		if p.Name == profiles.DefaultName {
			selected = i
		}
	}
	delegate := list.NewDefaultDelegate()
	delegate.SetSpacing(0) // two lines per profile: more of them fit at 80x24
	l := list.New(items, delegate, 40, 10)
	l.SetShowTitle(false)
	l.SetShowHelp(false)
	// The box's title counts the profiles; the filter bar shows only while
	// a filter is typed or applied, and without the blank line under it.
	l.SetShowStatusBar(false)
	l.SetShowFilter(false)
	l.SetShowPagination(false) // the title's "3/12" says where the list is

	l.Styles.TitleBar = l.Styles.TitleBar.PaddingBottom(0)
	l.DisableQuitKeybindings()
	l.Select(selected)
	p := &picker{base: base, list: l, delegate: delegate, kinds: registry.Kinds, probes: make([]*ProbeReport, len(registry.Kinds)), problems: problems,
		models: make([]string, len(registry.Kinds))}
	for i, k := range p.kinds {
		if k.Name == base.Backend || base.Backend == "" && k.Name == registry.Default {
			p.backend = i
		}
	}
	placeholders := []string{"profile's model", "from profile", "from profile"}
	prompts := []string{"model   ", "trials  ", "warmup  "}
	for i := range p.inputs {
		in := textinput.New()
		in.Prompt = prompts[i]
		in.Placeholder = placeholders[i]
		in.CharLimit = 200
		p.inputs[i] = in
	}
	if base.Model != "" {
		p.inputs[0].SetValue(base.Model)
	}
	if base.Trials != runner.NoOverride {
		p.inputs[1].SetValue(strconv.Itoa(base.Trials))
	}
	if base.Warmup != runner.NoOverride {
		p.inputs[2].SetValue(strconv.Itoa(base.Warmup))
	}
	return p
}

// init probes every backend concurrently.
func (p *picker) init(ctx context.Context) tea.Cmd {
	p.err = ""
	var cmds []tea.Cmd
	for i, kind := range p.kinds {
		p.probes[i] = nil
		cfg := backends.Config{URL: kind.DefaultURL}
		if p.base.URL != "" && kind.Name == p.base.Backend {
			cfg.URL = p.base.URL
		}
		cmds = append(cmds, func() tea.Msg { return probeMsg{i, Probe(ctx, kind, cfg)} })
	}
	return tea.Batch(cmds...)
}

// typing reports whether keys go to a text field or the list's filter,
// so that q and ? are typed rather than obeyed.
func (p *picker) typing() bool { return p.focus >= focusModel || p.filtering() }

func (p *picker) filtering() bool { return p.list.FilterState() == list.Filtering }

func (p *picker) update(ctx context.Context, msg tea.Msg) tea.Cmd {
	if m, ok := msg.(probeMsg); ok {
		p.probes[m.index] = &m.report
		return nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok && !p.filtering() {
		switch {
		case key.Matches(k, keys.NextPanel):
			return p.setFocus((p.focus + 1) % pickerFocusCount)
		case key.Matches(k, keys.PrevPanel):
			return p.setFocus((p.focus + pickerFocusCount - 1) % pickerFocusCount)
		}
		if p.focus == focusBackends {
			switch {
			case key.Matches(k, keys.Next):
				p.backend = min(len(p.kinds)-1, p.backend+1)
			case key.Matches(k, keys.Prev):
				p.backend = max(0, p.backend-1)
			case key.Matches(k, keys.NextModel):
				p.cycleModel(1)
			case key.Matches(k, keys.PrevModel):
				p.cycleModel(-1)
			case key.Matches(k, keys.Pick):
				p.togglePick()
			}
			return nil
		}
	}
	var cmd tea.Cmd
	if p.focus >= focusModel {
		// The arrows move between the Run box's fields, as the key line
		// says; j and k stay letters to type.
		if k, ok := msg.(tea.KeyPressMsg); ok {
			switch k.String() {
			case "down":
				return p.setFocus(min(p.focus+1, pickerFocusCount-1))
			case "up":
				return p.setFocus(max(p.focus-1, focusModel))
			}
		}
		i := p.focus - focusModel
		p.inputs[i], cmd = p.inputs[i].Update(msg)
		return cmd
	}
	if p.focus == focusProfiles {
		p.list, cmd = p.list.Update(msg)
	}
	return cmd
}

func (p *picker) setFocus(f pickerFocus) tea.Cmd {
	p.focus = f
	var cmd tea.Cmd
	for i := range p.inputs {
		if pickerFocus(i)+focusModel == f {
			cmd = p.inputs[i].Focus()
		} else {
			p.inputs[i].Blur()
		}
	}
	return cmd
}

func (p *picker) selected() *profiles.Profile {
	item, ok := p.list.SelectedItem().(profileItem)
	if !ok {
		return nil
	}
	return item.p
}

// cycleModel moves the highlighted backend's model through its server's
// own list, and back to the typed or profile's model past either end.
func (p *picker) cycleModel(step int) {
	r := p.probes[p.backend]
	if r == nil || r.Err != nil || len(r.Info.Models) == 0 {
		return
	}
	models := r.Info.Models
	at := slices.Index(models, p.models[p.backend]) // -1: none chosen
	at += step
	switch {
	case at < -1:
		at = len(models) - 1
	case at >= len(models):
		at = -1
	}
	p.models[p.backend] = ""
	if at >= 0 {
		p.models[p.backend] = models[at]
	}
}

// modelFor is the model a run on backend i would ask for: the one chosen
// from the server's list, else the typed one, else the profile's.
func (p *picker) modelFor(i int, profile *profiles.Profile) string {
	if m := p.models[i]; m != "" {
		return m
	}
	if m := strings.TrimSpace(p.inputs[0].Value()); m != "" {
		return m
	}
	if profile != nil {
		return profile.Models[p.kinds[i].Name]
	}
	return ""
}

// togglePick adds the highlighted backend and its model to the A/B, or
// takes that pair out again.
func (p *picker) togglePick() {
	pick := abPick{p.backend, p.modelFor(p.backend, p.selected())}
	if i := slices.Index(p.picks, pick); i >= 0 {
		p.picks = slices.Delete(p.picks, i, i+1)
		return
	}
	p.picks = append(p.picks, pick)
}

// abArms are the arms of a picker A/B: one per pick, with the profile's
// first arm's sampling, each named by what sets it apart.
func (p *picker) abArms(profile *profiles.Profile) []profiles.Arm {
	sameKind, sameModel := true, true
	for _, pick := range p.picks[1:] {
		sameKind = sameKind && pick.kind == p.picks[0].kind
		sameModel = sameModel && pick.model == p.picks[0].model
	}
	var arms []profiles.Arm
	for i, pick := range p.picks {
		var parts []string
		if !sameKind || sameModel {
			parts = append(parts, p.kinds[pick.kind].Name)
		}
		if !sameModel && pick.model != "" {
			parts = append(parts, pick.model)
		}
		name := armName.ReplaceAllString(strings.Join(parts, "-"), "-")
		if slices.ContainsFunc(arms, func(a profiles.Arm) bool { return a.Name == name }) {
			name += "-" + strconv.Itoa(i+1)
		}
		arm := profile.Arms[0]
		arm.Name, arm.Backend, arm.Model = name, p.kinds[pick.kind].Name, pick.model
		arms = append(arms, arm)
	}
	return arms
}

// armName matches what an arm's name may not hold.
var armName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// prepare turns the choices into a plan and its backends: the profile on
// the highlighted backend, or, with two or more picks, an A/B of them.
func (p *picker) prepare() (*runner.Plan, []backends.Backend, error) {
	profile := p.selected()
	if profile == nil {
		return nil, nil, errors.New("no profile matches the filter; press esc to clear it")
	}
	opts := p.base
	opts.Backend = p.kinds[p.backend].Name
	opts.Model = p.models[p.backend]
	if opts.Model == "" {
		opts.Model = strings.TrimSpace(p.inputs[0].Value())
	}
	switch {
	case len(p.picks) == 1:
		return nil, nil, errors.New("an A/B needs two picks: highlight another backend (or choose another model with ←/→) and press space")
	case len(p.picks) > 1:
		ab, err := profile.WithArms(p.abArms(profile))
		if err != nil {
			return nil, nil, err
		}
		profile, opts.Backend, opts.Model = ab, p.kinds[p.picks[0].kind].Name, ""
	}
	if opts.Backend != p.base.Backend {
		opts.URL = "" // a URL given for another backend does not carry over
	}
	var err error
	if opts.Trials, err = countField("trials", p.inputs[1].Value()); err != nil {
		return nil, nil, err
	}
	if opts.Warmup, err = countField("warmup", p.inputs[2].Value()); err != nil {
		return nil, nil, err
	}
	return runner.Prepare(profile, opts)
}

func countField(name, value string) (int, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return runner.NoOverride, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a count; type a whole number, 0 or more, or leave it empty for the profile's count", name, value)
	}
	return n, nil
}

func (p *picker) view(w, h int) string {
	backendsH := len(p.kinds) + 2
	formH := len(p.inputs) + 2
	status := p.statusLine()
	if w >= 120 {
		left := w / 2
		right := lipgloss.JoinVertical(lipgloss.Left, p.backendsBox(w-left, backendsH), p.formBox(w-left, formH))
		return lipgloss.JoinHorizontal(lipgloss.Top, p.profilesColumn(left, h-1), right) + "\n" + fit(status, w)
	}
	listH := max(5, h-backendsH-formH-1)
	profiles, unsaid := p.profilesBox(w, listH)
	if unsaid != "" && p.idle() {
		// No line under the list for the selected profile's plan: the
		// status line, idle, says it instead.
		status = styleDim.Render(unsaid)
	}
	return strings.Join([]string{profiles, p.backendsBox(w, backendsH), p.formBox(w, formH), fit(status, w)}, "\n")
}

// idle reports whether the status line has nothing to say but its hint.
func (p *picker) idle() bool { return p.err == "" && len(p.picks) == 0 && len(p.problems) == 0 }

// profilesColumn is the wide layout's left column: the list only as tall
// as the profiles need, and under it the selected profile whole, its
// description wrapped rather than cut at the list's width.
func (p *picker) profilesColumn(w, h int) string {
	const aboutMin = 6 // a box with four lines of text
	listH := 2*len(p.list.VisibleItems()) + 2
	if p.filtering() {
		listH++
	}
	if h-listH < aboutMin {
		profiles, _ := p.profilesBox(w, h) // the column has no status line of its own
		return profiles
	}
	profiles, _ := p.profilesBox(w, listH) // the about box says the plan
	return profiles + "\n" + p.aboutBox(w, h-listH)
}

// aboutBox shows the selected profile: its plan, then its description.
func (p *picker) aboutBox(w, h int) string {
	item, ok := p.list.SelectedItem().(profileItem)
	if !ok {
		return box("Profile", styleDim.Render("no profile matches the filter"), w, h, false)
	}
	var lines []string
	for _, paragraph := range []string{"arms " + strings.Join(item.p.ArmNames(), " vs ") + " · " + profilePlan(item.p), "", item.p.Description} {
		for _, line := range wrap(paragraph, w-6) {
			lines = append(lines, "  "+line)
		}
	}
	return box(item.p.Name+" ("+profileOrigin(item.p)+")", strings.Join(lines, "\n"), w, h, false)
}

// profilesBox lists the profiles, two lines each (name, then plan) where
// they all fit, else one line each with the selected one's plan under the
// list, so a short terminal still shows most of them; where no line is
// left under the list, the plan comes back as unsaid for the caller to
// show. The filter bar shows
// only while a filter is typed; an applied one is named in the title.
func (p *picker) profilesBox(w, h int) (framed, unsaid string) {
	inner := h - 2
	p.list.SetShowFilter(p.filtering())
	shown := len(p.list.VisibleItems())
	if p.list.ShowFilter() {
		inner--
	}
	compact := 2*shown > inner
	if compact != !p.delegate.ShowDescription {
		p.delegate.ShowDescription = !compact
		p.list.SetDelegate(p.delegate)
	}
	footer := ""
	listH := h - 2
	if item, ok := p.list.SelectedItem().(profileItem); ok && compact && listH > 2 {
		if shown < listH { // a line to spare under the list
			footer = "\n" + styleDim.Render("  "+item.Description())
			listH--
		} else {
			unsaid = item.Description()
		}
	}
	p.list.SetSize(w-2, listH)
	title := fmt.Sprintf("Profiles %d/%d", p.list.Index()+1, shown)
	if shown == 0 {
		title = "Profiles: none match"
	}
	if p.list.FilterState() == list.FilterApplied {
		title += fmt.Sprintf(" matching %q · esc shows all", p.list.FilterValue())
	}
	if p.focus == focusProfiles {
		title = "▸ " + title
	}
	return box(title, p.list.View()+footer, w, h, p.focus == focusProfiles), unsaid
}

func (p *picker) statusLine() string {
	switch {
	case p.err != "":
		return styleBad.Render(p.err)
	case len(p.picks) == 1:
		return styleWarn.Render("A/B: 1 target picked; pick another with space")
	case len(p.picks) > 1:
		var names []string
		for _, a := range p.abArms(p.selected()) {
			names = append(names, a.Name)
		}
		return styleGood.Render("A/B: "+strings.Join(names, " vs ")) + styleDim.Render(" · enter runs it interleaved")
	case len(p.problems) > 0:
		return styleWarn.Render(fmt.Sprintf("skipped %d user profile(s): %v", len(p.problems), p.problems[0]))
	}
	return styleDim.Render("enter starts the run · / filters profiles · space picks backends for an A/B")
}

func (p *picker) backendsBox(w, h int) string {
	var lines []string
	profile := p.selected()
	for i, k := range p.kinds {
		mark := "  "
		name := fmt.Sprintf("%-9s", k.Name)
		if i == p.backend {
			mark, name = styleSelected.Render("▸ "), styleSelected.Render(name)
		}
		tag := ""
		for n, pick := range p.picks {
			if pick.kind == i {
				tag += styleGood.Render(string(rune('A'+n))) + " "
			}
		}
		lines = append(lines, mark+name+" "+tag+p.backendStatus(i, profile))
	}
	return box(focusTitle("Backend", p.focus == focusBackends), strings.Join(lines, "\n"), w, h, p.focus == focusBackends)
}

// backendStatus is a backend's row: reachable or why not, server version,
// and whether the model the run would use is there.
func (p *picker) backendStatus(i int, profile *profiles.Profile) string {
	r := p.probes[i]
	if r == nil {
		return styleDim.Render("probing…")
	}
	where := location(r.Kind, r.Info.URL)
	if r.Err != nil {
		return styleBad.Render("✗ "+where) + styleDim.Render(": "+r.Err.Error())
	}
	line := styleGood.Render("✓ "+where) + " " + orDash(r.Info.ServerVersion)
	model := p.modelFor(i, profile)
	switch {
	case model == "" && r.Kind.ModelOptional:
		line += styleDim.Render(" · built-in model")
	case model == "":
		line += styleWarn.Render(" · no model: type one below")
	case len(r.Info.Models) == 0:
		line += styleDim.Render(" · model " + model)
	case slices.Contains(r.Info.Models, model) || slices.Contains(r.Info.Models, model+":latest"):
		line += styleGood.Render(" · model " + model + " present")
	default:
		line += styleBad.Render(" · model " + model + " not found")
	}
	return line
}

func (p *picker) formBox(w, h int) string {
	var lines []string
	for i := range p.inputs {
		p.inputs[i].SetWidth(max(1, w-6-len(p.inputs[i].Prompt)))
		mark := "  "
		if pickerFocus(i)+focusModel == p.focus {
			mark = styleSelected.Render("▸ ")
		}
		lines = append(lines, mark+p.inputs[i].View())
	}
	return box(focusTitle("Run", p.focus >= focusModel), strings.Join(lines, "\n"), w, h, p.focus >= focusModel)
}

// ProbeReport is one backend's answer to a reachability probe.
type ProbeReport struct {
	Kind backends.Kind
	Info backends.Info
	Err  error
}

// ProbeTimeout bounds a picker or `tokentop backends` probe.
const ProbeTimeout = 3 * time.Second

// Probe asks one backend whether it is there and what it serves.
func Probe(ctx context.Context, kind backends.Kind, cfg backends.Config) ProbeReport {
	report := ProbeReport{Kind: kind, Info: backends.Info{URL: cfg.URL}}
	b, err := kind.Open(cfg)
	if err != nil {
		report.Err = err
		return report
	}
	// The built-in engine starts workers to answer: a probe must stop
	// them, or every show of the picker leaks a pool.
	if closer, ok := b.(io.Closer); ok {
		defer closer.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	info, err := b.Probe(ctx, "")
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %v", ProbeTimeout)
	}
	report.Info, report.Err = info, err
	if report.Info.URL == "" {
		report.Info.URL = cfg.URL
	}
	return report
}
