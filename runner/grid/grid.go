// Package grid runs a matrix of sessions, the layer above the runner
// (DESIGN.md): it expands a grid file's axes into cells, orders the
// cells' repetitions so that drift spreads over all of them, runs each
// repetition as one session in the grid's folder, records every cell's
// state in the folder's grid.toml so that a second start resumes where
// the first stopped, and compares the cells (compare.go).
//
// A cell is found by its config hash (the plan's, runner.Plan.ConfigHash),
// not by a session's timestamped stem: the same grid file started again
// finds its cells however long ago they ran.
package grid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// ManifestName is the grid manifest's file name in the grid folder.
const ManifestName = "grid.toml"

// Matrix is a grid expanded: its cells, each with the plan it runs, and
// the folder its sessions go to.
type Matrix struct {
	Grid  *profiles.Grid
	Dir   string
	Cells []Cell
	// State is the grid manifest: what ran, read back on a resume.
	State   Manifest
	counted map[string]int // see countedIn
}

// Cell is one combination of the axes' values and how to run it.
type Cell struct {
	ID      string // c01, c02, … in the grid's expansion order
	Values  profiles.Cell
	Label   string
	profile *profiles.Profile
	opts    runner.Options
	Hash    string // the plan's config hash at its full trial count
	Trials  int    // timed trials per arm per repetition
	// ConvergeTol is the plan's convergence tolerance, for front ends.
	ConvergeTol float64
}

// Manifest is grid.toml: the grid's settings and each cell's runs.
type Manifest struct {
	Name        string      `toml:"name"`
	Source      string      `toml:"source"`
	ToolVersion string      `toml:"tool_version"`
	CreatedAt   time.Time   `toml:"created_at"`
	Order       string      `toml:"order"` // shuffle (seeded per pass) or blocked
	Seed        int64       `toml:"seed"`
	Repetitions int         `toml:"repetitions"`
	Axes        []string    `toml:"axes"`
	Cells       []CellState `toml:"cells"`
}

// CellState is one cell in the manifest.
type CellState struct {
	ID         string   `toml:"id"`
	Label      string   `toml:"label"`
	Values     []string `toml:"values"` // in the axes' order
	ConfigHash string   `toml:"config_hash"`
	Runs       []Run    `toml:"runs"`
}

// RunKilled marks a run whose grid process ended before it did; its
// session keeps every trial it finished, and the rest run on a resume.
const RunKilled = "killed"

// Run is one session of a cell: a repetition, or the rest of one that
// was cut short.
type Run struct {
	Repetition int    `toml:"repetition"` // from 1
	Session    string `toml:"session"`    // the manifest's file name in the grid folder
	Status     string `toml:"status"`     // the session's (running, complete, partial, failed), or killed
	Error      string `toml:"error,omitempty"`
}

// Expand resolves every cell of g against base (the command line's
// options; its OutDir is the parent of the grid's folder) and reads the
// folder's manifest when an earlier start left one.
func Expand(g *profiles.Grid, base runner.Options) (*Matrix, error) {
	outDir := base.OutDir
	if outDir == "" {
		var err error
		if outDir, err = runner.DefaultOutDir(); err != nil {
			return nil, err
		}
	}
	m := &Matrix{Grid: g, Dir: filepath.Join(outDir, "grid-"+g.Name)}
	found := map[string]*profiles.Profile{}
	for i, values := range g.Cells() {
		c := Cell{ID: fmt.Sprintf("c%02d", i+1), Values: values, Label: g.Label(values)}
		name := g.Profile
		if v, ok := g.Value(values, "profile"); ok {
			name = v
		}
		if found[name] == nil {
			where := name
			if profiles.IsProfilePath(name) {
				path, err := profiles.BesideFile(g.Source, name, "--profile on a run of its own")
				if err != nil {
					return nil, fmt.Errorf("grid %s: profile: %w", g.Source, err)
				}
				where = path
			}
			p, err := profiles.Find(where)
			if err != nil {
				return nil, fmt.Errorf("grid %s: profile %s: %w", g.Source, name, err)
			}
			found[name] = p
		}
		c.profile = found[name]
		if v, ok := g.Value(values, "prompt_words"); ok {
			n, _ := strconv.Atoi(v) // checked by profiles.ParseGrid
			p := *c.profile
			p.Prompts, p.Dataset, p.PromptsFile, p.PromptFile = []string{profiles.PromptOfWords(n)}, nil, "", ""
			c.profile = &p
		}
		opts, err := cellOptions(g, values, base, m.Dir)
		if err != nil {
			return nil, fmt.Errorf("grid %s: cell %s (%s): %w", g.Source, c.ID, c.Label, err)
		}
		c.opts = opts
		plan, err := runner.Resolve(c.profile, opts)
		if err != nil {
			return nil, fmt.Errorf("grid %s: cell %s (%s): %w", g.Source, c.ID, c.Label, err)
		}
		c.Hash, c.Trials, c.ConvergeTol = plan.ConfigHash(), plan.Profile.Trials, plan.ConvergeTol
		m.Cells = append(m.Cells, c)
	}
	return m, m.readState()
}

