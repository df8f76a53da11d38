package profiles

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Grid is a matrix file: one plan (a profile on a backend) run in every
// combination of its axes' values, each combination a cell and each of
// a cell's repetitions a session. This file holds its schema and
// validation; expanding, ordering and running the cells is the grid
// layer's, above the runner.
type Grid struct {
	Name        string `toml:"name"`
	Description string `toml:"description"`
	// Profile is the plan each cell runs (a built-in name or a file);
	// an axis named profile varies it.
	Profile string `toml:"profile"`
	Backend string `toml:"backend"`
	URL     string `toml:"url"`
	Model   string `toml:"model"`
	// Trials and Warmup replace the profile's per cell (0 and nil keep
	// them); Repetitions runs each cell that many times, spread over the
	// grid's run.
	Trials      int  `toml:"trials"`
	Warmup      *int `toml:"warmup"`
	Repetitions int  `toml:"repetitions"`
	// Order is "shuffle" (each pass over the cells in a seeded order of
	// its own) or "blocked" (the file's order every pass).
	Order string `toml:"order"`
	Seed  int64  `toml:"seed"`
	// Budget bounds the grid's wall time ("2h"): no session starts after
	// it is spent, and the next start goes on where this one stopped.
	Budget     string        `toml:"budget"`
	TimeBudget time.Duration `toml:"-"`
	// Axes are the varied settings, in the file's order; each value is
	// kept as text and checked by its axis's rule.
	Axes    []Axis           `toml:"-"`
	Exclude []map[string]any `toml:"exclude"`

	RawAxes map[string][]any `toml:"axes"`
	Source  string           `toml:"-"`
}

// Axis is one varied setting and its values.
type Axis struct {
	Name   string
	Values []string
}

// GridAxes are the settings a grid may vary, each with what its values
// must be.
var GridAxes = []struct{ Name, Want string }{
	{"model", "a model name"},
	{"dtype", "f32 or q8_0 (the built-in engine's weights)"},
	{"threads", "a whole number of threads, 1 or more"},
	{"max_tokens", fmt.Sprintf("a whole number of tokens, 1 to %d", maxMaxTokens)},
	{"concurrency", "a whole number of streams, 1 or more"},
	{"prompt_words", fmt.Sprintf("a whole number of words, 1 to %d (one prompt of that length)", MaxPromptWords)},
	{"input_tokens", "a length in tokens: 512, \"64-1024\" (uniform) or \"mean=512,stddev=128,min=64,max=1024\""},
	{"output_tokens", "a length in tokens, as input_tokens"},
	{"prompts_file", "a prompts file (text, JSONL or ShareGPT), relative to the grid file's folder"},
	{"backend", "a backend kind"},
	{"url", "a server address"},
	{"profile", "a profile name or file"},
}

// Grid orders.
const (
	GridShuffle = "shuffle"
	GridBlocked = "blocked"
)

//go:embed grids/*.toml
var gridFS embed.FS

