package profiles

import (
	"strings"
	"testing"
)

const engineGrid = `name = "engine-grid"
profile = "quick"
backend = "builtin"
repetitions = 2
[axes]
model = ["stories260K", "stories15M-synthetic"]
dtype = ["f32", "q8_0"]
threads = [1, 2]
max_tokens = [16, 48]
[[exclude]]
model = "stories260K"
threads = 2
`

func TestGridExpandsItsAxesLessTheExcluded(t *testing.T) {
	g, err := ParseGrid("g.toml", []byte(engineGrid))
	if err != nil {
		t.Fatal(err)
	}
	if names := strings.Join(g.AxisNames(), ","); names != "model,dtype,threads,max_tokens" || g.Order != GridShuffle || g.Repetitions != 2 {
		t.Fatalf("axes %s, order %s, repetitions %d", names, g.Order, g.Repetitions)
	}
	cells := g.Cells()
	if len(cells) != 16-4 {
		t.Fatalf("%d cells; want 16 less the 4 of stories260K at 2 threads", len(cells))
	}
	if first, last := g.Label(cells[0]), g.Label(cells[len(cells)-1]); first != "stories260K · f32 · 1 thread · 16 tokens" || last != "stories15M-synthetic · q8_0 · 2 threads · 48 tokens" {
		t.Errorf("first %q, last %q", first, last)
	}
	for _, c := range cells {
		if m, _ := g.Value(c, "model"); m == "stories260K" && c[2] == "2" {
			t.Errorf("excluded cell %v expanded", c)
		}
	}
}

func TestGridErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"unknown axis", "[axes]\nmodels = [\"a\"]\n", "g.toml:2: axes.models: not an axis"},
		{"bad threads", "[axes]\nthreads = [1, 0]\n", "g.toml:2: axes.threads: value 2: 0 is not a whole number of threads"},
		{"bad dtype", "[axes]\ndtype = [\"f16\"]\n", "axes.dtype: value 1: f16 is not f32 or q8_0"},
		{"twice", "[axes]\nmodel = [\"a\", \"a\"]\n", "axes.model: a is listed twice"},
		{"name", "name = \"../up\"\n[axes]\nmodel = [\"a\"]\n", "g.toml:1: name: \"../up\" is not a grid name (it names the grid's folder); use up to 64 letters"},
		{"dots", "name = \"..\"\n[axes]\nmodel = [\"a\"]\n", "g.toml:1: name: \"..\" is not a grid name"},
		{"no axes", "name = \"x\"\n", "g.toml: axes: a grid needs an [axes] table"},
		{"budget", "budget = \"an hour\"\n[axes]\nmodel = [\"a\"]\n", "g.toml:1: budget: \"an hour\" is not a positive duration"},
		{"order", "order = \"random\"\n[axes]\nmodel = [\"a\"]\n", "g.toml:1: order: \"random\" is not an order"},
		{"unknown key", "repeats = 2\n[axes]\nmodel = [\"a\"]\n", "g.toml:1: repeats: unknown key"},
		{"exclude unknown axis", "[axes]\nmodel = [\"a\"]\n[[exclude]]\ndtype = \"f32\"\n", "g.toml:4: exclude.dtype: not an axis of this grid"},
		{"exclude unknown value", "[axes]\nmodel = [\"a\"]\n[[exclude]]\nmodel = \"b\"\n", "exclude.model: b is not one of the axis's values (a)"},
		{"too many", "[axes]\nthreads = [1,2,3,4,5,6,7,8,9,10]\nmax_tokens = [1,2,3,4,5,6,7,8,9,10]\nconcurrency = [1,2,3,4,5,6,7,8,9,10]\nmodel = [\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\"]\n", "a grid runs at most that many cells"},
		{"syntax", "[axes\n", "g.toml:2: expected"},
		{"bad length", "[axes]\ninput_tokens = [512, \"lots\"]\n", "axes.input_tokens: value 2: lots is not a length in tokens"},
		{"two prompt axes", "[axes]\nprompt_words = [8]\ninput_tokens = [64]\n", "g.toml:3: axes.input_tokens: prompt_words and input_tokens both make the prompts; vary one of them"},
	}
	for _, c := range cases {
		_, err := ParseGrid("g.toml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func FuzzParseGrid(f *testing.F) {
	f.Add(engineGrid)
	f.Add("[axes]\nthreads = [1, 2]\n[[exclude]]\nthreads = 1\n")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseGrid("f.toml", []byte(src))
		if err != nil {
			return
		}
		for _, c := range g.Cells() {
			if len(c) != len(g.Axes) {
				t.Fatalf("cell %v for axes %v", c, g.AxisNames())
			}
			_ = g.Label(c)
		}
	})
}

func TestBuiltinGridsParse(t *testing.T) {
	for _, name := range BuiltinGrids() {
		g, err := FindGrid(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(g.Cells()) < 6 {
			t.Errorf("%s: %d cells", name, len(g.Cells()))
		}
	}
	if _, err := FindGrid("nope"); err == nil || !strings.Contains(err.Error(), "engine-grid") {
		t.Errorf("unknown grid: %v", err)
	}
}

// The workload axes take lengths in tokens, as numbers or distributions,
// and prompts files; their cells are labelled with their units.
func TestWorkloadAxes(t *testing.T) {
	g, err := ParseGrid("g.toml", []byte("[axes]\ninput_tokens = [64, \"32-256\"]\noutput_tokens = [1, \"mean=40,stddev=10,min=8,max=64\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := g.Cells()
	if len(cells) != 4 || g.Label(cells[0]) != "64 input tokens · 1 output token" || g.Label(cells[3]) != "32-256 input tokens · mean=40,stddev=10,min=8,max=64 output tokens" {
		t.Errorf("cells %v, labels %q %q", cells, g.Label(cells[0]), g.Label(cells[3]))
	}
	if _, err := ParseGrid("g.toml", []byte("[axes]\nprompts_file = [\"a.jsonl\", \"sharegpt.json\"]\n")); err != nil {
		t.Error(err)
	}
}