// cellOptions are base with the grid's settings and the cell's values.
func cellOptions(g *profiles.Grid, values profiles.Cell, base runner.Options, dir string) (runner.Options, error) {
	opts := base
	opts.OutDir = dir
	set := func(field *string, v string) {
		if v != "" {
			*field = v
		}
	}
	set(&opts.Backend, g.Backend)
	if g.URL != "" {
		opts.URL, opts.URLFrom = g.URL, g.Source // a file's, not the user's: see runner.Options.URLFrom
	}
	set(&opts.Model, g.Model)
	if g.Trials > 0 {
		opts.Trials = g.Trials
	}
	if g.Warmup != nil {
		opts.Warmup = *g.Warmup
	}
	for i, axis := range g.Axes {
		v := values[i]
		number := func() int { n, _ := strconv.Atoi(v); return n } // checked by profiles.ParseGrid
		switch axis.Name {
		case "model":
			opts.Model = v
		case "dtype":
			opts.DType = v
		case "threads":
			opts.Threads = number()
		case "max_tokens":
			opts.MaxTokens = number()
		case "concurrency":
			opts.Concurrency = profiles.Levels{number()}
		case "backend":
			opts.Backend = v
		case "url":
			opts.URL, opts.URLFrom = v, g.Source
		case "input_tokens", "output_tokens":
			length, _ := profiles.ParseTokenLength(v) // checked by profiles.ParseGrid
			if axis.Name == "input_tokens" {
				opts.InputTokens = &length
			} else {
				opts.OutputTokens = &length
			}
		case "prompts_file":
			path, err := profiles.BesideFile(g.Source, v, "--prompts-file on a run of its own")
			if err != nil {
				return opts, fmt.Errorf("axis prompts_file: %w", err)
			}
			opts.PromptsFile = path
		case "profile", "prompt_words": // the cell's profile, made by the caller
		default:
			return opts, fmt.Errorf("axis %s is not one a grid varies", axis.Name)
		}
	}
	return opts, nil
}

// decodeManifest reads a grid manifest's data. Its strings are shown and
// printed, and its session names joined to the folder: both are outside
// text, cleaned, and a session name is only ever a file in the folder.
func decodeManifest(path string, data []byte) (Manifest, error) {
	var m Manifest
	if _, err := toml.Decode(string(data), &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", path, err)
	}
	untrusted.CleanAll(&m)
	for i := range m.Cells {
		for j := range m.Cells[i].Runs {
			if name := &m.Cells[i].Runs[j].Session; *name != "" {
				*name = filepath.Base(*name)
			}
		}
	}
	return m, nil
}