// BuiltinGrids are the example grids shipped in the binary, by name.
func BuiltinGrids() []string {
	entries, err := gridFS.ReadDir("grids")
	if err != nil {
		panic(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return names
}

// FindGrid reads a grid file, or a built-in grid by name.
func FindGrid(arg string) (*Grid, error) {
	if strings.HasSuffix(arg, ".toml") || strings.ContainsRune(arg, os.PathSeparator) {
		return LoadGrid(arg)
	}
	data, err := gridFS.ReadFile("grids/" + arg + ".toml")
	if err != nil {
		return nil, fmt.Errorf("no grid named %q; built-in grids: %s (or give a path to a .toml file)", arg, strings.Join(BuiltinGrids(), ", "))
	}
	g, err := ParseGrid(arg+".toml", data)
	if err != nil {
		return nil, err
	}
	g.Source = "builtin"
	return g, nil
}

// LoadGrid reads and checks a grid file.
func LoadGrid(path string) (*Grid, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grid %s: %w", path, err)
	}
	return ParseGrid(path, data)
}

// ParseGrid decodes and checks a grid file; errors name the file, the
// line where it can be found, and the key.
func ParseGrid(file string, data []byte) (*Grid, error) {
	g := &Grid{Source: file}
	keys := scanKeyLines(data)
	md, err := decode(file, data, g)
	if err != nil {
		return nil, err
	}
	var errs []error
	bad := func(key toml.Key, index int, format string, args ...any) {
		errs = append(errs, &Error{File: file, Line: keys.find(key, index), Key: key.String(), Msg: fmt.Sprintf(format, args...)})
	}
	for _, k := range md.Undecoded() {
		bad(k, -1, "unknown key; allowed keys are name, description, profile, backend, url, model, trials, warmup, repetitions, order, seed, budget, [axes], [[exclude]]")
	}
	if g.Name == "" {
		g.Name = nameFromFile(file, "grid")
	} else if !namePattern.MatchString(g.Name) {
		bad(toml.Key{"name"}, -1, "%q is not a grid name (it names the grid's folder); %s", g.Name, nameRule)
	}
	if g.Profile == "" {
		g.Profile = "quick"
	}
	switch {
	case g.Repetitions == 0:
		g.Repetitions = 1
	case g.Repetitions < 0:
		bad(toml.Key{"repetitions"}, -1, "%d is negative; use 1 or more", g.Repetitions)
	}
	if g.Trials < 0 {
		bad(toml.Key{"trials"}, -1, "%d is negative; use 1 or more timed trials per cell (0: the profile's)", g.Trials)
	}
	if g.Warmup != nil && *g.Warmup < 0 {
		bad(toml.Key{"warmup"}, -1, "%d is negative; use 0 or more", *g.Warmup)
	}
	if g.Budget != "" {
		d, err := time.ParseDuration(g.Budget)
		if err != nil || d <= 0 {
			bad(toml.Key{"budget"}, -1, "%q is not a positive duration; write it like \"30m\" or \"2h\"", g.Budget)
		}
		g.TimeBudget = d
	}
	switch g.Order {
	case "":
		g.Order = GridShuffle
	case GridShuffle, GridBlocked:
	default:
		bad(toml.Key{"order"}, -1, "%q is not an order; use %q (a seeded order per pass) or %q (the file's order)", g.Order, GridShuffle, GridBlocked)
	}
	// The axes in the file's order: a map has none.
	for _, k := range md.Keys() {
		if len(k) != 2 || k[0] != "axes" {
			continue
		}
		name := k[1]
		if !slices.ContainsFunc(GridAxes, func(a struct{ Name, Want string }) bool { return a.Name == name }) {
			bad(k, -1, "not an axis; a grid varies %s", gridAxisNames())
			continue
		}
		axis := Axis{Name: name}
		for i, v := range g.RawAxes[name] {
			text, err := axisValue(name, v)
			if err != nil {
				bad(k, -1, "value %d: %v", i+1, err)
				continue
			}
			if slices.Contains(axis.Values, text) {
				bad(k, -1, "%s is listed twice", text)
			}
			axis.Values = append(axis.Values, text)
		}
		if len(g.RawAxes[name]) == 0 {
			bad(k, -1, "give it a list of one or more values, e.g. %s = [...]", name)
		}
		g.Axes = append(g.Axes, axis)
	}
	// Each of these makes the cell's prompts: two would fight over them.
	var promptAxes []string
	for _, a := range g.Axes {
		if slices.Contains([]string{"prompt_words", "input_tokens", "prompts_file"}, a.Name) {
			promptAxes = append(promptAxes, a.Name)
		}
	}
	if len(promptAxes) > 1 {
		bad(toml.Key{"axes", promptAxes[1]}, -1, "%s and %s both make the prompts; vary one of them", promptAxes[0], promptAxes[1])
	}
	if n := g.combinations(); n > MaxGridCells {
		errs = append(errs, &Error{File: file, Key: "axes", Msg: fmt.Sprintf("its axes make more than %d combinations; a grid runs at most that many cells, so split it", MaxGridCells)})
	}
	if len(g.RawAxes) == 0 {
		errs = append(errs, &Error{File: file, Key: "axes", Msg: "a grid needs an [axes] table with at least one axis, e.g. model = [\"stories260K\", \"stories15M-synthetic\"]"})
	}
	for i, rule := range g.Exclude {
		if len(rule) == 0 {
			bad(toml.Key{"exclude"}, i, "an exclude rule names one or more axes and values")
		}
		for name, v := range rule {
			axis, ok := g.axis(name)
			text, err := axisValue(name, v)
			switch {
			case !ok:
				bad(toml.Key{"exclude", name}, i, "not an axis of this grid; its axes are %s", strings.Join(g.AxisNames(), ", "))
			case err != nil:
				bad(toml.Key{"exclude", name}, i, "%v", err)
			case !slices.Contains(axis.Values, text):
				bad(toml.Key{"exclude", name}, i, "%s is not one of the axis's values (%s)", text, strings.Join(axis.Values, ", "))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// MaxPromptWords bounds a prompt_words axis: a long prompt, well past
// the small models' context.
const MaxPromptWords = 16384

// promptText is what a prompt_words prompt repeats: plain words a small
// story model reads as text.
const promptText = "Once upon a time there was a little girl named Lily who loved to play outside in the sun with her dog and her friends"

// PromptOfWords is a prompt of n words, the same for every cell and run.
func PromptOfWords(n int) string {
	words := strings.Fields(promptText)
	out := make([]string, n)
	for i := range out {
		out[i] = words[i%len(words)]
	}
	return strings.Join(out, " ")
}

// MaxGridCells bounds a grid: far more cells than any run could finish,
// and few enough to expand at once.
const MaxGridCells = 10000

// combinations counts the axes' combinations, stopping past
// MaxGridCells.
func (g *Grid) combinations() int {
	n := 1
	for _, a := range g.Axes {
		if n *= max(1, len(a.Values)); n > MaxGridCells {
			break
		}
	}
	return n
}

func gridAxisNames() string {
	names := make([]string, len(GridAxes))
	for i, a := range GridAxes {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// AxisNames are the grid's axes in its file's order.
func (g *Grid) AxisNames() []string {
	names := make([]string, len(g.Axes))
	for i, a := range g.Axes {
		names[i] = a.Name
	}
	return names
}

// axisIndex is where axis name stands among the grid's axes, -1 if not.
func (g *Grid) axisIndex(name string) int {
	return slices.IndexFunc(g.Axes, func(a Axis) bool { return a.Name == name })
}

func (g *Grid) axis(name string) (Axis, bool) {
	if i := g.axisIndex(name); i >= 0 {
		return g.Axes[i], true
	}
	return Axis{}, false
}

// axisValue checks one value of an axis and writes it as text.
func axisValue(axis string, v any) (string, error) {
	var want string
	for _, a := range GridAxes {
		if a.Name == axis {
			want = a.Want
		}
	}
	switch axis {
	case "threads", "max_tokens", "concurrency", "prompt_words":
		n, ok := v.(int64)
		limit := int64(1 << 20)
		switch axis {
		case "max_tokens":
			limit = maxMaxTokens
		case "prompt_words":
			limit = MaxPromptWords
		}
		if !ok || n < 1 || n > limit {
			return "", fmt.Errorf("%v is not %s", v, want)
		}
		return strconv.FormatInt(n, 10), nil
	case "dtype":
		if s, ok := v.(string); ok && (s == "f32" || s == "q8_0") {
			return s, nil
		}
		return "", fmt.Errorf("%v is not %s", v, want)
	case "input_tokens", "output_tokens":
		text := fmt.Sprint(v)
		l, err := ParseTokenLength(text)
		most := map[string]int{"input_tokens": MaxInputTokens, "output_tokens": MaxOutputTokens}[axis]
		if err != nil || !l.Set() || l.Problem(most) != "" {
			return "", fmt.Errorf("%v is not %s", v, want)
		}
		return text, nil
	}
	s, ok := v.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%v is not %s", v, want)
	}
	return s, nil
}

// Cell is one combination of the axes' values, in the axes' order.
type Cell []string

// Cells expands the axes into every combination the exclude rules
// leave, the last axis varying fastest.
func (g *Grid) Cells() []Cell {
	cells := []Cell{{}}
	for _, a := range g.Axes {
		var next []Cell
		for _, c := range cells {
			for _, v := range a.Values {
				next = append(next, append(slices.Clip(c), v))
			}
		}
		cells = next
	}
	return slices.DeleteFunc(cells, g.excluded)
}

func (g *Grid) excluded(c Cell) bool {
	for _, rule := range g.Exclude {
		matches := true
		for name, v := range rule {
			text, _ := axisValue(name, v)
			value, ok := g.Value(c, name)
			matches = matches && ok && value == text
		}
		if matches {
			return true
		}
	}
	return false
}

// Value is the cell's value of axis name, and whether the grid has it.
func (g *Grid) Value(c Cell, name string) (string, bool) {
	if i := g.axisIndex(name); i >= 0 {
		return c[i], true
	}
	return "", false
}

// Label names a cell by its values: "stories260K · q8_0 · 2 threads".
func (g *Grid) Label(c Cell) string {
	parts := make([]string, len(c))
	for i, v := range c {
		unit := map[string]string{"threads": "thread", "max_tokens": "token", "concurrency": "stream", "prompt_words": "prompt word",
			"input_tokens": "input token", "output_tokens": "output token"}[g.Axes[i].Name]
		switch {
		case unit == "":
			parts[i] = v
		case v == "1":
			parts[i] = v + " " + unit
		default:
			parts[i] = v + " " + unit + "s"
		}
	}
	return strings.Join(parts, " · ")
}