// readState reads the folder's grid manifest, or starts a new one.
func (m *Matrix) readState() error {
	path := filepath.Join(m.Dir, ManifestName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		m.State = Manifest{Name: m.Grid.Name, Source: m.Grid.Source, ToolVersion: runner.ToolVersion(), CreatedAt: time.Now().UTC(),
			Order: m.Grid.Order, Seed: m.Grid.Seed, Repetitions: m.Grid.Repetitions, Axes: m.Grid.AxisNames()}
	} else if err != nil {
		return err
	} else if m.State, err = decodeManifest(path, data); err != nil {
		return fmt.Errorf("%w (move it away to start the grid afresh)", err)
	}
	// Cells by config hash: a cell whose settings changed is a new cell.
	var cells []CellState
	for _, c := range m.Cells {
		state := CellState{ID: c.ID, Label: c.Label, Values: c.Values, ConfigHash: c.Hash}
		if i := slices.IndexFunc(m.State.Cells, func(s CellState) bool { return s.ConfigHash == c.Hash }); i >= 0 {
			state.Runs = m.State.Cells[i].Runs
		}
		for k := range state.Runs {
			if state.Runs[k].Status == session.StatusRunning {
				state.Runs[k].Status = RunKilled // no grid runs now: the one that started it was killed
			}
		}
		cells = append(cells, state)
	}
	m.State.Cells, m.State.Repetitions, m.State.Order, m.State.Seed = cells, m.Grid.Repetitions, m.Grid.Order, m.Grid.Seed
	return nil
}

func (m *Matrix) save() error {
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return err
	}
	data, err := toml.Marshal(m.State)
	if err != nil {
		return err
	}
	return session.WriteAtomic(filepath.Join(m.Dir, ManifestName), data)
}

// Slot is one repetition of one cell, a place in the run order.
type Slot struct{ Cell, Repetition int }

// Order is the grid's run order: a pass over every cell per repetition,
// so that a cell's repetitions spread over the whole run, each pass in
// a seeded order of its own (shuffle) or the file's (blocked).
func (m *Matrix) Order() []Slot {
	var slots []Slot
	for rep := 1; rep <= m.Grid.Repetitions; rep++ {
		order := make([]int, len(m.Cells))
		for i := range order {
			order[i] = i
		}
		if m.Grid.Order == profiles.GridShuffle {
			rng := rand.New(rand.NewPCG(uint64(m.Grid.Seed), uint64(rep)))
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for _, c := range order {
			slots = append(slots, Slot{Cell: c, Repetition: rep})
		}
	}
	return slots
}

// Left is how many timed trials per arm the slot still needs: its
// cell's count less what its sessions so far counted (the fewest of any
// arm: a killed session leaves arms a trial apart). Sessions that cannot
// be read count nothing.
func (m *Matrix) Left(s Slot) int {
	left := m.Cells[s.Cell].Trials
	for _, run := range m.State.Cells[s.Cell].Runs {
		if run.Repetition == s.Repetition && run.Session != "" {
			left -= m.countedIn(run.Session)
		}
	}
	return max(0, left)
}

// countedIn is the fewest counted trials of any arm of a session of the
// grid's folder, read once: the slots are counted before a start and
// again as it runs, and a session that ended does not change.
func (m *Matrix) countedIn(name string) int {
	if n, ok := m.counted[name]; ok {
		return n
	}
	fewest := 0
	if ses, err := session.Load(filepath.Join(m.Dir, name)); err == nil {
		fewest = -1
		for _, recs := range session.ByArm(ses.Records) {
			if n := len(session.Counted(recs)); fewest < 0 || n < fewest {
				fewest = n
			}
		}
		fewest = max(0, fewest)
	}
	if m.counted == nil {
		m.counted = map[string]int{}
	}
	m.counted[name] = fewest
	return fewest
}

// Pending counts the slots with trials left.
func (m *Matrix) Pending() int {
	n := 0
	for _, s := range m.Order() {
		if m.Left(s) > 0 {
			n++
		}
	}
	return n
}

// Event is what Run reports: a runner event of the slot now running, or
// (Event nil) that the slot could not run, and why.
type Event struct {
	Slot   Slot
	Cell   *Cell
	Left   int // trials this session runs
	Event  runner.Event
	Failed error
}

// ErrBudgetSpent ends a grid whose time budget ran out before its slots.
var ErrBudgetSpent = errors.New("the grid's time budget is spent")

// ErrSessionsFailed ends a grid some of whose sessions failed (their
// server lost, or nothing measured) or could not run (their target never
// answered): the others ran, and the comparison ranks what they measured.
var ErrSessionsFailed = errors.New("sessions of the grid failed or could not run")

// Run runs every slot that has trials left, in order, saving the grid
// manifest as each session starts and ends. A cell whose target cannot
// be reached is marked failed, its later slots skipped, and the grid
// goes on; so does it past a session whose server was lost. A canceled
// ctx stops after the session in flight has saved what it measured; past
// the grid's time budget no session starts (ErrBudgetSpent). When
// sessions failed or could not run, Run says how many (ErrSessionsFailed).
func (m *Matrix) Run(ctx context.Context, onEvent func(Event)) error {
	if err := m.save(); err != nil {
		return err
	}
	start := time.Now()
	down := map[int]bool{} // cells whose target did not answer in this run: their later slots are skipped
	var failures []string
	tried := 0
	for _, slot := range m.Order() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		left := m.Left(slot)
		if left == 0 {
			continue
		}
		tried++
		name := fmt.Sprintf("%s repetition %d", m.Cells[slot.Cell].ID, slot.Repetition)
		if down[slot.Cell] {
			failures = append(failures, name+": not run (its target did not answer before)")
			continue
		}
		if b := m.Grid.TimeBudget; b > 0 && time.Since(start) >= b {
			return fmt.Errorf("%w (%v)", ErrBudgetSpent, b)
		}
		started, failure, err := m.runSlot(ctx, slot, left, onEvent)
		if err != nil {
			return err
		}
		down[slot.Cell] = !started
		if failure != "" && ctx.Err() == nil {
			failures = append(failures, name+": "+failure)
		}
	}
	if len(failures) > 0 {
		const listed = 3
		more := ""
		if len(failures) > listed {
			more = fmt.Sprintf("; and %d more (grid.toml lists every run)", len(failures)-listed)
		}
		return fmt.Errorf("%w: %d of the %d sessions this start had to run: %s%s", ErrSessionsFailed, len(failures), tried,
			strings.Join(failures[:min(len(failures), listed)], "; "), more)
	}
	return nil
}

// runSlot runs one session of slot's cell; started is false when its
// target never answered (the slot is marked failed), and failure says
// what went wrong with a session that could not run or failed ("" when
// it measured what it could).
func (m *Matrix) runSlot(ctx context.Context, slot Slot, left int, onEvent func(Event)) (started bool, failure string, err error) {
	cell := &m.Cells[slot.Cell]
	state := &m.State.Cells[slot.Cell]
	opts := cell.opts
	opts.Trials = left
	plan, bs, err := runner.Prepare(cell.profile, opts)
	if err != nil {
		state.Runs = append(state.Runs, Run{Repetition: slot.Repetition, Status: session.StatusFailed, Error: err.Error()})
		onEvent(Event{Slot: slot, Cell: cell, Left: left, Failed: err})
		return false, "could not run: " + err.Error(), m.save()
	}
	events := make(chan runner.Event, 64)
	done := make(chan struct{})
	run := -1 // its index in state.Runs once Started named the session
	var saveErr error
	go func() {
		defer close(done)
		for ev := range events {
			if st, ok := ev.(runner.Started); ok {
				state.Runs = append(state.Runs, Run{Repetition: slot.Repetition, Session: filepath.Base(st.Manifest), Status: session.StatusRunning})
				run = len(state.Runs) - 1
				saveErr = errors.Join(saveErr, m.save())
			}
			onEvent(Event{Slot: slot, Cell: cell, Left: left, Event: ev})
		}
	}()
	status, runErr := runner.Run(ctx, plan, bs, events) // closes events
	<-done
	switch {
	case run < 0: // it never started: the target did not answer
		state.Runs = append(state.Runs, Run{Repetition: slot.Repetition, Status: session.StatusFailed, Error: fmt.Sprint(runErr)})
		onEvent(Event{Slot: slot, Cell: cell, Left: left, Failed: runErr})
		failure = "could not run: " + fmt.Sprint(runErr)
	default:
		state.Runs[run].Status = status
		if runErr != nil {
			state.Runs[run].Error = runErr.Error()
			failure = status + ": " + runErr.Error()
		} else if status == session.StatusFailed {
			failure = "failed: no timed trial succeeded"
		}
	}
	return run >= 0, failure, errors.Join(saveErr, m.save())
}
